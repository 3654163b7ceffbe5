"""What a saved notebook keeps of its widgets, so that any save reopens showing something real.

JupyterLab saves a widget output as a *view* that points to a widget model, and the models
themselves in ``metadata.widgets`` (only when its ``saveState`` setting is on: see
``lab_settings.py``). The two go apart in an ordinary day: open a notebook, run a few cells
(not the widget's), save -- by hand or by autosave -- and the saved state holds only the models
of the new kernel, while the widget's output still points to its old model. The notebook then
reopens as "Error displaying widget: model not found", and the PNG snapshot in the same output
(``Panel``) is not shown either, because JupyterLab renders the view, not the picture. (Measured
in JupyterLab 4 with Chromium: notebook 05 went from 10 models to 0 after a partial run + save.)

``pre_save`` is a Jupyter server *pre-save hook* that fixes the file on its way to disk:

1. a widget view whose model is not in the saved state is dropped from its output, so the
   output's ``image/png`` snapshot and its one-line ``text/plain`` show instead;
2. a ``Panel``'s restored-note (an HTML model marked ``agentlab-restored``, empty while the
   kernel runs) gets its text in the *saved* state: a widget rebuilt from the file without a
   kernel says, in red, that it is not connected and to run its cell.

This module is also a Jupyter server extension that registers the hook: a file in
``{sys.prefix}/etc/jupyter/jupyter_server_config.d/`` enables it (the wheel installs it;
``agentlab lab`` and ``python -m agentlab.widgets.lab_settings`` write it for an editable
install). Such files can only enable extensions -- a ``ContentsManager.pre_save_hook`` set in
one is ignored (measured) -- hence the extension. ``prune`` does the same to a notebook executed
by ``scripts/refresh_notebooks.py``. Nothing here imports Jupyter.
"""
from __future__ import annotations

from typing import Any

__all__ = ["pre_save", "prune", "EXTENSION", "RESTORED_CLASS", "RESTORED_NOTE", "WIDGET_STATE", "WIDGET_VIEW"]

#: The server extension's name (this module), as enabled in ``jupyter_server_config.d``.
EXTENSION = "agentlab.widgets.save_hook"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: The DOM class that marks a ``Panel``'s restored-note model.
RESTORED_CLASS = "agentlab-restored"
#: What that note says in a saved notebook (while the kernel runs, it is empty).
RESTORED_NOTE = ("<div style='color:#b71c1c;font-weight:bold'>&#9888; Restored from the saved "
                 "notebook, not connected to a kernel: the controls do nothing. Run this cell to "
                 "use the widget.</div>")


def _state(nb: dict) -> dict:
    widgets = (nb.get("metadata") or {}).get("widgets") or {}
    return (widgets.get(WIDGET_STATE) or {}).get("state") or {}


def prune(nb: dict) -> dict[str, int]:
    """Apply both fixes to a notebook dict in place; returns what was done (for logs/tests)."""
    state = _state(nb)
    dropped = 0
    for cell in nb.get("cells") or []:
        for out in cell.get("outputs") or []:
            data = out.get("data") or {}
            view = data.get(WIDGET_VIEW)
            if view is not None and view.get("model_id") not in state:
                del data[WIDGET_VIEW]
                dropped += 1
                data.setdefault("text/plain", "widget: run this cell to use it")
    noted = 0
    for model in state.values():
        st = model.get("state") or {}
        if model.get("model_name") == "HTMLModel" and RESTORED_CLASS in (st.get("_dom_classes")
                                                                        or ()):
            st["value"] = RESTORED_NOTE
            noted += 1
    return {"views_dropped": dropped, "notes": noted}


def pre_save(model: dict, path: str = "", contents_manager: Any = None, **_: Any) -> None:
    """The Jupyter server pre-save hook (``ContentsManager.pre_save_hook``): ``prune`` every
    notebook on its way to disk, manual saves and autosaves alike."""
    if model.get("type") == "notebook" and isinstance(model.get("content"), dict):
        done = prune(model["content"])
        if done["views_dropped"] and contents_manager is not None:
            contents_manager.log.info("agentlab: %s: %d widget view(s) without saved state "
                                      "dropped (their snapshots show)", path,
                                      done["views_dropped"])


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": EXTENSION}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register ``pre_save`` with the server's contents manager (every save goes through it)."""
    serverapp.contents_manager.register_pre_save_hook(pre_save)
    serverapp.log.info("agentlab: pre-save hook on (a widget output whose state a save lost "
                       "shows its snapshot)")

"""Execute notebooks in place and strip volatile metadata, ready to commit.

    python scripts/refresh_notebooks.py notebooks/01_llm_client.ipynb [...]
    python scripts/refresh_notebooks.py --all

Runs each notebook top to bottom in its own folder (as nbval does), keeps outputs and the
widget state (``metadata.widgets``, which nbclient stores: a trusted notebook rebuilds its
widgets from it when opened), drops timings and other metadata that change every run, then
regenerates the student copies of the exercises (and ``data/class/``, made from exercise 01).
Widget models that no output refers to (closed widgets, intermediate ones) are pruned from the
state. Cells tagged ``raises-exception`` may raise; any other error stops here.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbval.plugin import coalesce_streams

from agentlab.exercises.kernels import ipc_kernel_manager
from agentlab.widgets import save_hook

ROOT = Path(__file__).resolve().parents[1]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_REF = re.compile(r"IPY_MODEL_([0-9a-f]{32}|[\w-]+)")


def _refs(value) -> set[str]:
    """Model ids a widget state refers to (``"IPY_MODEL_<id>"`` anywhere inside it)."""
    return set(_REF.findall(str(value)))


def _shown(outputs) -> set[str]:
    """Model ids of the widget views in a list of outputs (cell outputs or an Output widget's)."""
    return {o["data"][WIDGET_VIEW]["model_id"] for o in outputs
            if isinstance(o, dict) and WIDGET_VIEW in o.get("data", {})}


def prune_widget_state(nb) -> None:
    """Keep only the widget models an output displays, and everything those refer to."""
    widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE)
    if not widgets:
        nb.metadata.pop("widgets", None)
        return
    state = widgets["state"]
    todo = set().union(*(_shown(c.get("outputs", [])) for c in nb.cells if c.cell_type == "code"))
    keep: set[str] = set()
    while todo:
        mid = todo.pop()
        if mid in keep or mid not in state:
            continue
        keep.add(mid)
        model = state[mid].get("state", {})
        todo |= _refs(model) | _shown(model.get("outputs", []))
    widgets["state"] = {k: v for k, v in state.items() if k in keep}
    if not widgets["state"]:
        nb.metadata.pop("widgets")


def clean(nb) -> None:
    widgets = nb.metadata.get("widgets")
    nb.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    if widgets:
        nb.metadata["widgets"] = widgets
        prune_widget_state(nb)
    save_hook.prune(nb)  # as a JupyterLab save does: restored panels say "run this cell"
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}
        cell.pop("id", None)
        if cell.get("outputs"):  # a progress bar's updates, saved as the line a viewer shows
            cell.outputs = coalesce_streams(cell.outputs)


def refresh(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    # store_widget_state=True is nbclient's default; said here because the notebooks need it
    client = NotebookClient(nb, timeout=600, kernel_name="python3", record_timing=False,
                            store_widget_state=True, kernel_manager_class=ipc_kernel_manager(),
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    clean(nb)
    nb.nbformat_minor = 4  # no cell ids: keeps diffs small and stable
    nbformat.write(nb, path)
    try:
        shown = path.relative_to(ROOT)
    except ValueError:
        shown = path
    print(f"executed {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--no-exercises", action="store_true",
                        help="do not regenerate the student copies of the exercises")
    args = parser.parse_args()
    paths = list(args.paths)
    if args.all:
        paths = sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")) + \
            sorted((ROOT / "notebooks" / "exercises" / "solutions").glob("*.ipynb"))
    for p in paths:
        refresh(p.resolve())
    if args.no_exercises:
        return 0
    from agentlab.exercises import example_class, generate
    return generate.main([]) or example_class.main([])  # the copies, then data/class/


if __name__ == "__main__":
    sys.exit(main())

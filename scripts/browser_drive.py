"""Two things ``check_notebooks_browser.py`` does to a notebook open in JupyterLab, as a student.

- ``drive_one_control``: with the kernel running (after Run All), change one control of the
  first widget that has one -- a dropdown to its next option, a slider one step right, else a
  button click -- and report whether the widget's output changed within ``wait_s``.
- ``partial_run_and_save``: the day-2 flow that used to erase widgets: open the notebook (a new
  kernel), run a few cells that are *not* widget cells, save, shut the kernel down. With
  JupyterLab's ``saveState`` on, the save writes only the new kernel's widget models; agentlab's
  pre-save hook (``agentlab/widgets/save_hook.py``) must then drop the views whose models are
  gone, so the outputs reopen as their PNG snapshots instead of "model not found".
"""
from __future__ import annotations

import time
from typing import Any

__all__ = ["drive_one_control", "partial_run_and_save", "wait_idle"]

_RUN_CELLS = """async (indices) => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  for (const i of indices) {
    panel.content.activeCellIndex = i;
    await app.commands.execute('notebook:run-cell');
  }
}"""
_BUSY = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const running = panel.content.widgets.filter(c => c.model.type === 'code' &&
      (c.promptNode && c.promptNode.textContent.includes('*'))).length;
  return {status: kernel ? kernel.status : 'none', running};
}"""
_SAVE = """async () => {
  const app = window.jupyterapp, panel = app.shell.currentWidget;
  await app.commands.execute('docmanager:save');
  return panel.context.model.dirty;
}"""
_NODE = ("([c, o]) => { const a = window.jupyterapp.shell.currentWidget.content"
         ".widgets[c].outputArea; return a && a.widgets[o] ? a.widgets[o].node : null; }")


def wait_idle(page: Any, timeout_s: float, quiet_s: float = 2.0) -> bool:
    """Wait until the kernel is idle and no cell is queued for ``quiet_s``; False on timeout."""
    deadline, idle_since = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        busy = page.evaluate(_BUSY)
        if busy["status"] == "idle" and not busy["running"]:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > quiet_s:
                return True
        else:
            idle_since = None
        time.sleep(0.5)
    return False


def _text(element: Any) -> str:
    return element.evaluate("n => n.innerText || ''")


def drive_one_control(page: Any, targets: list[tuple[int, int]], wait_s: float = 20.0) -> str:
    """Change one control of the first widget output (of ``targets``) that has one; returns
    ``"<what> -> output changed"`` / ``"... -> no change in N s"`` / ``"no control found"``."""
    for c, o in targets:
        element = page.evaluate_handle(_NODE, [c, o]).as_element()
        if element is None:
            continue
        element.scroll_into_view_if_needed()
        before = _text(element)
        select = element.query_selector("select")
        handle = element.query_selector(".noUi-handle, .ui-slider-handle")
        button = element.query_selector("button:not([disabled])")
        if select is not None:
            options = select.evaluate("s => Array.from(s.options).map(o => o.value)")
            current = select.evaluate("s => s.value")
            if len(options) < 2:
                continue
            nxt = options[(options.index(current) + 1) % len(options)]
            select.select_option(nxt)
            what = f"cell {c}: dropdown -> {nxt[:30]!r}"
        elif handle is not None:
            handle.focus()
            page.keyboard.press("ArrowRight")
            what = f"cell {c}: slider one step right"
        elif button is not None:
            label = (button.inner_text() or "").strip()[:30]
            button.click()
            what = f"cell {c}: clicked {label!r}"
        else:
            continue
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            time.sleep(0.5)
            if _text(element) != before:
                wait_idle(page, wait_s, quiet_s=1.0)
                return f"{what} -> output changed"
        return f"{what} -> no change in {wait_s:.0f} s"
    return "no control found"


def partial_run_and_save(page: Any, lab: Any, code_cells: list[int], widget_cells: set[int],
                         timeout_s: float, n: int = 3) -> str:
    """In the open notebook: run the first ``n`` code cells that are not widget cells, save,
    shut the kernel down. Returns a note on problems ("" when saved)."""
    chosen = [i for i in code_cells if i not in widget_cells][:n]
    page.evaluate(_RUN_CELLS, chosen)
    if not wait_idle(page, timeout_s):
        return f"the {len(chosen)} cells did not finish within {timeout_s:.0f} s"
    time.sleep(1.0)
    dirty = page.evaluate(_SAVE)
    time.sleep(1.0)
    lab.shutdown_kernels()
    return "not saved" if dirty else ""

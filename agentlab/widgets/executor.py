"""Widget for chapter 03 (``notebooks/03_tool_executor.ipynb``): a batch with one hung tool.

``hung_batch_explorer()`` is the widget: a timeout slider and an executor picker over a Gantt
chart of four real tool calls, one of which hangs. ``run_hung_batch()`` is what it runs, callable
directly so a notebook can print a deterministic result next to the widget.

Each tool logs when it really started and ended, so the chart shows both what the caller waited
for and what the abandoned thread went on doing after the caller stopped waiting.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import ipywidgets as w

from ..executor import ToolExecutor
from ..llm import ToolCall
from ..naive.executor import NaiveToolExecutor
from ..tools import ToolRegistry
from ..viz.executor import plot_call_gantt
from ..viz.states import STATE_LABELS, call_state
from .panel import Panel

__all__ = ["EXECUTORS", "BUTTON_LABELS", "run_hung_batch", "format_hung_batch", "hung_batch_explorer"]

#: What the picker offers: label -> (executor class, method name).
EXECUTORS = {"agentlab execute_parallel": (ToolExecutor, "execute_parallel"),
             "agentlab execute (serial)": (ToolExecutor, "execute"),
             "naive execute_parallel": (NaiveToolExecutor, "execute_parallel")}
#: The picker's button labels (same order): they differ in their first word, so a button
#: too narrow for its whole label (shown cut short with "...") still says which it is.
BUTTON_LABELS = ("parallel (agentlab)", "serial (agentlab)", "naive parallel")
#: The batch: (call id, tool, delay in ms); "stuck" hangs for ``hang_s``.
BATCH = [("a", "fetch", 60), ("b", "stuck", None), ("c", "fetch", 80), ("d", "fetch", 40)]


def _registry(log: dict[str, list[float]], lock: threading.Lock, hang_s: float) -> ToolRegistry:
    reg = ToolRegistry()

    def note(call_id: str, t: float) -> None:
        with lock:
            log.setdefault(call_id, []).append(t)

    @reg.tool
    def fetch(call_id: str, delay_ms: int) -> str:
        """Fetch a page (simulated latency)."""
        note(call_id, time.perf_counter())
        time.sleep(delay_ms / 1000)
        note(call_id, time.perf_counter())
        return f"page {call_id}"

    @reg.tool
    def stuck(call_id: str) -> str:
        """A tool that hangs."""
        note(call_id, time.perf_counter())
        time.sleep(hang_s)
        note(call_id, time.perf_counter())
        return "finally"

    return reg


def run_hung_batch(timeout_s: float = 0.3, executor: str = "agentlab execute_parallel", *,
                   hang_s: float = 1.2) -> dict[str, Any]:
    """Run the four-call batch (one call hangs ``hang_s``) with ``timeout_s`` per call.

    Returns ``{"executor", "timeout_s", "hang_s", "wall_ms", "rows", "outcomes"}``: ``rows``
    for ``plot_call_gantt`` (ms since the batch started), ``outcomes`` as ``{call id: state}``.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(EXECUTORS)}")
    cls, method = EXECUTORS[executor]
    log: dict[str, list[float]] = {}
    lock = threading.Lock()
    ex = cls(_registry(log, lock, hang_s), default_timeout=timeout_s)
    calls = [ToolCall(cid, tool, {"call_id": cid, **({"delay_ms": d} if d else {})})
             for cid, tool, d in BATCH]
    t0 = time.perf_counter()
    results = getattr(ex, method)(calls)
    wall_ms = (time.perf_counter() - t0) * 1000
    rows, outcomes = [], {}
    for call, r in zip(calls, results):
        state = call_state(r)
        if state == "failed" and "timed out" in r.result:   # the naive result has no code
            state = "timed_out"
        outcomes[call.id] = state
        with lock:
            times = list(log.get(call.id, []))
        if not times:
            continue
        start = (times[0] - t0) * 1000
        if state == "timed_out":
            end = (times[1] - t0) * 1000 if len(times) > 1 else start + hang_s * 1000
            cut = min(start + timeout_s * 1000, end)
            segments = [(start, cut, "timed_out"), (cut, end, "abandoned")]
        else:
            segments = [(start, (times[-1] - t0) * 1000, state)]
        rows.append({"name": f"{call.name} #{call.id}", "segments": segments})
    return {"executor": executor, "timeout_s": timeout_s, "hang_s": hang_s, "wall_ms": wall_ms,
            "rows": rows, "outcomes": outcomes}


def format_hung_batch(res: dict[str, Any]) -> str:
    """Two lines: when the results came back, and what happened to the hung call."""
    late = res["wall_ms"] > res["timeout_s"] * 1000 + 150 and "parallel" in res["executor"]
    lines = [f"{res['executor']}, timeout {res['timeout_s']:.2f} s: "
             f"results back after {res['wall_ms']:.0f} ms"]
    if late:
        lines.append("(leaving `with ThreadPoolExecutor` waited for the hung thread)")
    states = ", ".join(f"{cid} {STATE_LABELS[s].split(' (')[0]}"
                       for cid, s in res["outcomes"].items())
    lines.append(f"outcomes: {states}; the hung tool sleeps {res['hang_s']:g} s")
    return "\n".join(lines)


def hung_batch_explorer(*, hang_s: float = 1.2) -> Panel:
    """Move the timeout, pick an executor, see when a batch with one hung tool comes back.

    The orange bar is the hung call until its timeout; the pale hatched part is its thread
    running on after the caller stopped waiting (agentlab) -- or while the caller still waits
    for it (naive). Returns a ``Panel`` (an ipywidgets ``VBox``).
    """
    timeout = w.FloatSlider(0.3, min=0.1, max=1.0, step=0.05, description="timeout (s)",
                            continuous_update=False, readout_format=".2f")
    which = w.ToggleButtons(options=list(zip(BUTTON_LABELS, EXECUTORS)),
                            value="agentlab execute_parallel",
                            description="executor", style={"button_width": "auto"},
                            tooltips=["agentlab: the calls in parallel, the batch ends at the "
                                      "timeout", "agentlab: one call after another, each with "
                                      "its own timeout", "the article's executor: waits for "
                                      "every thread, the hung one included"])
    out = w.Output()
    panel = Panel([w.HBox([timeout]), which, out], title="hung batch explorer (chapter 03)")

    def redraw(_: Any = None) -> None:
        res = run_hung_batch(timeout.value, which.value, hang_s=hang_s)
        label = dict(zip(EXECUTORS, BUTTON_LABELS))[res["executor"]]  # as on its button
        fig = plot_call_gantt({label: res["rows"]}, timeout_ms=res["timeout_s"] * 1000,
                              done_ms={label: res["wall_ms"]},
                              title="Four calls, one hangs", figsize=(7.5, 2.6))
        panel.show(out, format_hung_batch(res), fig)

    timeout.observe(redraw, "value")
    which.observe(redraw, "value")
    redraw()
    return panel

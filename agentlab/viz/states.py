"""One colour and one word per call state, for every plot and widget of chapters 01-12.

A tool call (or a model request) ends in one of six states, drawn the same way everywhere:

=============  ===========================================================  ==================
state          meaning                                                      drawn as
=============  ===========================================================  ==================
``ok``         ran and returned a result                                    green
``failed``     ran and failed (exception, bad arguments, unknown tool,      red
               an HTTP error)
``timed_out``  stopped being waited for at its timeout                      orange, hatched
``abandoned``  its thread kept running after the caller stopped waiting     pale orange, hatched
``not_run``    never started (a dependency failed, the run's deadline,      grey
               cancelled, executor saturated)
``replayed``   answered from the durable tool log after a resume, not run   blue
=============  ===========================================================  ==================

``call_state(x)`` maps a ``ToolResult``, a ``tool_calls_made`` entry, a ``ScheduledCall`` or an
``Attempt`` to one of these; ``state_handles(states)`` gives legend entries in this order.
"""
from __future__ import annotations

from typing import Any, Iterable

__all__ = ["STATES", "STATE_COLORS", "STATE_LABELS", "NOT_RUN_CODES", "KIND_COLORS",
           "TOKEN_COLORS", "PERCENTILE_COLORS",
           "call_state", "worst_state", "state_style", "state_handles"]

#: The states in legend order.
STATES = ("ok", "failed", "timed_out", "abandoned", "not_run", "replayed")
STATE_COLORS = {"ok": "#2e7d32", "failed": "#c62828", "timed_out": "#ef6c00",
                "abandoned": "#ffcc80", "not_run": "#bdbdbd", "replayed": "#1565c0"}
STATE_LABELS = {"ok": "ok", "failed": "failed", "timed_out": "timed out",
                "abandoned": "abandoned (thread still running)", "not_run": "not run",
                "replayed": "replayed from the log"}
#: Colours of what a bar *is* (not how it ended): runs, turns and model calls, in blues and
#: greys so they never read as a call state. Tool calls are drawn in their state's colour.
KIND_COLORS = {"run": "#90a4ae", "turn": "#90caf9", "llm": "#7986cb"}
#: Token and money colours (input, output, cost), shared by the tokens-per-turn plots.
TOKEN_COLORS = {"input": "#b0bec5", "output": "#455a64", "cost": "#6a1b9a"}
#: Percentile colours (chapters 09 and 13): light to dark as the tail gets longer, never a
#: state colour (a p99 is not a failure).
PERCENTILE_COLORS = {"p50": "#0277bd", "p95": "#5e35b1", "p99": "#212121"}
_HATCH = {"timed_out": "//", "abandoned": "//"}
#: Error codes of calls that never started.
NOT_RUN_CODES = frozenset({"dependency_failed", "deadline_exceeded", "cancelled",
                           "not_executed", "executor_saturated"})
_TIMEOUT_CODES = frozenset({"tool_timeout", "provider_timeout"})
_SCHEDULE_STATUS = {"ok": "ok", "failed": "failed", "skipped": "not_run"}


def call_state(call: Any) -> str:
    """The state of one call: a ``ToolResult``, a ``tool_calls_made`` dict, a ``ScheduledCall``
    (its ``status``), an ``Attempt`` (``ok``/``error_code``), or a state name already."""
    if isinstance(call, str):
        if call not in STATE_COLORS:
            raise ValueError(f"unknown call state {call!r}; use one of {', '.join(STATES)}")
        return call
    get = call.get if isinstance(call, dict) else (lambda k, d=None: getattr(call, k, d))
    if get("replayed"):
        return "replayed"
    status = get("status")
    if status in _SCHEDULE_STATUS and get("success") is None and get("ok") is None:
        return _SCHEDULE_STATUS[status]
    ok = get("success", get("ok"))
    if ok:
        return "ok"
    code = get("error_code")
    if code in _TIMEOUT_CODES:
        return "timed_out"
    if code in NOT_RUN_CODES:
        return "not_run"
    return "failed"


def worst_state(calls: Iterable[Any]) -> str:
    """The state that matters most among ``calls``: failed > timed out > not run > replayed > ok."""
    order = ("failed", "timed_out", "abandoned", "not_run", "replayed", "ok")
    found = {call_state(c) for c in calls}
    return next((s for s in order if s in found), "ok")


def state_style(state: str) -> dict[str, Any]:
    """``barh``/``bar`` keyword arguments that draw ``state`` (colour, hatch, edge)."""
    state = call_state(state)
    style: dict[str, Any] = {"color": STATE_COLORS[state]}
    if state in _HATCH:
        style.update(hatch=_HATCH[state], edgecolor="white", linewidth=0)
    return style


def state_handles(states: Iterable[str] = STATES, labels: dict[str, str] | None = None) -> list:
    """Legend patches for ``states`` (in the vocabulary's order), optionally relabelled."""
    from matplotlib.patches import Patch  # lazy: heavy

    wanted = {call_state(s) for s in states}
    names = {**STATE_LABELS, **(labels or {})}
    out = []
    for s in STATES:
        if s in wanted:
            style = state_style(s)
            out.append(Patch(facecolor=style["color"], hatch=style.get("hatch"),
                             edgecolor=style.get("edgecolor", style["color"]), label=names[s]))
    return out

"""Checks for exercise 12, a metric computed from spans (``notebooks/exercises/12_span_metric.ipynb``).

Spans are the dicts of ``json.loads(observer.export_json())["spans"]``. A tool span has
``attributes["gen_ai.operation.name"] == "execute_tool"`` and the tool's name in
``attributes["gen_ai.tool.name"]``; ``duration_ms`` is ``None`` while a span is still open.
The student writes:

- ``tool_p95(spans) -> {tool: p95 of duration_ms}`` over finished tool spans (failed ones
  included: a timeout is latency too), with linear interpolation like ``numpy.percentile``;
- ``tool_error_rate(spans) -> {tool: share of its finished spans whose status is "error"}``.
"""
from __future__ import annotations

import random
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_tool_p95", "check_tool_error_rate", "make_spans"]


def make_spans(calls: list[tuple[str, float, bool]], *, llm_ms: float = 900.0,
               open_tool: str | None = None) -> list[dict]:
    """Spans of a small run: one turn with a model call, then ``(tool, duration_ms, ok)`` calls."""
    from ..observe import AgentObserver  # lazy: heavy

    obs = AgentObserver("exercise", seed=12)
    with obs.span("run"):
        with obs.span("turn", turn=1):
            obs.record_llm_call(prompt_tokens=100, completion_tokens=10, duration_ms=llm_ms, turn=1)
            for name, ms, ok in calls:
                obs.record_tool_call(name, ms, ok, None if ok else "tool_timeout", turn=1)
            if open_tool:
                obs.start_span(f"execute_tool {open_tool}", **{"gen_ai.operation.name": "execute_tool",
                                                              "gen_ai.tool.name": open_tool})
    return [s.to_dict() for s in obs.spans]


def _close(expected: dict[str, float]) -> Callable[[object], bool]:
    def ok(got: object) -> bool:
        return (isinstance(got, dict) and set(got) == set(expected)
                and all(abs(float(got[k]) - v) < 1e-6 for k, v in expected.items()))
    return ok


def check_tool_p95(fn: Callable) -> str:
    """Check ``fn(spans) -> {tool: p95_ms}`` against numpy-style interpolation."""
    rng = random.Random(12)
    twenty = [round(rng.uniform(10, 200), 1) for _ in range(20)]
    s = sorted(twenty)
    p95_twenty = s[18] + (s[19] - s[18]) * 0.05  # position 0.95 * 19 = 18.05
    return run_cases("tool p95 from spans", [
        Case("one call", lambda: fn(make_spans([("web_search", 40.0, True)])),
             {"web_search": 40.0}, check=_close({"web_search": 40.0})),
        Case("model and run spans are not tools", lambda: fn(make_spans([("read_url", 5.0, True)])),
             {"read_url": 5.0}, check=_close({"read_url": 5.0}),
             hint="keep spans whose attributes['gen_ai.operation.name'] is 'execute_tool'."),
        Case("two tools, grouped by gen_ai.tool.name", lambda: fn(make_spans(
             [("a", 10.0, True), ("b", 100.0, True), ("a", 20.0, True)])),
             {"a": 19.5, "b": 100.0}, check=_close({"a": 19.5, "b": 100.0}),
             hint="p95 of [10, 20] interpolates: 10 + 0.95 * (20 - 10) = 19.5."),
        Case("20 calls: interpolate between the 19th and 20th", lambda: fn(make_spans(
             [("search", ms, True) for ms in twenty])), {"search": p95_twenty},
             check=_close({"search": p95_twenty}),
             hint="position = 0.95 * (n - 1) in the sorted list; numpy.percentile does this."),
        Case("failed calls count, open spans do not", lambda: fn(make_spans(
             [("a", 10.0, True), ("a", 30.0, False)], open_tool="a")), {"a": 29.0},
             check=_close({"a": 29.0}), hint="skip spans whose duration_ms is None."),
    ])


def check_tool_error_rate(fn: Callable) -> str:
    """Check ``fn(spans) -> {tool: error share}``."""
    return run_cases("tool error rate from spans", [
        Case("no failures", lambda: fn(make_spans([("a", 1.0, True), ("a", 2.0, True)])),
             {"a": 0.0}, check=_close({"a": 0.0})),
        Case("one of four failed", lambda: fn(make_spans(
             [("a", 1.0, True), ("a", 2.0, False), ("a", 3.0, True), ("a", 4.0, True)])),
             {"a": 0.25}, check=_close({"a": 0.25}), hint="count spans with status == 'error'."),
        Case("per tool, model spans ignored", lambda: fn(make_spans(
             [("a", 1.0, False), ("b", 2.0, True), ("b", 3.0, False), ("b", 4.0, True)])),
             {"a": 1.0, "b": 1 / 3}, check=_close({"a": 1.0, "b": 1 / 3})),
        Case("open spans are not counted", lambda: fn(make_spans([("a", 1.0, False)], open_tool="a")),
             {"a": 1.0}, check=_close({"a": 1.0}), hint="an open span has no status yet."),
    ])

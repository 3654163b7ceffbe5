"""What one cell of a sweep produces: a run row and one row per tool call (notebook 14).

Rows are plain dicts of JSON-able values, so a worker process can send them back and the
journal can store them as one JSON line; ``agentlab.experiments.results`` turns them into
pandas DataFrames.

Units: tool durations and timeouts are on the **simulated clock**: a measured wall time
divided by the cell's ``time_scale``, so a search drawn at 800 ms that slept 4 ms at
``time_scale=0.005`` reports about 800 ms (with ``time_scale=1``, a real endpoint, the two
clocks are the same). ``wall_s`` is the cell's real wall time. The ``sim_*`` columns are
computed from the true (drawn) durations and the timeouts in force, never read off a clock.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from .pricing import cost_usd

__all__ = ["CellOutput", "agent_run_row", "tool_call_rows", "TimeoutProbe"]


@dataclass
class CellOutput:
    """A scenario's result for one cell: ``run`` (one row) and ``tool_calls`` (rows)."""

    run: dict[str, Any]
    tool_calls: list[dict[str, Any]] = field(default_factory=list)


class TimeoutProbe:
    """Remembers the timeout in force for each tool call, read just before it runs.

    ``AgentResult.tool_calls_made`` entries carry the enforced ``timeout_s`` in newer versions
    of the runtime; until then this probe, hooked on ``tool_start``, asks the same sources the
    executor asks (the tool's own option, the timeout manager, the executor's default).
    """

    def __init__(self, registry: Any, manager: Any, default_s: float) -> None:
        self.registry, self.manager, self.default_s = registry, manager, default_s
        self.seen: dict[str, float] = {}

    def timeout_s(self, name: str) -> float:
        options = getattr(self.registry, "get_options", lambda n: {})(name) or {}
        if options.get("timeout") is not None:
            return float(options["timeout"])
        if self.manager is not None:
            return float(self.manager.get_timeout(name))
        return float(self.default_s)

    def on_tool_start(self, event: dict) -> None:
        self.seen[str(event.get("id"))] = self.timeout_s(str(event.get("name")))


def tool_call_rows(calls: list[dict], *, time_scale: float = 1.0,
                   probe: TimeoutProbe | None = None,
                   true_ms: Callable[[dict], float] | None = None,
                   decision: Callable[[dict], tuple[float, bool] | None] | None = None
                   ) -> list[dict]:
    """One row per entry of ``AgentResult.tool_calls_made`` (durations on the simulated clock).

    ``true_ms(call)`` gives a call's true simulated duration when the scenario knows it
    (``inf`` for a call that hangs): a call killed by its timeout although it would have
    finished is a *false kill*; the time spent on any killed call is *wasted*.
    ``decision(call)`` gives ``(timeout_s, killed)`` decided on the simulated clock
    (``workloads.SimulatedTimeouts``), or None; without it the enforced timeout is read from
    the call or the ``probe`` (real seconds, divided by ``time_scale``).

    Two kinds of columns: ``duration_ms`` and ``wasted_ms`` are read off the clock (they
    differ between runs, ``results.MEASURED``); the ``sim_*`` columns replay the true
    duration against the timeout in force (``sim_duration_ms``: the simulated time the call
    took, at most its timeout), so they are the same at any load. ``clock_override``: the
    outcome differs from the simulated decision (the real-clock backstop fired).
    """
    rows = []
    for i, c in enumerate(calls):
        decided = decision(c) if decision is not None else None
        if decided is not None:
            limit_s = float(decided[0])
        else:
            enforced = c.get("timeout_s")
            if enforced is None and probe is not None:
                enforced = probe.seen.get(str(c.get("id")))
            limit_s = float(enforced) / time_scale if enforced is not None else math.nan
        killed = c.get("error_code") == "tool_timeout"
        duration = float(c.get("duration_ms") or 0.0) / time_scale
        true = float(true_ms(c)) if true_ms is not None else math.nan
        known = not math.isnan(true) and not math.isnan(limit_s)
        sim_killed = bool(known and true > limit_s * 1000.0)
        rows.append({
            "turn": int(c.get("turn") or 0), "index": i, "call_id": str(c.get("id", "")),
            "tool": str(c.get("name", "")),
            "outcome": "ok" if c.get("success") else str(c.get("error_code") or "failed"),
            "success": bool(c.get("success")), "timed_out": killed,
            "duration_ms": duration, "timeout_s": limit_s, "true_ms": true,
            "false_kill": bool(killed and math.isfinite(true)),
            "wasted_ms": duration if killed else 0.0,
            "sim_duration_ms": (limit_s * 1000.0 if sim_killed else true) if known else math.nan,
            "sim_timed_out": sim_killed,
            "sim_false_kill": bool(sim_killed and math.isfinite(true)),
            "sim_wasted_ms": (limit_s * 1000.0 if sim_killed else 0.0) if known else math.nan,
            "clock_override": bool(decided is not None and killed != bool(decided[1]))})
    return rows


def agent_run_row(result: Any, *, model: str, tool_rows: list[dict],
                  requests: list[dict] | None = None, success: bool | None = None,
                  compressions: int = 0) -> dict[str, Any]:
    """The run row of an ``AgentResult``: state, turns, tokens, cost, tools, errors by code.

    ``requests`` is the wire log (``Simulator.requests``): each turn makes one model call, so
    the requests beyond ``turns`` are retries; ``llm_failed_requests`` counts the non-200s.
    """
    usage = result.usage or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    codes = Counter(str(e.get("code", "unknown")) for e in result.errors)
    requests = requests or []
    state = getattr(result.state, "value", str(result.state))
    known = not any(math.isnan(r["sim_duration_ms"]) for r in tool_rows)
    return {
        "state": state, "stopped_reason": result.stopped_reason,
        "success": bool(state == "finished" if success is None else success),
        "turns": int(result.turns), "prompt_tokens": prompt, "completion_tokens": completion,
        "total_tokens": int(result.total_tokens), "cost_usd": cost_usd(model, prompt, completion),
        "tool_calls": len(tool_rows),
        "tool_failures": sum(not r["success"] for r in tool_rows),
        "tool_timeouts": sum(r["timed_out"] for r in tool_rows),
        "false_kills": sum(r["false_kill"] for r in tool_rows),
        "wasted_s": sum(r["wasted_ms"] for r in tool_rows) / 1000.0,
        # on the simulated clock; NaN when a call's true duration is unknown (research)
        "sim_timeouts": sum(r["sim_timed_out"] for r in tool_rows) if known else math.nan,
        "sim_false_kills": sum(r["sim_false_kill"] for r in tool_rows) if known else math.nan,
        "sim_wasted_s": sum(r["sim_wasted_ms"] for r in tool_rows) / 1000.0,
        "clock_overrides": sum(r["clock_override"] for r in tool_rows),
        "llm_requests": len(requests),
        "llm_retries": max(0, len(requests) - int(result.turns)) if requests else 0,
        "llm_failed_requests": sum(1 for r in requests if r.get("status") != 200),
        "compressions": int(compressions),
        "errors": sum(codes.values()), "error_codes": dict(sorted(codes.items())),
    }

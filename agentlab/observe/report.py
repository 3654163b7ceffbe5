"""What an observer's records add up to: the ``RunReport`` and the per-tool and per-turn views.

Part of chapter 12 (``notebooks/12_observability.ipynb``); ``AgentObserver.generate_report``,
``tool_latencies``, ``per_turn`` and ``turn_count`` call these. Latencies are in ms;
percentiles (p50/p95/p99) interpolate like ``numpy.percentile`` (``agentlab.timeouts``).
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

from ..timeouts import percentile
from .records import LLMCallRecord, RunReport, ToolCallRecord

__all__ = ["build_report", "latency_stats", "tool_latencies", "per_turn", "turn_count"]


def latency_stats(values: list[float]) -> dict[str, float]:
    """count, mean, p50, p95, p99 and max of a non-empty list of durations."""
    return {"count": len(values), "mean": sum(values) / len(values), "p50": percentile(values, 50),
            "p95": percentile(values, 95), "p99": percentile(values, 99), "max": max(values)}


def tool_latencies(tool_calls: Iterable[ToolCallRecord]) -> dict[str, list[float]]:
    """``{tool name: [duration_ms, ...]}`` in call order."""
    out: dict[str, list[float]] = {}
    for t in tool_calls:
        out.setdefault(t.name, []).append(t.duration_ms)
    return out


def per_turn(llm_calls: Iterable[LLMCallRecord],
             tool_calls: Iterable[ToolCallRecord]) -> list[dict[str, Any]]:
    """Tokens, cost and calls per turn (calls recorded without a turn are left out)."""
    rows: dict[int, dict[str, Any]] = {}
    for c in llm_calls:
        if c.turn is None:
            continue
        r = rows.setdefault(c.turn, {"turn": c.turn, "prompt_tokens": 0, "completion_tokens": 0,
                                     "cost_usd": 0.0, "llm_calls": 0, "tool_calls": 0})
        r["prompt_tokens"] += c.prompt_tokens
        r["completion_tokens"] += c.completion_tokens
        r["llm_calls"] += 1
        r["cost_usd"] = None if r["cost_usd"] is None or c.cost_usd is None \
            else r["cost_usd"] + c.cost_usd
    for t in tool_calls:
        if t.turn is not None and t.turn in rows:
            rows[t.turn]["tool_calls"] += 1
    return [rows[k] for k in sorted(rows)]


def turn_count(obs: Any) -> int:
    """How many turns an observer's records show (turn spans, calls with a turn, or events)."""
    turns = {s.attributes.get("agentlab.turn", s.span_id) for s in obs.spans if s.name == "turn"}
    turns |= {c.turn for c in obs.llm_calls if c.turn is not None}
    turns |= {t.turn for t in obs.tool_calls if t.turn is not None}
    return len(turns) or sum(1 for e in obs.events if e["name"] == "turn_start")


def build_report(obs: Any) -> RunReport:
    """Summarise an observer's run: tokens, cost, tool counts, success rate, latencies."""
    llm, tools = list(obs.llm_calls), list(obs.tool_calls)
    unpriced = sorted({c.model for c in llm if c.cost_usd is None})
    prompt = sum(c.prompt_tokens for c in llm)
    completion = sum(c.completion_tokens for c in llm)
    called: dict[str, int] = {}
    failed: dict[str, int] = {}
    errors: dict[str, int] = {}
    for t in tools:
        called[t.name] = called.get(t.name, 0) + 1
        if not t.success:
            failed[t.name] = failed.get(t.name, 0) + 1
    for code in [c.error_code for c in llm] + [t.error_code for t in tools]:
        if code:
            errors[code] = errors.get(code, 0) + 1
    status = obs.final_status or ("running" if any(not s.ended for s in obs.spans) else "unknown")
    llm_ms = [c.duration_ms for c in llm]
    return RunReport(
        run_id=obs.run_id, model=obs.model, final_status=status,
        started_at=datetime.fromtimestamp(obs.start_time, timezone.utc).isoformat(),
        duration_ms=obs.duration_ms(), turns=turn_count(obs), llm_calls=len(llm),
        llm_errors=sum(1 for c in llm if c.error_code), total_prompt_tokens=prompt,
        total_completion_tokens=completion, total_tokens=prompt + completion,
        cost_usd=None if unpriced else sum(c.cost_usd or 0.0 for c in llm),
        unpriced_models=unpriced, tool_calls=len(tools), tools_called=called,
        tool_failures=failed,
        tool_success_rate=(sum(t.success for t in tools) / len(tools)) if tools else None,
        tool_latency_ms={k: latency_stats(v) for k, v in tool_latencies(tools).items()},
        llm_latency_ms=latency_stats(llm_ms) if llm_ms else {},
        errors=errors, spans=len(obs.spans), events=len(obs.events))

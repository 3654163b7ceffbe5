"""Observability for one agent run: nested spans, token and cost accounting, exports.

Taught in ``notebooks/12_observability.ipynb`` (article section 10).

``AgentObserver`` records what a run did as *spans* (run > turn > llm call / tool call, each
with ids, parent, timings, status and attributes), *records* of every LLM and tool call, free
*metrics* and *events*. From them it builds a ``RunReport`` and exports JSON, Prometheus text
and OpenTelemetry spans.

What the article's observer got wrong and this one does not:

- ``start_span`` really stores the span (the article's never appended it, so ``end_span`` found
  nothing and every trace was empty); parents come from a per-observer ``ContextVar``, so nesting
  is right per thread and per asyncio task;
- prices come from ``data/models.json``; a model with no price gives ``cost_usd=None`` and a
  ``PricingWarning``, never another model's price;
- durations use ``time.perf_counter`` (anchored once to the wall clock for timestamps);
- percentiles (p50/p95/p99) interpolate like ``numpy.percentile``;
- Prometheus output is valid text format (sanitised names, ``HELP``/``TYPE``, escaped labels);
- everything is per instance: one observer per run, nothing accumulates across runs.

The records are in ``records.py`` (attribute names follow the OpenTelemetry GenAI semantic
conventions), the exports in ``export.py``.

With the runtime: ``AgentRuntime(..., observer=obs)`` calls ``obs.attach(runtime)``, which
subscribes a ``RuntimeTracer`` (``agentlab.observe.tracer``) to the runtime's hook events: run >
turn > model call / tool call, ``finish(stopped_reason)`` at the end; a used observer is
replaced by ``obs.fresh()`` for the next run. By hand, the same calls:

1. ``with obs.span("run", task=...):`` around the whole run, ``with obs.span("turn", turn=n):``
   around each turn (an exception inside marks the span ``error`` and propagates).
2. After each model call: ``obs.record_llm_call(model=llm.model, prompt_tokens=..,
   completion_tokens=.., duration_ms=.., turn=n, error_code=None)`` (token counts of ``None``,
   as ``usage.get(...)`` gives when a provider reports no usage, count as 0; a negative or
   non-numeric count or duration raises ``ConfigError``); after each tool result:
   ``obs.record_tool_call(name, result.duration_ms, result.success, result.error_code, turn=n,
   tool_call_id=call.id)``. Each creates a child span of the current span (or of ``parent=``),
   ending now and lasting ``duration_ms`` (``start_perf=`` places it exactly).
3. At the end: ``obs.finish(result.stopped_reason)``; then ``generate_report()``/exports.
"""
from __future__ import annotations

import functools
import io
import json
import time
import warnings
from pathlib import Path
from typing import Any, TextIO

from ..errors import ConfigError
from ..timeouts import percentile
from ..models import DEFAULT_MODEL, MODELS_PATH, price_table
from .export import parse_json, print_summary, to_json, to_otel, to_prometheus
from .records import (ATTRIBUTE_ALIASES, LLMCallRecord, MetricPoint, RunReport, Span,
                      ToolCallRecord, duration_value, token_count)
from .report import build_report, per_turn, tool_latencies, turn_count
from .spans import SpanRecorder
from .tracer import RuntimeTracer, attach as attach_tracer

__all__ = [
    "Span", "MetricPoint", "LLMCallRecord", "ToolCallRecord", "RunReport", "AgentObserver",
    "PricingWarning", "load_pricing", "percentile", "PRICING_PATH", "ATTRIBUTE_ALIASES",
]

#: The price list (USD per 1M tokens): the ``input``/``output`` columns of ``data/models.json``.
PRICING_PATH = MODELS_PATH


class PricingWarning(UserWarning):
    """A model has no price in the table, so the run's cost is unknown."""


# ---------------------------------------------------------------- prices and statistics
@functools.lru_cache(maxsize=8)
def _read_pricing(path: str) -> dict[str, dict[str, float]]:
    """The priced models of a table file (``{"models": {name: {"input", "output", ...}}}``)."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return {name: {"input": m["input"], "output": m["output"]} for name, m in doc["models"].items()
            if m.get("input") is not None and m.get("output") is not None}


def load_pricing(pricing: Any = None) -> dict[str, dict[str, float]]:
    """``{model: {"input": usd_per_1m, "output": usd_per_1m}}`` from the model table
    (``agentlab.models``, registered models included), a dict or a file."""
    if pricing is None:
        return price_table()
    if isinstance(pricing, (str, Path)):
        return dict(_read_pricing(str(pricing)))
    table = pricing.get("models", pricing)
    for name, p in table.items():
        if not (isinstance(p, dict) and {"input", "output"} <= set(p)):
            raise ConfigError("invalid_config", f"price of {name!r} must be a dict with 'input' "
                              "and 'output' in USD per 1M tokens")
    return dict(table)


# ---------------------------------------------------------------- the observer
class AgentObserver(SpanRecorder):
    """Records spans, calls, metrics and events of ONE run (make a new one per run).

    Spans and events (``start_span``, ``end_span``, ``span``, ``record_event``) come from
    ``SpanRecorder`` (``spans.py``); this class adds model and tool calls with their cost,
    metrics, the report and the exports.

    Args:
        run_id: the run this observer belongs to (label of every export).
        model: the default model of ``record_llm_call``.
        pricing: ``None`` (``data/models.json``), a dict ``{model: {"input", "output"}}`` in USD
            per 1M tokens, or a path to a JSON file of the same shape.
        seed: makes trace and span ids reproducible (for notebooks and tests).
    """

    def __init__(self, run_id: str, model: str = DEFAULT_MODEL, pricing: Any = None, *,
                 seed: int | None = None) -> None:
        self.run_id = str(run_id)
        self.model = model
        self.pricing = load_pricing(pricing)
        super().__init__(seed=seed)
        self.metrics: list[MetricPoint] = []
        self.llm_calls: list[LLMCallRecord] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.final_status: str | None = None
        self._t_end: float | None = None
        self._frozen_duration_ms: float | None = None
        self._warned: set[str] = set()

    def attach(self, runtime: Any) -> RuntimeTracer:
        """Trace ``runtime``'s runs into this observer (what ``AgentRuntime(observer=obs)`` does).

        Subscribes a ``RuntimeTracer`` to the runtime's hook events (once per runtime) and sets
        ``runtime.observer``; see ``agentlab.observe.tracer``.
        """
        return attach_tracer(runtime, self)

    def fresh(self, run_id: str) -> "AgentObserver":
        """A new, empty observer with this one's model and prices (one observer per run).

        A seeded observer gives the next seed, so two runs never share trace or span ids.
        """
        seed = None if self._seed is None else self._seed + 1
        return type(self)(run_id, self.model, self.pricing, seed=seed)

    @property
    def used(self) -> bool:
        """True once anything was recorded about a run (spans, calls, or ``finish``)."""
        return bool(self.spans or self.llm_calls or self.tool_calls) or self.final_status is not None

    # -- metrics and events
    def record_metric(self, name: str, value: float, **labels: Any) -> None:
        """A free-form measurement, e.g. ``record_metric("queue_depth", 3, tool="search")``."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError("invalid_argument", f"metric {name!r} needs a number, not {value!r}")
        point = MetricPoint(name, float(value), {k: str(v) for k, v in labels.items()}, time.time())
        with self._lock:
            self.metrics.append(point)

    # -- calls
    def price(self, model: str) -> dict[str, float] | None:
        """The model's price per 1M tokens, or None (with one ``PricingWarning`` per model)."""
        price = self.pricing.get(model)
        if price is None and model not in self._warned:
            self._warned.add(model)
            warnings.warn(f"no price for model {model!r} in the pricing table; cost is unknown "
                          f"(add it to data/models.json or pass pricing=)", PricingWarning,
                          stacklevel=3)
        return price

    def record_llm_call(self, *, model: str | None = None, prompt_tokens: int = 0,
                        completion_tokens: int = 0, duration_ms: float = 0.0,
                        turn: int | None = None, error_code: str | None = None,
                        start_perf: float | None = None, parent: Span | None = None,
                        **attributes: Any) -> Span:
        """Record one model call (its tokens, latency, cost) as a child span of the current one.

        A token count of ``None`` (a provider that reported no usage) counts as 0; a negative
        or non-numeric count or duration raises ``ConfigError``.
        """
        prompt_tokens = token_count("prompt_tokens", prompt_tokens)
        completion_tokens = token_count("completion_tokens", completion_tokens)
        duration_ms = duration_value(duration_ms)
        model = model or self.model
        price = self.price(model)
        cost = None if price is None else (prompt_tokens * price["input"]
                                           + completion_tokens * price["output"]) / 1e6
        attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                 "gen_ai.usage.input_tokens": int(prompt_tokens),
                 "gen_ai.usage.output_tokens": int(completion_tokens)}
        if turn is not None:
            attrs["agentlab.turn"] = turn
        if cost is not None:
            attrs["agentlab.cost_usd"] = cost
        if error_code:
            attrs["error.type"] = error_code
        attrs.update({ATTRIBUTE_ALIASES.get(k, k): v for k, v in attributes.items()})
        span = self._child_span(f"chat {model}", duration_ms, start_perf, parent, attrs, error_code)
        with self._lock:
            self.llm_calls.append(LLMCallRecord(model, int(prompt_tokens), int(completion_tokens),
                                                float(duration_ms), turn, error_code, cost,
                                                span.span_id))
        return span

    def record_tool_call(self, name: str, duration_ms: float, success: bool = True,
                         error_code: str | None = None, turn: int | None = None, *,
                         tool_call_id: str | None = None, start_perf: float | None = None,
                         parent: Span | None = None, **attributes: Any) -> Span:
        """Record one tool execution as a child span of the current one (``duration_ms >= 0``)."""
        duration_ms = duration_value(duration_ms)
        error = (error_code or "tool_failed") if not success else None
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                 "agentlab.success": bool(success)}
        if tool_call_id is not None:
            attrs["gen_ai.tool.call.id"] = tool_call_id
        if turn is not None:
            attrs["agentlab.turn"] = turn
        if error:
            attrs["error.type"] = error
        attrs.update({ATTRIBUTE_ALIASES.get(k, k): v for k, v in attributes.items()})
        span = self._child_span(f"execute_tool {name}", duration_ms, start_perf, parent, attrs,
                                error)
        with self._lock:
            self.tool_calls.append(ToolCallRecord(name, float(duration_ms), bool(success),
                                                  error, turn, tool_call_id, span.span_id))
        return span

    def finish(self, final_status: str = "completed") -> None:
        """Mark the run over (e.g. with ``AgentResult.stopped_reason``); freezes its duration."""
        self.final_status = final_status
        self._t_end = time.perf_counter()

    # -- derived views (in ``agentlab.observe.report``)
    def tool_latencies(self) -> dict[str, list[float]]:
        """``{tool name: [duration_ms, ...]}`` in call order."""
        return tool_latencies(self.tool_calls)

    def per_turn(self) -> list[dict[str, Any]]:
        """Tokens, cost and calls per turn (calls recorded without a turn are left out)."""
        return per_turn(self.llm_calls, self.tool_calls)

    def turn_count(self) -> int:
        """How many turns the records show (turn spans, calls with a turn, or turn events)."""
        return turn_count(self)

    def duration_ms(self) -> float:
        """Milliseconds from the start of the run span (the first span without a parent; the
        observer's creation if there is none) to ``finish``, or to now while running. Counted
        from the span, not from when the observer was made, it agrees with
        ``AgentResult.duration_ms`` however long before the run the observer was created."""
        if self._frozen_duration_ms is not None:
            return self._frozen_duration_ms
        root = next((s for s in self.spans if s.parent_id is None), None)
        start = self._t0 + (root.start_offset_ms / 1000.0 if root is not None else 0.0)
        return ((self._t_end or time.perf_counter()) - start) * 1000.0

    def generate_report(self) -> RunReport:
        """Summarise the run: tokens, cost, tool counts, success rate, latency percentiles."""
        return build_report(self)

    # -- exports (in ``agentlab.observe.export``)
    def export_json(self, indent: int | None = None) -> str:
        """Everything as JSON: the report, spans, calls, events, metrics (``from_json`` reads it).

        ``indent=2`` for reading by eye (about 4x slower on big runs: the pure-Python encoder).
        """
        return to_json(self, indent)

    @classmethod
    def from_json(cls, text: str, pricing: Any = None) -> "AgentObserver":
        """Rebuild an observer from ``export_json`` output (for plots and reports after the fact)."""
        doc = parse_json(text)
        obs = cls(doc["run_id"], doc["model"], pricing)
        obs.trace_id, obs._wall0 = doc["trace_id"], doc["started_at"]
        obs.final_status, obs._frozen_duration_ms = doc["final_status"], doc["duration_ms"]
        obs.spans, obs.llm_calls, obs.tool_calls = doc["spans"], doc["llm_calls"], doc["tool_calls"]
        obs.events, obs.metrics = doc["events"], doc["metrics"]
        return obs

    def export_prometheus_metrics(self) -> str:
        """The run's metrics in Prometheus text exposition format (version 0.0.4)."""
        return to_prometheus(self)

    def print_summary(self, file: TextIO | None = None) -> None:
        """A plain-text summary that reads the same in a terminal and a notebook."""
        print_summary(self, file)

    def summary_text(self) -> str:
        """``print_summary`` as a string."""
        buf = io.StringIO()
        self.print_summary(buf)
        return buf.getvalue()

    def export_otel(self, tracer_provider: Any = None) -> list[Any]:
        """Replay the spans through the OpenTelemetry SDK; returns the OTel spans, parents first.

        ``tracer_provider``: an ``opentelemetry.sdk.trace.TracerProvider`` (e.g. with an
        ``InMemorySpanExporter`` or an OTLP exporter); the global provider when omitted.
        Needs ``pip install 'agentlab[otel]'`` (``opentelemetry-sdk``).
        """
        return to_otel(self, tracer_provider)

    def __repr__(self) -> str:
        return (f"AgentObserver(run_id={self.run_id!r}, spans={len(self.spans)}, "
                f"llm_calls={len(self.llm_calls)}, tool_calls={len(self.tool_calls)})")

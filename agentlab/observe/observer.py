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
- prices come from ``data/pricing.json``; a model with no price gives ``cost_usd=None`` and a
  ``PricingWarning``, never another model's price;
- durations use ``time.perf_counter`` (anchored once to the wall clock for timestamps);
- percentiles (p50/p95/p99) interpolate like ``numpy.percentile``;
- Prometheus output is valid text format (sanitised names, ``HELP``/``TYPE``, escaped labels);
- everything is per instance: one observer per run, nothing accumulates across runs.

Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
(``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``);
agentlab's own are prefixed ``agentlab.`` (``agentlab.turn``, ``agentlab.cost_usd``).

With the runtime: ``AgentRuntime(..., observer=obs)`` records everything with no wiring by the
user (``agentlab.observe.tracer``: run > turn > model call / tool call from the runtime's hook
events, ``finish(stopped_reason)`` at the end; a used observer is replaced by ``obs.fresh()``
for the next run). By hand, the same calls:

1. ``with obs.span("run", task=...):`` around the whole run, ``with obs.span("turn", turn=n):``
   around each turn (an exception inside marks the span ``error`` and propagates).
2. After each model call: ``obs.record_llm_call(model=llm.model, prompt_tokens=..,
   completion_tokens=.., duration_ms=.., turn=n, error_code=None)``; after each tool result:
   ``obs.record_tool_call(name, result.duration_ms, result.success, result.error_code, turn=n,
   tool_call_id=call.id)``. Each creates a child span of the current span (or of ``parent=``),
   ending now and lasting ``duration_ms`` (``start_perf=`` places it exactly).
3. At the end: ``obs.finish(result.stopped_reason)``; then ``generate_report()``/exports.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import io
import json
import random
import threading
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, TextIO

from ..errors import AgentError, ConfigError
from ..timeouts import percentile
from ..models import DEFAULT_MODEL, MODELS_PATH, price_table

__all__ = [
    "Span", "MetricPoint", "LLMCallRecord", "ToolCallRecord", "RunReport", "AgentObserver",
    "PricingWarning", "load_pricing", "percentile", "PRICING_PATH",
]

#: The price list (USD per 1M tokens): a copy of the prices in ``data/models.json``, the one
#: table ``agentlab.models`` reads (provenance in ``data/models.md``; a test keeps them equal).
PRICING_PATH = MODELS_PATH.parent / "pricing.json"
#: Short keyword names accepted by ``span(**attributes)`` and the attribute each one becomes.
ATTRIBUTE_ALIASES = {"model": "gen_ai.request.model", "tool": "gen_ai.tool.name",
                     "turn": "agentlab.turn", "error_code": "error.type",
                     "tool_call_id": "gen_ai.tool.call.id"}


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


def _latency_stats(values: list[float]) -> dict[str, float]:
    return {"count": len(values), "mean": sum(values) / len(values), "p50": percentile(values, 50),
            "p95": percentile(values, 95), "p99": percentile(values, 99), "max": max(values)}


# ---------------------------------------------------------------- records
@dataclass
class Span:
    """One timed operation. Times: ``start_time``/``end_time`` wall clock (epoch seconds),
    ``start_offset_ms``/``duration_ms`` from ``perf_counter`` relative to the observer's start."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None = None
    start_time: float = 0.0
    end_time: float | None = None
    start_offset_ms: float = 0.0
    duration_ms: float | None = None
    status: str = "unset"  # unset -> ok | error
    status_message: str = ""
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        return self.end_time is not None

    @property
    def kind(self) -> str:
        """``llm``, ``tool`` or the span's name (``run``, ``turn``, ...), for plots."""
        op = self.attributes.get("gen_ai.operation.name")
        return {"chat": "llm", "execute_tool": "tool"}.get(op, self.name)

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[ATTRIBUTE_ALIASES.get(key, key)] = value

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in _SPAN_FIELDS}
        d["attributes"], d["events"] = dict(self.attributes), list(self.events)
        return d


_SPAN_FIELDS = [f.name for f in dataclasses.fields(Span)]


@dataclass
class MetricPoint:
    """A value recorded with ``record_metric`` (exported as a Prometheus gauge: the latest)."""

    name: str
    value: float
    labels: dict[str, str] = field(default_factory=dict)
    timestamp: float = 0.0


@dataclass
class LLMCallRecord:
    model: str
    prompt_tokens: int
    completion_tokens: int
    duration_ms: float
    turn: int | None = None
    error_code: str | None = None
    cost_usd: float | None = None
    span_id: str | None = None


@dataclass
class ToolCallRecord:
    name: str
    duration_ms: float
    success: bool
    error_code: str | None = None
    turn: int | None = None
    tool_call_id: str | None = None
    span_id: str | None = None


@dataclass
class RunReport:
    """Summary of one run (``AgentObserver.generate_report``). Latencies in ms."""

    run_id: str
    model: str
    final_status: str
    started_at: str
    duration_ms: float
    turns: int
    llm_calls: int
    llm_errors: int
    total_prompt_tokens: int
    total_completion_tokens: int
    total_tokens: int
    cost_usd: float | None
    unpriced_models: list[str]
    tool_calls: int
    tools_called: dict[str, int]
    tool_failures: dict[str, int]
    tool_success_rate: float | None
    tool_latency_ms: dict[str, dict[str, float]]
    llm_latency_ms: dict[str, float]
    errors: dict[str, int]
    spans: int
    events: int

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- the observer
class AgentObserver:
    """Records spans, calls, metrics and events of ONE run (make a new one per run).

    Args:
        run_id: the run this observer belongs to (label of every export).
        model: the default model of ``record_llm_call``.
        pricing: ``None`` (``data/pricing.json``), a dict ``{model: {"input", "output"}}`` in USD
            per 1M tokens, or a path to a JSON file of the same shape.
        seed: makes trace and span ids reproducible (for notebooks and tests).
    """

    def __init__(self, run_id: str, model: str = DEFAULT_MODEL, pricing: Any = None, *,
                 seed: int | None = None) -> None:
        self.run_id = str(run_id)
        self.model = model
        self.pricing = load_pricing(pricing)
        self._seed = seed
        self._rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self.trace_id = self._new_id(16)
        self.spans: list[Span] = []
        self.metrics: list[MetricPoint] = []
        self.events: list[dict[str, Any]] = []
        self.llm_calls: list[LLMCallRecord] = []
        self.tool_calls: list[ToolCallRecord] = []
        self.final_status: str | None = None
        self._t0 = time.perf_counter()
        self._wall0 = time.time()
        self._t_end: float | None = None
        self._frozen_duration_ms: float | None = None
        self._current: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
            f"agentlab_current_span_{id(self)}", default=None)
        self._lock = threading.Lock()
        self._warned: set[str] = set()

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

    # -- ids and clocks
    def _new_id(self, nbytes: int) -> str:
        return f"{self._rng.getrandbits(nbytes * 8):0{nbytes * 2}x}"

    def _offset_ms(self, perf: float) -> float:
        return (perf - self._t0) * 1000.0

    def _wall(self, perf: float) -> float:
        return self._wall0 + (perf - self._t0)

    # -- metrics and events
    def record_metric(self, name: str, value: float, **labels: Any) -> None:
        """A free-form measurement, e.g. ``record_metric("queue_depth", 3, tool="search")``."""
        point = MetricPoint(name, float(value), {k: str(v) for k, v in labels.items()}, time.time())
        with self._lock:
            self.metrics.append(point)

    def record_event(self, name: str, **attrs: Any) -> None:
        """A point in time (``turn_start``, ``compression``...); also added to the current span."""
        now = time.perf_counter()
        event = {"name": name, "time": self._wall(now), "offset_ms": self._offset_ms(now),
                 "attributes": attrs}
        with self._lock:
            self.events.append(event)
        current = self._current.get()
        if current is not None:
            current.events.append(event)

    # -- spans
    def current_span(self) -> Span | None:
        """The innermost open span of this thread / task, if any."""
        return self._current.get()

    def start_span(self, name: str, *, parent: Span | None = None, **attributes: Any) -> Span:
        """Open a span (child of ``parent`` or of the current span), store it, make it current."""
        now = time.perf_counter()
        parent = parent if parent is not None else self._current.get()
        span = Span(name=name, trace_id=self.trace_id, span_id=self._new_id(8),
                    parent_id=parent.span_id if parent else None, start_time=self._wall(now),
                    start_offset_ms=self._offset_ms(now),
                    attributes={ATTRIBUTE_ALIASES.get(k, k): v for k, v in attributes.items()})
        span._perf = now  # type: ignore[attr-defined]
        span._parent = parent  # type: ignore[attr-defined]
        span._token = self._current.set(span)  # type: ignore[attr-defined]
        with self._lock:
            self.spans.append(span)  # stored now: an unfinished span is still visible
        return span

    def end_span(self, span: Span, status: str = "ok", status_message: str = "",
                 **attributes: Any) -> Span:
        """Close a span with ``ok`` or ``error``; restores its parent as the current span."""
        if span.ended:
            return span
        now = time.perf_counter()
        status = status.lower()
        if status not in ("ok", "error", "unset"):
            raise ValueError(f"status must be 'ok' or 'error', not {status!r}")
        for k, v in attributes.items():
            span.set_attribute(k, v)
        span.end_time = self._wall(now)
        started = getattr(span, "_perf", self._t0 + span.start_offset_ms / 1000.0)
        span.duration_ms = (now - started) * 1000.0
        span.status, span.status_message = status, status_message
        if self._current.get() is span:
            try:
                self._current.reset(span._token)  # type: ignore[attr-defined]
            except ValueError:  # ended in another context: fall back to the parent
                self._current.set(getattr(span, "_parent", None))
        return span

    @contextlib.contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Span]:
        """``with obs.span("turn", turn=3) as s:`` -- nested spans get this one as parent.

        An exception inside marks the span ``error`` (with ``error.type``) and propagates.
        """
        span = self.start_span(name, **attributes)
        try:
            yield span
        except BaseException as exc:
            code = exc.code if isinstance(exc, AgentError) else type(exc).__name__
            self.end_span(span, "error", str(exc), **{"error.type": code})
            raise
        else:
            self.end_span(span, "error" if span.status == "error" else "ok", span.status_message)

    def _child_span(self, name: str, duration_ms: float, start_perf: float | None,
                    parent: Span | None, attributes: dict[str, Any], error: str | None) -> Span:
        """A span for something that already happened (it lasted ``duration_ms``, ended now)."""
        parent = parent if parent is not None else self._current.get()
        end = time.perf_counter() if start_perf is None else start_perf + duration_ms / 1000.0
        start = end - duration_ms / 1000.0
        span = Span(name=name, trace_id=self.trace_id, span_id=self._new_id(8),
                    parent_id=parent.span_id if parent else None, start_time=self._wall(start),
                    end_time=self._wall(end), start_offset_ms=self._offset_ms(start),
                    duration_ms=float(duration_ms), status="error" if error else "ok",
                    status_message=error or "", attributes=attributes)
        with self._lock:
            self.spans.append(span)
        return span

    # -- calls
    def price(self, model: str) -> dict[str, float] | None:
        """The model's price per 1M tokens, or None (with one ``PricingWarning`` per model)."""
        price = self.pricing.get(model)
        if price is None and model not in self._warned:
            self._warned.add(model)
            warnings.warn(f"no price for model {model!r} in the pricing table; cost is unknown "
                          f"(add it to data/pricing.json or pass pricing=)", PricingWarning,
                          stacklevel=3)
        return price

    def record_llm_call(self, *, model: str | None = None, prompt_tokens: int = 0,
                        completion_tokens: int = 0, duration_ms: float = 0.0,
                        turn: int | None = None, error_code: str | None = None,
                        start_perf: float | None = None, parent: Span | None = None,
                        **attributes: Any) -> Span:
        """Record one model call (its tokens, latency, cost) as a child span of the current one."""
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
        """Record one tool execution as a child span of the current one."""
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

    # -- derived views
    def tool_latencies(self) -> dict[str, list[float]]:
        """``{tool name: [duration_ms, ...]}`` in call order."""
        out: dict[str, list[float]] = {}
        for t in self.tool_calls:
            out.setdefault(t.name, []).append(t.duration_ms)
        return out

    def per_turn(self) -> list[dict[str, Any]]:
        """Tokens, cost and calls per turn (calls recorded without a turn are left out)."""
        rows: dict[int, dict[str, Any]] = {}
        for c in self.llm_calls:
            if c.turn is None:
                continue
            r = rows.setdefault(c.turn, {"turn": c.turn, "prompt_tokens": 0, "completion_tokens": 0,
                                         "cost_usd": 0.0, "llm_calls": 0, "tool_calls": 0})
            r["prompt_tokens"] += c.prompt_tokens
            r["completion_tokens"] += c.completion_tokens
            r["llm_calls"] += 1
            r["cost_usd"] = None if r["cost_usd"] is None or c.cost_usd is None \
                else r["cost_usd"] + c.cost_usd
        for t in self.tool_calls:
            if t.turn is not None and t.turn in rows:
                rows[t.turn]["tool_calls"] += 1
        return [rows[k] for k in sorted(rows)]

    def _turn_count(self) -> int:
        turns = {s.attributes.get("agentlab.turn", s.span_id) for s in self.spans if s.name == "turn"}
        turns |= {c.turn for c in self.llm_calls if c.turn is not None}
        turns |= {t.turn for t in self.tool_calls if t.turn is not None}
        return len(turns) or sum(1 for e in self.events if e["name"] == "turn_start")

    def duration_ms(self) -> float:
        if self._frozen_duration_ms is not None:
            return self._frozen_duration_ms
        return ((self._t_end or time.perf_counter()) - self._t0) * 1000.0

    def generate_report(self) -> RunReport:
        """Summarise the run: tokens, cost, tool counts, success rate, latency percentiles."""
        llm, tools = list(self.llm_calls), list(self.tool_calls)
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
        status = self.final_status or ("running" if any(not s.ended for s in self.spans)
                                       else "unknown")
        llm_ms = [c.duration_ms for c in llm]
        return RunReport(
            run_id=self.run_id, model=self.model, final_status=status,
            started_at=datetime.fromtimestamp(self._wall0, timezone.utc).isoformat(),
            duration_ms=self.duration_ms(), turns=self._turn_count(), llm_calls=len(llm),
            llm_errors=sum(1 for c in llm if c.error_code), total_prompt_tokens=prompt,
            total_completion_tokens=completion, total_tokens=prompt + completion,
            cost_usd=None if unpriced else sum(c.cost_usd or 0.0 for c in llm),
            unpriced_models=unpriced, tool_calls=len(tools), tools_called=called,
            tool_failures=failed,
            tool_success_rate=(sum(t.success for t in tools) / len(tools)) if tools else None,
            tool_latency_ms={k: _latency_stats(v) for k, v in self.tool_latencies().items()},
            llm_latency_ms=_latency_stats(llm_ms) if llm_ms else {},
            errors=errors, spans=len(self.spans), events=len(self.events))

    # -- exports (in ``agentlab.observe.export``)
    def export_json(self, indent: int | None = None) -> str:
        """Everything as JSON: the report, spans, calls, events, metrics (``from_json`` reads it).

        ``indent=2`` for reading by eye (about 4x slower on big runs: the pure-Python encoder).
        """
        from .export import to_json
        return to_json(self, indent)

    @classmethod
    def from_json(cls, text: str, pricing: Any = None) -> "AgentObserver":
        """Rebuild an observer from ``export_json`` output (for plots and reports after the fact)."""
        from .export import from_json
        return from_json(cls, text, pricing)

    def export_prometheus_metrics(self) -> str:
        """The run's metrics in Prometheus text exposition format (version 0.0.4)."""
        from .export import to_prometheus
        return to_prometheus(self)

    def print_summary(self, file: TextIO | None = None) -> None:
        """A plain-text summary that reads the same in a terminal and a notebook."""
        from .export import print_summary
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
        from .export import to_otel
        return to_otel(self, tracer_provider)

    def __repr__(self) -> str:
        return (f"AgentObserver(run_id={self.run_id!r}, spans={len(self.spans)}, "
                f"llm_calls={len(self.llm_calls)}, tool_calls={len(self.tool_calls)})")


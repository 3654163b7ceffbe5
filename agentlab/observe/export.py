"""Exports of an ``AgentObserver``: JSON, Prometheus text, OpenTelemetry spans, a text summary.

Part of chapter 12 (``notebooks/12_observability.ipynb``). ``AgentObserver.export_json``,
``from_json``, ``export_prometheus_metrics``, ``export_otel`` and ``print_summary`` call these
functions; use the methods. They read an observer through its public attributes only (``obs``
is an ``AgentObserver``; this module does not import it, the observer imports this one).

- JSON: everything recorded (report, spans, calls, events, metrics), readable back with
  ``AgentObserver.from_json``;
- Prometheus text exposition format 0.0.4: ``agentlab_``-prefixed names, ``HELP`` and
  ``TYPE`` lines, escaped label values, tool and model names as labels, latency summaries.
  Valid for any names: a metric or label name that had to be sanitised gets a short hash of
  the original (``queue.depth`` -> ``agentlab_queue_depth_1a2b3c4d``), so two names never
  collapse into one (``a.b`` and ``a_b`` stay two labels; two non-ASCII names stay two
  metrics), and a ``record_metric`` name that would clash with one of the export's own
  families (``run_turns``) gets the hash too instead of a second ``TYPE`` line;
- OpenTelemetry: the spans replayed through the SDK's tracer (extra ``otel``), parents first,
  with their real start and end times and the GenAI semantic-convention attributes.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import time
from typing import Any, TextIO

from ..errors import ConfigError
from ..redaction import redact, redact_text
from ..timeouts import percentile
from .records import LLMCallRecord, MetricPoint, Span, ToolCallRecord

__all__ = ["to_json", "parse_json", "to_prometheus", "to_otel", "print_summary"]


def _record_dict(record: Any) -> dict[str, Any]:
    return {f: getattr(record, f) for f in record.__dataclass_fields__}


def to_json(obs: Any, indent: int | None = None) -> str:
    """Everything as JSON: the report, spans, calls, events, metrics (``from_json`` reads it).

    ``indent=2`` for reading by eye (about 4x slower on big runs: the pure-Python encoder).
    """
    doc = {"format": "agentlab.observe/1", "run_id": obs.run_id, "model": obs.model,
           "trace_id": obs.trace_id, "started_at": obs.start_time,
           "final_status": obs.final_status, "duration_ms": obs.duration_ms(),
           "report": obs.generate_report().to_dict(),
           "spans": [s.to_dict() for s in obs.spans],
           "llm_calls": [_record_dict(c) for c in obs.llm_calls],
           "tool_calls": [_record_dict(t) for t in obs.tool_calls],
           "events": obs.events, "metrics": [_record_dict(m) for m in obs.metrics]}
    return json.dumps(redact(doc), ensure_ascii=False, indent=indent, default=str)  # no secrets


def parse_json(text: str) -> dict[str, Any]:
    """The document of ``to_json`` with its spans, calls and metrics as records again."""
    doc = json.loads(text)
    doc["spans"] = [Span(**s) for s in doc["spans"]]
    doc["llm_calls"] = [LLMCallRecord(**c) for c in doc["llm_calls"]]
    doc["tool_calls"] = [ToolCallRecord(**t) for t in doc["tool_calls"]]
    doc["metrics"] = [MetricPoint(**m) for m in doc["metrics"]]
    return doc


def to_prometheus(obs: Any) -> str:
    """The run's metrics in Prometheus text exposition format (version 0.0.4)."""
    fams: list[tuple[str, str, str, list[tuple[str, dict, float]]]] = []

    def family(name: str, kind: str, help_: str, samples: list[tuple[str, dict, float]]):
        if samples:
            fams.append((name, kind, help_, samples))

    llm_calls: dict[tuple, float] = {}
    tokens: dict[tuple, float] = {}
    cost: dict[str, float] = {}
    for c in obs.llm_calls:
        key = (c.model, "error" if c.error_code else "ok")
        llm_calls[key] = llm_calls.get(key, 0) + 1
        for typ, n in (("input", c.prompt_tokens), ("output", c.completion_tokens)):
            tokens[(c.model, typ)] = tokens.get((c.model, typ), 0) + n
        if c.cost_usd is not None:
            cost[c.model] = cost.get(c.model, 0.0) + c.cost_usd
    family("agentlab_run_info", "gauge", "Run identity (value is always 1).",
           [("", {"run_id": obs.run_id, "model": obs.model,
                  "status": obs.final_status or "running"}, 1)])
    family("agentlab_run_duration_seconds", "gauge", "Wall time of the run so far.",
           [("", {}, obs.duration_ms() / 1000.0)])
    family("agentlab_run_turns", "gauge", "Turns of the run.", [("", {}, obs.turn_count())])
    family("agentlab_llm_calls_total", "counter", "Model calls by model and outcome.",
           [("", {"model": m, "status": s}, v) for (m, s), v in llm_calls.items()])
    family("agentlab_llm_tokens_total", "counter", "Tokens by model and direction.",
           [("", {"model": m, "type": t}, v) for (m, t), v in tokens.items()])
    family("agentlab_llm_cost_usd_total", "counter", "Estimated cost in USD of priced models.",
           [("", {"model": m}, v) for m, v in cost.items()])
    tool_calls: dict[tuple, float] = {}
    for t in obs.tool_calls:
        key = (t.name, "success" if t.success else "failure")
        tool_calls[key] = tool_calls.get(key, 0) + 1
    family("agentlab_tool_calls_total", "counter", "Tool executions by tool and outcome.",
           [("", {"tool": n, "status": s}, v) for (n, s), v in tool_calls.items()])
    errs: dict[tuple, float] = {}
    for t in obs.tool_calls:
        if t.error_code:
            errs[(t.name, t.error_code)] = errs.get((t.name, t.error_code), 0) + 1
    family("agentlab_tool_errors_total", "counter", "Failed tool executions by error code.",
           [("", {"tool": n, "error_code": e}, v) for (n, e), v in errs.items()])
    for fam, help_, groups in (
            ("agentlab_tool_duration_seconds", "Tool latency.",
             {("tool", k): v for k, v in obs.tool_latencies().items()}),
            ("agentlab_llm_duration_seconds", "Model call latency.",
             _group([(("model", c.model), c.duration_ms) for c in obs.llm_calls]))):
        samples = []
        for (label, key), ms in groups.items():
            secs = [x / 1000.0 for x in ms]
            for q, pct in (("0.5", 50), ("0.95", 95), ("0.99", 99)):
                samples.append(("", {label: key, "quantile": q}, percentile(secs, pct)))
            samples.append(("_sum", {label: key}, sum(secs)))
            samples.append(("_count", {label: key}, len(secs)))
        family(fam, "summary", help_, samples)
    fams.extend(_recorded_families(obs.metrics, fams))
    lines = []
    for name, kind, help_, samples in fams:
        lines.append(f"# HELP {name} {_escape_help(help_)}")
        lines.append(f"# TYPE {name} {kind}")
        for suffix, labels, value in samples:
            lab = ",".join(f'{_label_name(k)}="{_escape_label(v)}"' for k, v in labels.items())
            lines.append(f"{name}{suffix}{'{' + lab + '}' if lab else ''} {_num(value)}")
    return redact_text("\n".join(lines) + "\n")  # a key in a label value never leaves


def print_summary(obs: Any, file: TextIO | None = None) -> None:
    """A plain-text summary that reads the same in a terminal and a notebook."""
    r = obs.generate_report()
    out = file if file is not None else sys.stdout
    cost = "unknown (no price for " + ", ".join(r.unpriced_models) + ")" \
        if r.cost_usd is None else f"${r.cost_usd:.4f}"
    rate = "-" if r.tool_success_rate is None else f"{r.tool_success_rate:.0%}"
    lines = [f"Agent run {r.run_id}  model {r.model}  status {r.final_status}",
             f"  duration   {r.duration_ms:.1f} ms over {r.turns} turns, {r.llm_calls} model calls"
             f" ({r.llm_errors} failed)",
             f"  tokens     {r.total_prompt_tokens:,} in + {r.total_completion_tokens:,} out"
             f" = {r.total_tokens:,}",
             f"  cost       {cost}",
             f"  tools      {r.tool_calls} calls, {rate} succeeded"]
    if r.tool_latency_ms:
        shown = {k: k if k.isprintable() else repr(k) for k in r.tool_latency_ms}
        width = max(len("tool"), *(len(v) for v in shown.values()))
        lines.append(f"    {'tool':<{width}}  calls  failed  {'p50':>10}  {'p95':>10}")
        for name, st in r.tool_latency_ms.items():
            lines.append(f"    {shown[name]:<{width}}  {st['count']:>5}  {r.tool_failures.get(name, 0):>6}"
                         f"  {st['p50']:>7.1f} ms  {st['p95']:>7.1f} ms")
    if r.errors:
        lines.append("  errors     " + ", ".join(f"{k} x{v}" for k, v in r.errors.items()))
    print(redact_text("\n".join(lines)), file=out)


def to_otel(obs: Any, tracer_provider: Any = None) -> list[Any]:
    """Replay the spans through the OpenTelemetry SDK; returns the OTel spans, parents first.

    ``tracer_provider``: an ``opentelemetry.sdk.trace.TracerProvider`` (e.g. with an
    ``InMemorySpanExporter`` or an OTLP exporter); the global provider when omitted.
    Needs ``pip install 'agentlab[otel]'`` (``opentelemetry-sdk``).
    """
    try:  # the optional otel extra
        from opentelemetry import context as otel_context  # lazy: heavy
        from opentelemetry import trace  # lazy: heavy
        from opentelemetry.trace import Status, StatusCode  # lazy: heavy
        import opentelemetry.sdk.trace  # noqa: F401  # lazy: heavy (the SDK, not only the API)
    except ImportError:
        raise ConfigError("otel_not_installed", "export_otel needs the OpenTelemetry SDK: "
                          "pip install 'agentlab[otel]' (or opentelemetry-sdk)") from None
    provider = tracer_provider or trace.get_tracer_provider()
    tracer = provider.get_tracer("agentlab.observe")
    by_id: dict[str, Any] = {}
    exported = []
    now = time.time()
    ordered = _parents_first(obs)
    for s in ordered:
        parent = by_id.get(s.parent_id) if s.parent_id else None
        ctx = trace.set_span_in_context(parent) if parent is not None else otel_context.Context()
        attrs = {k: _otel_value(v) for k, v in redact(s.attributes).items() if v is not None}
        attrs.update({"agentlab.run_id": obs.run_id, "agentlab.span_id": s.span_id})
        o = tracer.start_span(s.name, context=ctx, attributes=attrs,
                              start_time=int(s.start_time * 1e9))
        for e in s.events:
            event_attrs = redact(e["attributes"])
            o.add_event(e["name"], {k: _otel_value(v) for k, v in event_attrs.items()},
                        timestamp=int(e["time"] * 1e9))
        if s.status == "ok":
            o.set_status(Status(StatusCode.OK))
        elif s.status == "error":
            o.set_status(Status(StatusCode.ERROR, redact_text(s.status_message or "") or None))
        by_id[s.span_id] = o
        exported.append(o)
    for s, o in zip(ordered, exported):
        o.end(end_time=int((s.end_time if s.end_time is not None else now) * 1e9))
    return exported


def _parents_first(obs: Any) -> list[Span]:
    """Spans ordered by depth, then start: every parent comes before its children."""
    by_id = {s.span_id: s for s in obs.spans}

    def depth(s: Span) -> int:
        d, seen = 0, set()
        while s.parent_id in by_id and s.span_id not in seen:
            seen.add(s.span_id)
            s, d = by_id[s.parent_id], d + 1
        return d
    return sorted(obs.spans, key=lambda s: (depth(s), s.start_offset_ms))


# ---------------------------------------------------------------- text-format helpers
def _group(pairs: list[tuple[tuple[str, str], float]]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = {}
    for key, v in pairs:
        out.setdefault(key, []).append(v)
    return out


_SUFFIXES = ("", "_sum", "_count", "_total", "_created", "_bucket", "_info")


def _recorded_families(metrics: list, builtin: list) -> list[tuple[str, str, str, list]]:
    """One gauge family per ``record_metric`` name (latest value per label set), named so it
    clashes with no family (or sample name) of the export's own."""
    # a parser names counter ``x_total``'s family ``x`` (OpenMetrics): the stems are taken too
    stems = {stem for name, *_ in builtin
             for stem in (name, *(name[:-len(s)] for s in _SUFFIXES if s and name.endswith(s)))}
    taken = {stem + suffix for stem in stems for suffix in _SUFFIXES}
    names: dict[str, str] = {}
    latest: dict[str, dict[tuple, float]] = {}
    for m in metrics:
        if m.name not in names:
            name = _metric_name(m.name)
            while name in taken:  # e.g. record_metric("run_turns"): not a second TYPE line
                name = f"{name}_{_digest(name + m.name)}"
            taken.update(name + suffix for suffix in _SUFFIXES)
            names[m.name] = name
        latest.setdefault(names[m.name], {})[tuple(sorted(m.labels.items()))] = m.value
    return [(name, "gauge", "Recorded with AgentObserver.record_metric (latest value).",
             [("", dict(labels), v) for labels, v in series.items()])
            for name, series in latest.items()]


def _digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def _metric_name(name: str) -> str:
    """A valid Prometheus metric name: ``[a-zA-Z_:][a-zA-Z0-9_:]*``, prefixed ``agentlab_``,
    with a hash of ``name`` when characters had to be replaced (so it stays unique)."""
    clean = re.sub(r"[^a-zA-Z0-9_]", "_", name).strip("_") or "metric"
    if clean != name:
        clean = f"{clean}_{_digest(name)}"
    return clean if clean.startswith("agentlab_") else f"agentlab_{clean}"


def _label_name(name: str) -> str:
    """A valid label name (``[a-zA-Z_][a-zA-Z0-9_]*``, no leading ``__``), with a hash of
    ``name`` when it had to change: ``a.b`` and ``a_b`` stay two labels."""
    name = str(name)
    clean = re.sub(r"[^a-zA-Z0-9_]", "_", name).lstrip("_")  # "__" is reserved for Prometheus
    if not clean or clean[0].isdigit():
        clean = "l_" + clean
    return clean if clean == name else f"{clean}_{_digest(name)}"


def _escape_label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _num(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "NaN"
    if isinstance(value, float) and math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


def _otel_value(v: Any) -> Any:
    if isinstance(v, (str, bool, int, float)):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return list(v)
    return json.dumps(v, default=str)

"""Chapter 12 — observability: spans, metrics, cost, and their exports.

Taught in ``notebooks/12_observability.ipynb``:

- ``observer.py``: ``AgentObserver`` (model and tool calls, cost, metrics, report, exports);
- ``spans.py``: ``SpanRecorder``, the nested, timed spans and events it records;
- ``records.py``: the records (``Span``, ``LLMCallRecord``, ``ToolCallRecord``, ``RunReport``);
- ``report.py``: what the records add up to; ``export.py``: JSON, Prometheus text,
  OpenTelemetry and the printed summary;
- ``tracer.py``: ``RuntimeTracer``, attached to an ``AgentRuntime`` from outside, which records
  its runs from the hook events.
"""
from .observer import PRICING_PATH, AgentObserver, PricingWarning, load_pricing, percentile
from .records import LLMCallRecord, MetricPoint, RunReport, Span, ToolCallRecord
from .spans import SpanRecorder
from .tracer import RuntimeTracer, attach

__all__ = ["Span", "MetricPoint", "LLMCallRecord", "ToolCallRecord", "RunReport",
           "AgentObserver", "PricingWarning", "load_pricing", "percentile", "PRICING_PATH",
           "SpanRecorder", "RuntimeTracer", "attach"]

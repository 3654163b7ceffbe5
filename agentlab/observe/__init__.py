"""Chapter 12 — observability: spans, metrics, cost, and their exports.

Taught in ``notebooks/12_observability.ipynb``:

- ``observer.py``: ``AgentObserver`` and its records (spans, LLM and tool calls, ``RunReport``);
- ``export.py``: JSON, Prometheus text, OpenTelemetry and the printed summary;
- ``tracer.py``: ``RuntimeTracer``, which records an ``AgentRuntime`` run from its hook events.
"""
from .observer import (PRICING_PATH, AgentObserver, LLMCallRecord, MetricPoint, PricingWarning,
                       RunReport, Span, ToolCallRecord, load_pricing, percentile)

__all__ = ["Span", "MetricPoint", "LLMCallRecord", "ToolCallRecord", "RunReport",
           "AgentObserver", "PricingWarning", "load_pricing", "percentile", "PRICING_PATH"]

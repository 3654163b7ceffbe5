"""An observer written the way the article writes it, defects included.

Shown and measured in ``notebooks/12_observability.ipynb`` and ``benchmarks/bench_checkpoints.py``
beside ``agentlab.observe.AgentObserver``. Do not use it for real runs. Its defects:

- ``start_span`` builds a span and pushes its id, but never stores the span: ``end_span`` looks
  for it in ``traces``, finds nothing, and every exported trace is empty;
- one span stack per observer, shared by all threads (parallel tools get each other's parents);
- prices are hard-coded in the class (gpt-4o at its 2024 launch price, $5/$15 per 1M tokens),
  and a model missing from them is silently charged as gpt-4o;
- the "Prometheus" export prints metric names with dots (``llm.tokens.prompt``), no HELP/TYPE
  lines and unescaped labels: a Prometheus server rejects it;
- durations and the tool's name are packed into the metric name (``tool.web_search.duration``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["NaiveObserver", "NaiveSpan"]


@dataclass
class NaiveSpan:
    span_id: str
    name: str
    parent_span_id: str | None = None
    start_time: float = 0.0
    end_time: float = 0.0
    status: str = "UNSET"
    attributes: dict = field(default_factory=dict)


class NaiveObserver:
    """Article-style observer: spans never stored, prices in code, dotted metric names."""

    PRICING = {  # USD per token, frozen in code
        "gpt-4o": {"prompt": 5e-6, "completion": 15e-6},
        "gpt-4-turbo": {"prompt": 10e-6, "completion": 30e-6},
        "gpt-3.5-turbo": {"prompt": 0.5e-6, "completion": 1.5e-6},
    }

    def __init__(self, run_id: str, model: str = "gpt-4o") -> None:
        self.run_id = run_id
        self.model = model
        self.start_time = time.monotonic()
        self.metrics: list[dict] = []
        self.traces: list[NaiveSpan] = []
        self.events: list[dict] = []
        self._span_stack: list[str] = []

    def record_metric(self, name, value, labels=None):
        self.metrics.append({"name": name, "value": value, "labels": labels or {}})

    def record_event(self, event_type, message, **kw):
        self.events.append({"type": event_type, "message": message, **kw})

    def start_span(self, span_id, name, attributes=None) -> NaiveSpan:
        parent = self._span_stack[-1] if self._span_stack else None
        span = NaiveSpan(span_id, name, parent, time.monotonic(), attributes=attributes or {})
        self._span_stack.append(span_id)
        return span  # never appended to self.traces

    def end_span(self, span_id, status="OK"):
        if self._span_stack and self._span_stack[-1] == span_id:
            self._span_stack.pop()
        for span in self.traces:  # always empty
            if span.span_id == span_id:
                span.end_time, span.status = time.monotonic(), status

    def record_llm_call(self, prompt_tokens, completion_tokens):
        price = self.PRICING.get(self.model, self.PRICING["gpt-4o"])  # unknown -> gpt-4o
        self.record_metric("llm.tokens.prompt", prompt_tokens)
        self.record_metric("llm.tokens.completion", completion_tokens)
        self.record_metric("llm.cost", prompt_tokens * price["prompt"]
                           + completion_tokens * price["completion"])

    def record_tool_call(self, tool_name, duration_ms, success=True, error=""):
        self.record_metric(f"tool.{tool_name}.duration", duration_ms)
        self.record_metric("tool.success", 1.0 if success else 0.0)

    def total_cost(self) -> float:
        return sum(m["value"] for m in self.metrics if m["name"] == "llm.cost")

    def export_prometheus_metrics(self) -> str:
        lines = []
        for m in self.metrics:
            labels = ",".join(f'{k}="{v}"' for k, v in m["labels"].items())
            lines.append(f"{m['name']}{{{labels}}} {m['value']}" if labels
                         else f"{m['name']} {m['value']}")
        return "\n".join(lines)

"""What an ``AgentObserver`` records: spans, metric points, call records and the run report.

Part of chapter 12 (``notebooks/12_observability.ipynb``). Plain dataclasses, so the observer
(``observer.py``) and the exports (``export.py``) share them without depending on each other.

Attribute names follow the OpenTelemetry GenAI semantic conventions where one exists
(``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.output_tokens``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``);
agentlab's own are prefixed ``agentlab.`` (``agentlab.turn``, ``agentlab.cost_usd``).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

__all__ = ["ATTRIBUTE_ALIASES", "Span", "MetricPoint", "LLMCallRecord", "ToolCallRecord",
           "RunReport", "token_count", "duration_value"]

#: Short keyword names accepted by ``span(**attributes)`` and the attribute each one becomes.
ATTRIBUTE_ALIASES = {"model": "gen_ai.request.model", "tool": "gen_ai.tool.name",
                     "turn": "agentlab.turn", "error_code": "error.type",
                     "tool_call_id": "gen_ai.tool.call.id"}


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
    """One model call as recorded (``AgentObserver.record_llm_call``); ``cost_usd`` None: unpriced."""

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
    """One tool execution as recorded (``AgentObserver.record_tool_call``)."""

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


def token_count(name: str, value: Any) -> int:
    """A token count for a record: ``None`` is 0 (the provider reported no usage), anything
    else must be a whole number >= 0 (else ``ConfigError`` naming ``name``)."""
    if type(value) is int and value >= 0:  # the common case, checked first
        return value
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0 or value != int(value):
        raise ConfigError("invalid_argument", f"{name} must be a whole number of tokens >= 0 "
                          f"(or None when the provider reported no usage), not {value!r}")
    return int(value)


def duration_value(value: Any) -> float:
    """A duration in ms for a record: a finite number >= 0 (else ``ConfigError``)."""
    if type(value) is float and 0.0 <= value < math.inf:  # the common case, checked first
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise ConfigError("invalid_argument", f"duration_ms must be a number of milliseconds "
                          f">= 0, not {value!r}")
    return float(value)

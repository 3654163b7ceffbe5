"""The records of a run (chapters 06-08): ``RunState``, ``RuntimeConfig``, ``AgentResult``.

Kept apart from the loop (``agentlab.runtime``, which re-exports them) so that both stay short.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

from ..errors import ConfigError
from ..knobs import positive_int, positive_number

__all__ = ["RunState", "RuntimeConfig", "AgentResult"]


class RunState(str, Enum):
    """Where a run is. Every run ends in one of the terminal states (all but IDLE and RUNNING).

    ``PAUSED`` is terminal *for now*: ``run()`` returned and holds no thread or worker, but the
    run is not over. It waits for a human to ``approve``/``reject`` the calls listed in
    ``AgentResult.pending_approvals`` (chapter 13, ``agentlab.approval``, a gate); then
    ``run(task, resume_from=...)`` continues it from its checkpoint.
    """

    IDLE = "idle"
    RUNNING = "running"
    FINISHED = "finished"      # the model answered in plain text
    EXHAUSTED = "exhausted"    # a budget ran out: max_turns, max_total_time, output length
    CANCELLED = "cancelled"    # cancel() was called
    ERROR = "error"            # the model failed, a loop was detected, or something broke
    PAUSED = "paused"          # waiting for approval (terminal for now: resume to continue)

    @property
    def terminal(self) -> bool:
        return self not in (RunState.IDLE, RunState.RUNNING)


@dataclass
class RuntimeConfig:
    """Limits and switches of a run (the article's five fields, then ours).

    Args:
        max_turns: model calls allowed per run.
        max_total_time: the run's deadline in seconds (bounds model calls and tools too).
        parallel_tool_calls: run the calls of one turn in parallel.
        loop_detection_window, loop_detection_threshold: see ``agentlab.runtime.loop_guard``.
        step_timeout: upper bound in seconds on one model call (None: only the deadline).
            It must be a positive number: 0 would cut every call before it starts, so it is
            refused rather than read as "no limit" (that is None).
        tool_timeout: default per-tool timeout of the executor built by the runtime.
        max_workers: threads of that executor.
        temperature: sent with every model call.
        max_cost_usd: the run's budget in US dollars, priced from the model table; the run
            ends EXHAUSTED (``cost_budget``) before a model call whose worst case (prompt +
            the output cap) could exceed it (``agentlab.runtime.cost``). None: no cap.

    Every limit is checked on construction: ``ConfigError("invalid_config")`` for 0 where a
    positive value is needed, negatives, inf (use None where "no limit" is allowed), NaN, None
    where a number is needed, and bools.
    """

    max_turns: int = 20
    max_total_time: float = 300.0
    parallel_tool_calls: bool = True
    loop_detection_window: int = 4
    loop_detection_threshold: int = 3
    step_timeout: float | None = None
    tool_timeout: float = 30.0
    max_workers: int = 4
    temperature: float = 0.0
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        positive_int("max_turns", self.max_turns)
        positive_number("max_total_time", self.max_total_time)
        positive_number("step_timeout", self.step_timeout, allow_none=True)
        positive_number("max_cost_usd", self.max_cost_usd, allow_none=True)
        positive_number("tool_timeout", self.tool_timeout)
        positive_int("max_workers", self.max_workers)
        positive_int("loop_detection_window", self.loop_detection_window, minimum=2)
        positive_int("loop_detection_threshold", self.loop_detection_threshold, minimum=2)


@dataclass
class AgentResult:
    """What a run produced and why it stopped.

    ``stopped_reason`` keeps the article's strings: ``completed``, ``max_turns (N)``,
    ``timeout (Ns)``, ``loop_detected``, ``cancelled``, ``exception: <Type>``; plus ``length``
    (the answer was cut at the model's output limit), ``awaiting_approval`` (``PAUSED``).
    ``errors`` holds ``AgentError.to_dict()`` records. ``turn_log`` has one entry per turn
    (timings in ms from the run's start, tokens). ``pending_approvals``: for a ``PAUSED`` run,
    the calls that wait for a decision, ``{"call_id", "tool", "arguments"}`` each.
    ``cost_usd``: what the run's tokens cost at the model table's prices (None when the model
    has none); ``stopped_reason`` ``cost_budget ($X)`` when ``max_cost_usd`` stopped it.
    """

    content: str
    turns: int = 0
    total_tokens: int = 0
    tool_calls_made: list[dict] = field(default_factory=list)
    duration_ms: float = 0.0
    stopped_reason: str = ""
    state: RunState = RunState.IDLE
    run_id: str = ""
    errors: list[dict] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    finish_reason: str = ""
    turn_log: list[dict] = field(default_factory=list)
    pending_approvals: list[dict] = field(default_factory=list)
    cost_usd: float | None = None

    @property
    def ok(self) -> bool:
        """True only for a clean completion (``FINISHED``)."""
        return self.state is RunState.FINISHED

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = self.state.value
        return d

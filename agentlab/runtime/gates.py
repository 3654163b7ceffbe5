"""Gates: the public way to end a run or pause a turn from outside the loop (chapter 06).

Taught in ``notebooks/06_runtime_loop.ipynb``. The loop asks its gates at two points of every
turn, in the order they were added:

- ``before_model(ctx)``: before a model call (a *safe point*: the history is complete);
- ``before_tools(ctx, calls)``: after the model asked for ``calls``, before any of them runs.

A gate answers ``None`` (go on), a ``Stop`` (end the run in that state: the loop answers the
turn's calls with "not executed" results first, so the history stays valid), or a ``Pause``
(end ``run()`` ``PAUSED``; before the tools, the turn is *held*: kept in ``RunContext.held_turn``
with what the pause waits for, and finished first when the run resumes). A ``Pause`` carries
the gate's own state, kept in ``RunContext.extensions[gate.name]``, which checkpoints save and
restore, so a paused run can continue in another process.

The runtime's own limits are gates too: ``Budgets`` (cancel, time, turns) and ``LoopGuard``;
``agentlab.runtime.cost.CostCap`` (``RuntimeConfig(max_cost_usd=...)``). A later chapter
attaches its own with ``runtime.add_gate(gate)`` -- chapter 13's approval (``agentlab.approval``)
pauses a turn whose calls wait for a human. The loop itself knows none of them by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Union

from ..errors import AgentError
from .context import RunContext
from .loop_guard import LoopDetector
from .types import RunState, RuntimeConfig

__all__ = ["Gate", "Stop", "Pause", "Verdict", "Budgets", "LoopGuard", "ask", "timeout_stop"]


class Stop(Exception):
    """End the run with ``state``, ``reason`` (``AgentResult.stopped_reason``) and an error.

    A gate returns one; the loop raises it (so a step deep in a turn can raise one too)."""

    def __init__(self, state: RunState, reason: str, error: AgentError | None = None) -> None:
        super().__init__(reason)
        self.state, self.reason, self.error = state, reason, error


@dataclass(frozen=True)
class Pause:
    """Pause the run (``RunState.PAUSED``, ``stopped_reason=reason``).

    ``pending``: what the run waits for (``AgentResult.pending_approvals``); ``state``: the
    gate's own state, kept in ``RunContext.extensions[gate.name]`` (JSON-able: checkpoints
    save it).
    """

    reason: str
    pending: list = field(default_factory=list)
    state: Any = None


Verdict = Union[Stop, Pause, None]


class Gate:
    """A gate: override one or both points; ``name`` keys its state in ``ctx.extensions``."""

    name = "gate"

    def before_model(self, ctx: RunContext) -> Verdict:
        return None

    def before_tools(self, ctx: RunContext, calls: list) -> Verdict:
        return None


def ask(gates: Iterable[Gate], point: str, ctx: RunContext, *args: Any) -> tuple[Gate, Verdict]:
    """The first gate (in order) that does not answer None at ``point``, with its verdict."""
    for gate in gates:
        verdict = getattr(gate, point)(ctx, *args)
        if verdict is not None:
            return gate, verdict
    return None, None  # type: ignore[return-value]


def timeout_stop(ctx: RunContext, limit: float) -> Stop:
    """The run's time budget ran out (``EXHAUSTED``, ``timeout (Ns)``)."""
    return Stop(RunState.EXHAUSTED, f"timeout ({limit}s)", AgentError(
        "deadline_exceeded", f"the run's time budget of {limit} s ran out at turn "
        f"{ctx.turns}; raise max_total_time or narrow the task", retryable=True))


class Budgets(Gate):
    """Cancel, the time budget and ``max_turns`` (of ``runtime.config``), before every model call."""

    name = "budgets"

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime

    def before_model(self, ctx: RunContext) -> Verdict:
        """Cancel first, then the deadline, then the turn count."""
        config: RuntimeConfig = self.runtime.config
        if ctx.cancel.is_set():
            return Stop(RunState.CANCELLED, "cancelled")
        if ctx.remaining() <= 0:
            return timeout_stop(ctx, config.max_total_time)
        limit = config.max_turns
        if ctx.turns >= limit:
            return Stop(RunState.EXHAUSTED, f"max_turns ({limit})", AgentError(
                "max_turns", f"the run used its {limit} model calls before the model "
                "answered; raise max_turns or narrow the task", retryable=True))
        return None


class LoopGuard(Gate):
    """Stops a model that repeats its calls or cycles (``agentlab.runtime.loop_guard``)."""

    name = "loop_guard"

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self._run: str | None = None
        self._detector: LoopDetector | None = None

    def before_tools(self, ctx: RunContext, calls: list) -> Verdict:
        """One turn's calls into the run's window (a fresh one per run); a loop: ``Stop``."""
        if self._detector is None or self._run != ctx.run_id + str(ctx.started_at):
            self._run = ctx.run_id + str(ctx.started_at)  # a new run: a fresh window
            config: RuntimeConfig = self.runtime.config
            self._detector = LoopDetector(config.loop_detection_window,
                                          config.loop_detection_threshold)
        loop = self._detector.observe(calls)
        if loop is None:
            return None
        return Stop(RunState.ERROR, "loop_detected", AgentError(
            "loop_detected", f"stopped: {loop}. Change the approach or the task.",
            details={"turn": ctx.turns}))

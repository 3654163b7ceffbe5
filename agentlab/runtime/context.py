"""The seam between the loop and what plugs into it: ``RunContext`` and the hook events.

Taught in ``notebooks/06_runtime_loop.ipynb``; chapters 11 (checkpoints) and 12 (observability)
plug in here and nowhere else. The loop (``agentlab.runtime.loop``) owns a ``RunContext`` per
run and announces what happens as hook events; an extension (``agentlab.checkpoints.durable``,
``agentlab.observe.tracer``, or your own) attaches to a runtime from outside with three public
means, never by branches in the loop or writes to its private fields:

1. **Hooks** -- ``runtime.on(event, fn)``: ``fn(event_dict)`` for each event below; the run's
   state is ``runtime.context`` (this module's ``RunContext``) while hooks run. Hooks run in
   the order they were added (``"*"`` hooks included); a hook that raises is recorded in
   ``result.errors`` (``hook_failed``) and ignored. An extension may announce events of its
   own with ``runtime.emit(kind, **payload)`` after ``runtime.declare_events(kind)``; they go
   to that kind's hooks and to ``"*"`` hooks, and are not streamed.
2. **A wrapped executor** -- ``runtime.executor = Wrapper(runtime.executor)``: anything with
   ``run(batch)`` taking a ``ToolBatch`` (``agentlab.executor.batch``: calls, deadline, cancel,
   result callback, key prefix, approvals) and handing ``batch.replace(...)`` on, or a plain
   ``execute(calls, timeout=)`` / ``execute_parallel(calls, timeout=)`` executor; results
   in call order (``agentlab.runtime.protocols.Executor``).
3. **The resume phase** -- ``runtime.on_resume(fn)``: ``run(task, resume_from=ref)`` calls
   ``fn(context, ref)`` once, after the runtime is reserved for the run and before anything
   runs or is appended. ``fn`` restores the conversation (``runtime.messages.restore``) and
   the run's counters (``context.restore(...)``), or raises (an ``AgentError``): then the run
   does not start and ``run()`` raises it. With no ``fn`` registered, ``resume_from`` raises
   ``ConfigError``.
4. **Gates** -- ``runtime.add_gate(gate)`` (``agentlab.runtime.gates``): asked before each
   model call and before each turn's tools, a gate may end the run (``Stop``) or pause the
   turn (``Pause``) with state of its own, kept in ``RunContext.extensions[gate.name]``,
   which checkpoints save and restore. A turn paused before its tools is the *held turn*.

Hook events (payload keys besides ``type``), in the order a run fires them:

    run_start   run_id, input, resumed_from (None for a new run), turn (turns already done).
                The task (or the restored history) is in ``runtime.messages``.
    turn_start  turn
    llm_start   turn, messages (how many are sent)
    text        turn, content (one streamed delta; ``run_stream`` only)
    llm_end     turn, finish_reason, tool_calls, usage, duration_ms
    tool_start  turn, id, name, arguments
    tool_end    turn, id, name, ok, duration_ms, error_code, result (first 200 characters),
                replayed (True when the executor answered from a log instead of running it)
    turn_end    turn, tool_calls, duration_ms. A ``turn_end`` with ``tool_calls > 0`` is a
                *safe point*: every call of the turn has its result in the history.
    error       turn, code, message, retryable
    run_end     result (the ``AgentResult``; ``result.state`` is terminal)
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentError

__all__ = ["RunContext", "HOOK_EVENTS", "STREAM_EVENTS", "LAST_RUN_KEY", "idempotency_key"]


def idempotency_key(run_id: str, tool_call_id: str) -> str:
    """The key a side-effecting tool gets (``"<run_id>:<tool_call_id>"``): unique across runs
    even when a server numbers its calls ``call_0, call_1`` in every conversation, and the same
    for a call and its replay after a resume (chapter 11 keeps the run id)."""
    return f"{run_id}:{tool_call_id}"

#: Events a hook can subscribe to with ``AgentRuntime.on`` (``"*"`` subscribes to all).
HOOK_EVENTS = ("run_start", "turn_start", "llm_start", "text", "llm_end", "refusal",
               "tool_start", "tool_end", "turn_end", "error", "run_end")
#: Event types ``run_stream()`` yields.
STREAM_EVENTS = frozenset({"text", "refusal", "tool_start", "tool_end", "turn_start",
                           "turn_end", "error", "done"})
#: The state-store key under which the runtime keeps the last ``AgentResult`` (opt-in ``state=``).
LAST_RUN_KEY = "last_run"


def _zero_usage() -> dict[str, int]:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


@dataclass
class RunContext:
    """The state of one run: what the loop has done so far, and its clock.

    One per run (a result never mixes two runs); ``AgentRuntime.context`` is the current or
    last one. The loop writes it; hooks and extensions read it, and change it only through
    ``restore`` (the resume phase) and ``add_error``.

    Attributes:
        run_id: the run's identity; a resumed run keeps the one it started with.
        task: the user input the run was started for.
        started_at, deadline: ``time.monotonic()`` values; ``deadline - started_at`` is the
            time budget (``RuntimeConfig.max_total_time``).
        turns: model calls made so far (the turn counter).
        content / last_content: the final answer / the last text the model produced.
        tool_calls_made: one entry per tool call (turn, id, name, arguments, success,
            duration_ms, error_code, and timeout_s when the executor reports it).
        errors: ``AgentError.to_dict()`` records, in order.
        usage: prompt, completion and total tokens so far.
        turn_log: per turn: start/end ms from ``started_at``, model and tool ms, tokens.
        resumed_from: the checkpoint (or other reference) this run continued, else None.
        held_turn: a turn a gate paused before its tools: ``{"message": the assistant
            message, "pending": what the pause waits for}``; set when the run pauses, given
            back by ``restore`` on resume, and finished before the next model call.
        cancel: the runtime's cancel event (``AgentRuntime.cancel`` sets it).
        extensions: the gates' and extensions' own state, ``{name: JSON-able value}``
            (e.g. chapter 13's approval decisions); checkpoints save and restore it.
    """

    run_id: str
    task: str
    started_at: float
    deadline: float
    turns: int = 0
    content: str = ""
    last_content: str = ""
    finish_reason: str = ""
    tool_calls_made: list[dict] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=_zero_usage)
    turn_log: list[dict] = field(default_factory=list)
    resumed_from: str | None = None
    held_turn: dict | None = None
    extensions: dict[str, Any] = field(default_factory=dict)
    cancel: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    @classmethod
    def start(cls, task: str, budget_s: float,
              cancel: threading.Event | None = None) -> "RunContext":
        """A new run with a fresh id and ``budget_s`` seconds from now; ``cancel`` is the
        runtime's cancel event (set: the run stops at its next safe point)."""
        now = time.monotonic()
        return cls(run_id=str(uuid.uuid4()), task=task, started_at=now, deadline=now + budget_s,
                   cancel=cancel if cancel is not None else threading.Event())

    def elapsed_ms(self) -> float:
        """Milliseconds since the run started (including time used before a resume)."""
        return (time.monotonic() - self.started_at) * 1000

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once it passed)."""
        return self.deadline - time.monotonic()

    def restore(self, *, run_id: str, turns: int, usage: dict, elapsed_s: float,
                tool_calls_made: list[dict], resumed_from: str, task: str | None = None,
                held_turn: dict | None = None, extensions: dict | None = None) -> None:
        """Continue a saved run: same id, turn counter, token usage and time budget used.

        Called by the resume phase (``AgentRuntime.on_resume``); the clock moves back by
        ``elapsed_s``, so the deadline is where it was when the run was saved.
        """
        self.run_id, self.turns, self.resumed_from = run_id, int(turns), resumed_from
        self.task = self.task if task is None else task
        for key in self.usage:
            self.usage[key] = int((usage or {}).get(key) or 0)
        self.started_at -= float(elapsed_s)
        self.deadline -= float(elapsed_s)
        self.tool_calls_made = list(tool_calls_made)
        self.held_turn = held_turn
        self.extensions = dict(extensions or {})

    def add_error(self, error: AgentError) -> dict[str, Any]:
        """Record ``error`` (with the current turn in its details); returns the record."""
        record = error.to_dict()
        record["details"] = {**record.get("details", {}), "turn": self.turns}
        self.errors.append(record)
        return record

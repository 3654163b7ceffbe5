"""Human approval: a risky tool call waits for a person, and the run holds nothing meanwhile.

Taught in ``notebooks/13_fleet.ipynb`` (book chapter, 1.1: a durable runtime "can carry
approvals and long tasks"). A tool registered with ``requires_approval=True`` (or a policy
``fn(arguments) -> bool``, see ``ToolRegistry.register``) never runs before someone decides:

1. **Pause.** When the model asks for such a call, the whole turn is *held*: none of its calls
   runs, not even those that need no approval (so the turn's calls still run together and in
   the model's order, and nothing half-done needs undoing if the answer is no). ``run()``
   returns ``RunState.PAUSED`` with ``stopped_reason="awaiting_approval"`` and
   ``result.pending_approvals = [{"call_id", "tool", "arguments"}, ...]``. The held turn is in
   ``RunContext.held_turn``; with checkpoints attached (chapter 11) the run's last checkpoint
   keeps it (``metadata["held_turn"]``, ``saved_due_to="paused"``), so no process or worker
   has to wait.
2. **Decide.** ``runtime.approve(run_id, call_id)`` / ``runtime.reject(run_id, call_id,
   reason)`` (or ``record_decision(checkpoints, ...)`` from anywhere that reaches the store)
   write a new revision of that checkpoint with the decision in it: durable, and visible to
   any process. A decision is final: deciding the other way later is refused.
3. **Resume.** ``run(task, resume_from="latest" | checkpoint_id)`` restores the held turn and
   finishes it before the next model call: approved calls (and the turn's other calls) run
   once — through chapter 11's durable log, so a crash after they ran does not run them
   again — and a rejected call never runs: the model gets a tool result saying it was
   rejected, with the reason. Calls still undecided pause the run again.

The loop calls ``ApprovalSteps`` at two points (``_hold_for_approval`` before a turn's tools,
``_finish_held_turn`` before the first model call); ``ApprovalExecutor`` wraps the runtime's
executor, answers rejected calls and refuses any gated call that has no approval.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Iterable, Iterator

from ..errors import CheckpointError, ConfigError
from ..executor import ToolResult
from .context import RunContext
from .steps import StopRun
from .types import RunState

__all__ = ["ApprovalSteps", "ApprovalExecutor", "record_decision", "pending_approvals",
           "AWAITING_APPROVAL", "REJECTED"]

#: ``stopped_reason`` of a paused run.
AWAITING_APPROVAL = "awaiting_approval"
#: ``error_code`` of the tool result a rejected call gets.
REJECTED = "rejected"


@dataclass
class HeldCall:
    """One call of a held turn, rebuilt from its assistant message (like ``agentlab.llm.ToolCall``)."""

    id: str
    name: str
    arguments: dict = field(default_factory=dict)
    raw_arguments: str = ""
    parse_error: str | None = None


def held_calls(message: dict) -> list[HeldCall]:
    """The calls of an assistant ``tool_calls`` message, with their arguments parsed."""
    calls = []
    for tc in message.get("tool_calls") or []:
        raw = tc.get("function", {}).get("arguments") or ""
        try:
            args, error = (json.loads(raw) if raw.strip() else {}), None
        except ValueError as exc:
            args, error = {}, f"arguments are not JSON: {exc}"
        if not isinstance(args, dict):
            args, error = {}, "arguments are not a JSON object"
        calls.append(HeldCall(tc["id"], tc["function"]["name"], args, raw, error))
    return calls


def pending_approvals(registry: Any, calls: Iterable[Any], decisions: dict) -> list[dict]:
    """The calls that need a decision and have none: ``[{"call_id", "tool", "arguments"}]``."""
    needs = getattr(registry, "requires_approval", None)
    if needs is None:  # a registry without approvals (e.g. a test double)
        return []
    return [{"call_id": str(c.id), "tool": c.name, "arguments": c.arguments} for c in calls
            if str(c.id) not in decisions and needs(c.name, c.arguments)]


class ApprovalSteps:
    """The two steps the loop runs for approvals, and ``approve``/``reject`` (a base of
    ``AgentRuntime``; uses its ``TurnSteps``)."""

    def _hold_for_approval(self, ctx: RunContext, calls: list, asst: dict,
                           turn: dict) -> Iterator[dict]:
        """Pause before a turn whose calls include one that waits for a decision."""
        decisions = (ctx.held_turn or {}).get("decisions", {})
        pending = pending_approvals(self.registry, calls, decisions)
        if not pending:
            return
        ctx.held_turn = {"message": asst, "pending": pending, "decisions": decisions}
        yield from self._end_turn(ctx, turn, tool_calls=0)
        raise StopRun(RunState.PAUSED, AWAITING_APPROVAL)

    def _finish_held_turn(self, ctx: RunContext) -> Iterator[dict]:
        """Run the turn a resumed run was paused in (decided since), as any turn's tools."""
        if ctx.held_turn is None:
            return
        asst = ctx.held_turn["message"]
        calls = held_calls(asst)
        turn = {"turn": ctx.turns, "start_ms": ctx.elapsed_ms(), "tool_calls": 0,
                "prompt_tokens": 0, "completion_tokens": 0, "held": True}
        ctx.turn_log.append(turn)
        yield from self._hold_for_approval(ctx, calls, asst, turn)  # still undecided: pause
        results = yield from self._run_tools(ctx, calls, asst, turn)  # appends asst + results
        ctx.held_turn = None
        yield from self._end_turn(ctx, turn, tool_calls=len(results))

    def approve(self, run_id: str, call_id: str) -> dict:
        """Approve a paused run's call (durably, in its checkpoint store); see the module doc."""
        return record_decision(self._decision_store(), run_id, call_id, approved=True)

    def reject(self, run_id: str, call_id: str, reason: str = "") -> dict:
        """Reject a paused run's call: it never runs; the model is told, with ``reason``."""
        return record_decision(self._decision_store(), run_id, call_id, approved=False,
                               reason=reason)

    def _decision_store(self) -> Any:
        store = getattr(self, "checkpoints", None)
        if store is None:
            raise ConfigError("not_supported", "approve/reject need checkpoints= (chapter 11): "
                              "the decision is written to the paused run's checkpoint")
        return store


class ApprovalExecutor:
    """The runtime's executor, guarded: rejected calls get a rejection result, and a call that
    needs approval and has none is refused (``approval_required``) instead of run.

    ``execute`` and ``execute_parallel`` take the same options as the inner executor's
    (``functools.wraps`` gives them its signatures), so a wrapper around this one, such as
    chapter 11's ``DurableExecutor``, sees what the inner one offers (e.g. ``on_result``).
    """

    def __init__(self, inner: Any, runtime: Any) -> None:
        self.inner, self.runtime = inner, runtime
        for name in ("execute", "execute_parallel"):
            setattr(self, name, self._guarded(getattr(inner, name)))

    def __getattr__(self, name: str) -> Any:  # max_workers, results_to_messages, ...
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _guarded(self, run: Any) -> Any:
        @functools.wraps(run)
        def guarded(tool_calls: Iterable[Any], timeout: float | None = None, **options: Any) -> list:
            calls = list(tool_calls)
            answers = self._answers(calls)
            todo = [c for i, c in enumerate(calls) if i not in answers]
            ran = iter(run(todo, timeout=timeout, **options) if todo else [])
            for result in answers.values():
                if options.get("on_result") is not None:  # reported like the calls that ran
                    options["on_result"](result)
            return [answers[i] if i in answers else next(ran) for i in range(len(calls))]
        return guarded

    def _answers(self, calls: list) -> dict[int, ToolResult]:
        """Results for the calls that must not run: rejected, or gated without a decision."""
        ctx = self.runtime.context
        decisions = (ctx.held_turn or {}).get("decisions", {}) if ctx is not None else {}
        answers: dict[int, ToolResult] = {}
        for i, call in enumerate(calls):
            decision = decisions.get(str(call.id))
            if decision is not None and not decision["approved"]:
                answers[i] = _answer(call, REJECTED, "Rejected by a human reviewer"
                                     + (f": {decision['reason']}" if decision.get("reason") else "")
                                     + ". The call was not run; do not retry it unchanged.")
            elif decision is None and pending_approvals(self.runtime.registry, [call], {}):
                answers[i] = _answer(call, "approval_required", "Not executed: this call needs "
                                     "a human's approval first.")
        return answers


def _answer(call: Any, code: str, text: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, name=call.name, result=text, success=False,
                      error_code=code)


def record_decision(checkpoints: Any, run_id: str, call_id: str, *, approved: bool,
                    reason: str = "") -> dict:
    """Write a decision on a paused run's call into a new revision of its last checkpoint.

    ``checkpoints`` is a ``CheckpointManager`` (any backend: JSON, SQLite, Redis). Returns the
    decision ``{"approved", "reason", "decided_at"}``. Raises ``CheckpointError``
    (``checkpoint_not_found``) for an unknown run, and ``ConfigError`` with code
    ``not_paused`` (the run waits for nothing), ``approval_not_found`` (no such pending call;
    the message lists the pending ones) or ``already_decided`` (decided the other way).
    """
    rows = checkpoints.list_checkpoints(run_id)
    if not rows:
        raise CheckpointError("checkpoint_not_found", f"no checkpoint of run {run_id!r} in this "
                              "store; list_checkpoints() shows the runs it holds",
                              details={"run_id": run_id})
    cp = checkpoints.load(rows[-1]["id"])
    held = cp.metadata.get("held_turn")
    if cp.metadata.get("saved_due_to") != RunState.PAUSED.value or not held:
        raise ConfigError("not_paused", f"run {run_id!r} is not waiting for approval (its last "
                          f"checkpoint was saved due to {cp.metadata.get('saved_due_to')!r})",
                          details={"run_id": run_id})
    pending = {p["call_id"]: p for p in held["pending"]}
    if call_id not in pending:
        waiting = ", ".join(f"{c} ({p['tool']})" for c, p in pending.items())
        raise ConfigError("approval_not_found", f"run {run_id!r} has no call {call_id!r} waiting "
                          f"for approval; it waits for: {waiting}",
                          details={"run_id": run_id, "pending": list(pending)})
    decisions = dict(held.get("decisions") or {})
    earlier = decisions.get(call_id)
    if earlier is not None:
        if earlier["approved"] == approved:
            return earlier  # the same decision twice: nothing new to record
        raise ConfigError("already_decided", f"call {call_id!r} of run {run_id!r} was already "
                          f"{'approved' if earlier['approved'] else 'rejected'}; a decision is final",
                          details={"run_id": run_id, "call_id": call_id})
    decision = {"approved": bool(approved), "reason": str(reason),
                "decided_at": datetime.now(timezone.utc).isoformat()}
    decisions[call_id] = decision
    meta = {**cp.metadata, "held_turn": {**held, "decisions": decisions}, "decided": call_id}
    checkpoints.save(cp.turn, cp.messages, cp.state, cp.tool_calls_made, meta, run_id=run_id)
    return decision

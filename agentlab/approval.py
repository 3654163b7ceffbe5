"""Human approval: a risky tool call waits for a person, and the run holds nothing meanwhile.

Taught in ``notebooks/13_fleet.ipynb`` (book chapter, 1.1: a durable runtime "can carry
approvals and long tasks"). Chapter 13 attaches to the loop from outside, as a *gate*
(``agentlab.runtime.gates``) and an executor wrapper: ``AgentRuntime(..., extensions=[Approval()])``
or ``Approval().attach(runtime)``. A tool registered with ``requires_approval=True`` (or a
policy ``fn(arguments) -> bool``, see ``ToolRegistry.register``) never runs before someone
decides -- even without this module attached, the executor refuses such a call
(``approval_required``, chapter 03's preflight) unless its batch carries the approval.

1. **Pause.** When the model asks for such a call, the gate answers ``Pause``: the whole turn is
   *held*, none of its calls runs (so the turn's calls still run together and in the model's
   order, and nothing half-done needs undoing if the answer is no). ``run()`` returns
   ``RunState.PAUSED`` with ``stopped_reason="awaiting_approval"`` and
   ``result.pending_approvals = [{"call_id", "tool", "arguments"}, ...]``. With checkpoints
   attached (chapter 11) the run's last checkpoint keeps the held turn (``metadata["held_turn"]``)
   and the gate's state (``metadata["extensions"]["approval"]``), so no process has to wait.
2. **Decide.** ``runtime.approve(run_id, call_id)`` / ``runtime.reject(run_id, call_id, reason)``
   (or ``record_decision(checkpoints, ...)`` from anywhere that reaches the store) write a new
   revision of that checkpoint with the decision in it: durable, and visible to any process.
   A decision is final: deciding the other way later is refused.
3. **Resume.** ``run(task, resume_from="latest" | checkpoint_id)`` restores the held turn and
   the loop finishes it before the next model call, asking the gates again: approved calls
   (and the turn's other calls) run once -- through chapter 11's durable log, so a crash after
   they ran does not run them again -- and a rejected call never runs: ``ApprovalExecutor``
   answers it with a tool result saying it was rejected, with the reason. Calls still
   undecided pause the run again.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Iterable

from .errors import CheckpointError, ConfigError
from .executor import ToolResult
from .executor.batch import ExecutorWrapper, ToolBatch, run_batch
from .runtime.context import RunContext
from .runtime.gates import Gate, Pause, Verdict
from .runtime.types import RunState

__all__ = ["Approval", "ApprovalExecutor", "record_decision", "pending_approvals",
           "AWAITING_APPROVAL", "REJECTED"]

#: ``stopped_reason`` of a paused run.
AWAITING_APPROVAL = "awaiting_approval"
#: ``error_code`` of the tool result a rejected call gets.
REJECTED = "rejected"


def pending_approvals(registry: Any, calls: Iterable[Any], decisions: dict) -> list[dict]:
    """The calls that need a decision and have none: ``[{"call_id", "tool", "arguments"}]``
    (the arguments as the model sent them; ``requires_approval`` asks the policy about the
    validated ones, with the function's defaults)."""
    needs = getattr(registry, "requires_approval", None)
    if needs is None:  # a registry without approvals (e.g. a test double)
        return []
    return [{"call_id": str(c.id), "tool": c.name, "arguments": c.arguments} for c in calls
            if str(c.id) not in decisions
            and needs(c.name, c.arguments)]


class Approval(Gate):
    """The approval gate: pauses a turn whose calls wait for a human (see the module doc)."""

    name = "approval"

    def __init__(self) -> None:
        self.runtime: Any = None

    def attach(self, runtime: Any) -> "Approval":
        """Ask this gate at every turn of ``runtime`` and guard its executor."""
        self.runtime = runtime
        runtime.add_gate(self)
        runtime.executor = ApprovalExecutor(runtime.executor, self)
        return self

    def decisions(self, ctx: RunContext | None) -> dict:
        """``{call_id: {"approved", "reason", "decided_at"}}`` of the run's held turn."""
        if ctx is None:
            return {}
        older = (ctx.held_turn or {}).get("decisions") or {}  # checkpoints before the gates
        return {**older, **(ctx.extensions.get(self.name) or {}).get("decisions", {})}

    def before_tools(self, ctx: RunContext, calls: list) -> Verdict:
        decisions = self.decisions(ctx)
        pending = pending_approvals(self.runtime.registry, calls, decisions)
        if not pending:
            return None
        return Pause(AWAITING_APPROVAL, pending=pending, state={"decisions": decisions})

    def decide(self, run_id: str, call_id: str, *, approved: bool, reason: str = "") -> dict:
        """``record_decision`` in the runtime's checkpoint store (``approve``/``reject``)."""
        store = getattr(self.runtime, "checkpoints", None)
        if store is None:
            raise ConfigError("not_supported", "approve/reject need checkpoints= (chapter 11): "
                              "the decision is written to the paused run's checkpoint")
        return record_decision(store, run_id, call_id, approved=approved, reason=reason)


class ApprovalExecutor(ExecutorWrapper):
    """The runtime's executor, guarded: a rejected call gets a rejection result instead of
    running; the approved ones go on with their ids in ``batch.approved`` (without which the
    inner ``ToolExecutor`` refuses a gated call). Other attributes are the inner one's."""

    def __init__(self, inner: Any, approval: Approval) -> None:
        self.inner, self.approval = inner, approval

    def run(self, batch: ToolBatch) -> list:
        ctx = self.approval.runtime.context if self.approval.runtime is not None else None
        decisions = self.approval.decisions(ctx)
        answers = {i: _rejected(c, decisions[str(c.id)]) for i, c in enumerate(batch.calls)
                   if str(c.id) in decisions and not decisions[str(c.id)]["approved"]}
        todo = [c for i, c in enumerate(batch.calls) if i not in answers]
        approved = frozenset(k for k, d in decisions.items() if d["approved"])
        ran = iter(run_batch(self.inner, batch.replace(
            calls=todo, approved=batch.approved | approved)) if todo else [])
        for result in answers.values():
            batch.report(result)
        return [answers[i] if i in answers else next(ran) for i in range(len(batch.calls))]


def _rejected(call: Any, decision: dict) -> ToolResult:
    reason = f": {decision['reason']}" if decision.get("reason") else ""
    return ToolResult(str(call.id), call.name, f"Rejected by a human reviewer{reason}. The call "
                      "was not run; do not retry it unchanged.", False, 0.0, REJECTED)


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
    extensions = dict(cp.metadata.get("extensions") or {})
    state = dict(extensions.get(Approval.name) or {})
    decisions = {**(held.get("decisions") or {}), **(state.get("decisions") or {})}
    earlier = decisions.get(call_id)
    if earlier is not None:
        if earlier["approved"] == approved:
            return earlier  # the same decision twice: nothing new to record
        raise ConfigError("already_decided", f"call {call_id!r} of run {run_id!r} was already "
                          f"{'approved' if earlier['approved'] else 'rejected'}; a decision is final",
                          details={"run_id": run_id, "call_id": call_id})
    decision = {"approved": bool(approved), "reason": str(reason),
                "decided_at": datetime.now(timezone.utc).isoformat()}
    extensions[Approval.name] = {**state, "decisions": {**decisions, call_id: decision}}
    meta = {**cp.metadata, "extensions": extensions, "decided": call_id}
    checkpoints.save(cp.turn, cp.messages, cp.state, cp.tool_calls_made, meta, run_id=run_id)
    return decision

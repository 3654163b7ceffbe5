"""Replay a run read-only: logged tool results answer, a side effect waits for approval.

Taught in ``notebooks/16_time_travel.ipynb``. The book's chapter on runtimes (1.4): "replay is
read-only by default; to replay side effects, enter re-execution explicitly and authorise it
again". ``replay(cm, run_id, llm, registry)``:

1. reads the revision to start from (the run's first by default) and checks that the runtime
   built for the replay fits it (``compat.check_compatible``: task, tool snapshot, policy; a
   difference is an ``IncompatibleRunError`` unless ``allow=`` names its category);
2. runs the model again from there in a runtime of its own, whose checkpoints go to a scratch
   folder that is deleted afterwards: the store of ``cm`` is only read;
3. answers every tool call found in the source run's durable log (chapter 11's
   ``ToolResultLog.find``: by id, else by name and arguments) from the log, without running
   it; a call the log does not have runs if its tool is read-only, and if its tool has side
   effects (or chapter 13's approval policy gates it: ``requires_approval``), the turn is held
   by the ``ReplayGate`` *before any of its calls runs*: the replay
   ends ``PAUSED`` with ``stopped_reason="reexecution_required"`` and the calls in
   ``pending_approvals`` -- chapter 13's pause and its ``{"call_id", "tool", "arguments"}``
   records. Re-execution is authorised again by replaying with ``approve=[call ids]`` (or
   ``approve_all=True``): the calls then go on with their ids in the batch's ``approved`` set,
   as chapter 13's approved calls do, under the replay's own run id (a new idempotency key).

``ReplayOutcome`` counts what the replay answered from the log (``replayed``) and what it ran
(``executed``).
"""
from __future__ import annotations

import json
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..checkpoints import CheckpointManager, ReplayedResult
from ..checkpoints.run_ids import new_run_id
from ..executor import ToolExecutor, ToolResult
from ..executor.batch import ExecutorWrapper, ToolBatch, run_batch
from ..runtime import AgentRuntime, RuntimeConfig
from ..runtime.gates import Gate, Pause, Verdict
from .compat import CapabilitySnapshot, check_compatible
from .fork import lineage
from .history import load_revision

__all__ = ["replay", "ReplayOutcome", "ReplayGate", "ReplayExecutor", "REEXECUTION_REQUIRED"]

#: ``stopped_reason`` of a replay held before a side effect the log does not have.
REEXECUTION_REQUIRED = "reexecution_required"


@dataclass
class ReplayOutcome:
    """What a replay did: its result, calls answered from the log, calls it ran."""

    source_run_id: str
    result: Any
    replayed: int = 0
    executed: int = 0
    executed_calls: list[str] = field(default_factory=list)  # "tool(call_id)" the replay ran
    needs_approval: list[dict] = field(default_factory=list)

    @property
    def stopped(self) -> bool:
        """True when a side effect the log does not have held the replay (approve to go on)."""
        return self.result.stopped_reason == REEXECUTION_REQUIRED


class _Log:
    """The durable logs of a run and of its ancestors (a fork's prefix), read-only."""

    def __init__(self, cm: Any, run_id: str) -> None:
        self.cm, self.runs = cm, [link["run_id"] for link in lineage(cm, run_id)]
        self.claimed: set[str] = set()
        self.lock = threading.Lock()

    def find(self, call: Any, claim: bool) -> dict | None:
        with self.lock:
            for run in self.runs:
                rec = self.cm.find_tool_result(run, str(call.id), call.name, call.arguments,
                                               self.claimed)
                if rec is not None and _same_call(rec, call):
                    if claim:
                        self.claimed.add(rec["tool_call_id"])
                    return rec
        return None


def _same_call(rec: dict, call: Any) -> bool:
    """The log's record is of this very call: an id match alone is not enough in a replay
    (a scripted or real model may reuse an id for another call); secrets redacted in the
    record make it differ, which errs on the safe side (the call is treated as new)."""
    args = call.arguments if isinstance(call.arguments, dict) else None
    return rec["name"] == call.name and (rec.get("arguments") is None or
                                         json.dumps(rec["arguments"], sort_keys=True, default=str)
                                         == json.dumps(args, sort_keys=True, default=str))


class ReplayGate(Gate):
    """Holds a turn whose side-effecting calls are not in the log and not approved."""

    name = "replay"

    def __init__(self, log: _Log, registry: Any, approve: Iterable[str], approve_all: bool) -> None:
        self.log, self.registry = log, registry
        self.approved, self.approve_all = frozenset(map(str, approve)), approve_all

    def needs_approval(self, call: Any) -> bool:
        """Not in the log, not approved, and a side effect (or gated by chapter 13's policy)."""
        if self.approve_all or str(call.id) in self.approved or call.name not in self.registry:
            return False
        gated = self.registry.get_options(call.name).get("side_effects") \
            or self.registry.requires_approval(call.name, call.arguments)
        return bool(gated) and self.log.find(call, claim=False) is None

    def approved_ids(self, calls: list) -> frozenset:
        """The ids a batch may carry as approved: the ones named, or all with approve_all."""
        return frozenset(str(c.id) for c in calls if self.approve_all or str(c.id) in self.approved)

    def before_tools(self, ctx: Any, calls: list) -> Verdict:
        pending = [{"call_id": str(c.id), "tool": c.name, "arguments": c.arguments}
                   for c in calls if self.needs_approval(c)]
        return Pause(REEXECUTION_REQUIRED, pending=pending) if pending else None


class ReplayExecutor(ExecutorWrapper):
    """Answers logged calls from the log; runs the rest (approved ones marked approved)."""

    def __init__(self, inner: Any, log: _Log, gate: ReplayGate) -> None:
        self.inner, self.log, self.gate = inner, log, gate
        self.replayed, self.executed = 0, []

    def run(self, batch: ToolBatch) -> list:
        results: list = []
        for call in batch.calls:
            rec = self.log.find(call, claim=True)
            results.append(None if rec is None else ReplayedResult(
                str(call.id), call.name, rec["result"], rec["success"], 0.0, rec["error_code"]))
            if rec is None and self.gate.needs_approval(call):  # the gate holds these first
                results[-1] = ToolResult(str(call.id), call.name, "Error: not re-executed in a "
                                         "read-only replay", False, 0.0, REEXECUTION_REQUIRED)
        for r in results:
            if r is not None:
                batch.report(r)
        todo = [c for c, r in zip(batch.calls, results) if r is None]
        self.replayed += sum(isinstance(r, ReplayedResult) for r in results)
        if todo:
            approved = batch.approved | self.gate.approved_ids(todo)  # re-authorised only
            ran = iter(run_batch(self.inner, batch.replace(calls=todo, approved=approved)))
            self.executed += [f"{c.name}({c.id})" for c in todo]
            results = [r if r is not None else next(ran) for r in results]
        return results


def replay(cm: Any, run_id: str, llm: Any, registry: Any, *, revision: int = 1,
           config: RuntimeConfig | None = None, approve: Iterable[str] = (),
           approve_all: bool = False, allow: Iterable[str] = ()) -> ReplayOutcome:
    """Run ``run_id`` again from ``revision``, read-only (see the module doc)."""
    start = load_revision(cm, run_id, revision)
    log = _Log(cm, run_id)
    gate = ReplayGate(log, registry, approve, approve_all)
    config = config or RuntimeConfig()
    executor = ReplayExecutor(ToolExecutor(registry, default_timeout=config.tool_timeout,
                                           max_workers=config.max_workers), log, gate)
    scratch = tempfile.mkdtemp(prefix="agentlab-replay-")
    try:
        work = CheckpointManager(scratch, max_checkpoints=None)
        rt = AgentRuntime(llm, registry, config=config, executor=executor, checkpoints=work,
                          extensions=[CapabilitySnapshot()])
        rt.add_gate(gate)
        task = start.metadata.get("task") or ""
        check_compatible(start, rt, task, allow=allow,
                         overrides=start.metadata.get("overrides"))
        meta = {**start.metadata, "saved_due_to": "replay"}
        meta.pop("held_turn", None)
        cid = work.save(start.turn, start.messages, start.state, start.tool_calls_made, meta,
                        run_id=new_run_id())
        result = rt.run(task, resume_from=cid)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return ReplayOutcome(run_id, result, executor.replayed, len(executor.executed),
                         list(executor.executed), list(result.pending_approvals))

"""Durable runs: a ``CheckpointManager`` attached to an ``AgentRuntime`` from outside (chapter 11).

Taught in ``notebooks/11_checkpoints.ipynb``. ``attach(runtime, cm)`` (what
``AgentRuntime(..., checkpoints=cm)`` and ``cm.attach(runtime)`` do) plugs into the runtime's
public seam (``agentlab.runtime.context``) and nowhere else; the loop does not know it is there:

1. **The resume phase** (``runtime.on_resume``): ``run(task, resume_from="latest" | id)`` loads
   the checkpoint and checks it fits (not a finished run, the same task, the tools it used
   still registered), else raises ``CheckpointError`` before anything runs. Then it gives the
   run back its ``run_id``, messages, state-store values, tool-call log, turn counter, token
   usage and the time it had used (``RunContext.restore``); its next checkpoint is the next
   revision.
2. **Hooks.** ``run_start`` (and the resume phase): the model client's API key is registered
   with ``cm.add_secret`` and ``agentlab.redaction.register_secret`` (masked wherever it would
   be written or exported); a new run saves revision 1 at turn 0
   (``saved_due_to="start"``), so a run is resumable from its first moment. ``turn_end`` at a
   safe point: a checkpoint every ``auto_save_interval`` turns. ``run_end``: a last
   checkpoint, ``"completed"`` for a finished run (resuming it is refused), else the terminal
   state (``"error"``, ``"exhausted"``, ``"cancelled"``), resumable, e.g. with a larger
   ``max_turns``. An unfinished tool batch at the end of the history is cut off (kept in
   ``metadata["unsafe_tail"]``).
3. **A wrapped executor** (``DurableExecutor`` around ``runtime.executor``; it takes the turn's
   ``ToolBatch`` and hands a copy on with its own result callback). A call whose
   result is in the durable log is not run again: the recorded result comes back as a
   ``ReplayedResult`` (``replayed=True``, which the runtime puts on the ``tool_end`` event).
   Every other call runs on the wrapped executor, with the idempotency prefix ``"<run_id>:"``
   (a tool registered with ``side_effects=True`` and an ``idempotency_key`` parameter gets
   ``idempotency_key(run_id, call.id)``), and its result is recorded durably the moment it
   completes, before the next step: a process killed later never runs it again.

Credentials (``credentials.py``): a paused run's held turn is saved with its credential
arguments masked, like everything else; this process keeps them in memory, so a resume here
runs the approved call with the real values. A resume elsewhere answers such a call without
running it (``invalid_arguments``, the model is asked to call again) and the run records a
``credentials_not_saved`` error: a tool never sees ``"[REDACTED]"`` as its password.

Hooks and the executor never raise: a write that fails is recorded in ``result.errors`` (code
``checkpoint_write_failed``) and the run goes on. Saves and resumes are announced as extension
events (``runtime.emit``): ``checkpoint_saved`` (turn, saved_due_to) and ``run_resumed``
(checkpoint_revision, turn, saved_due_to); an attached observer records them.

Matching a re-asked call to the log: by ``tool_call_id`` first (the simulator's ids are digests
of the request, so the same history gives the same ids). A model that issues new ids is matched
by tool name and arguments to a recorded call that no result in the history answers yet.
What a resume may run twice: a call that was running when the process died (no result was
recorded). That is what the idempotency key is for.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from ..errors import AgentError, CheckpointError, ConfigError
from ..executor import ToolResult
from ..executor.batch import ExecutorWrapper, ToolBatch, run_batch
from ..redaction import client_api_key, register_secret
from ..runtime.context import LAST_RUN_KEY, RunContext, idempotency_key
from .credentials import (CredentialGuard, drop_credentials, keep_credentials, masked_calls,
                          restore_credentials)
from .resume_checks import check_metadata, same_task, task_digest
from .safe_point import unsafe_index

__all__ = ["attach", "DurableRuns", "DurableExecutor", "ReplayedResult", "idempotency_key",
           "run_metadata", "NOT_RUN_CODES", "EVENTS"]

logger = logging.getLogger(__name__)

#: Error codes of calls that never started (deadline, cancel, saturation, no approval yet): not
#: recorded, so a resumed run may still run them.
NOT_RUN_CODES = frozenset({"deadline_exceeded", "not_executed", "executor_saturated",
                           "approval_required"})
#: The extension events a durable runtime emits.
EVENTS = ("checkpoint_saved", "run_resumed")


def run_metadata(due: str, task: str, *, model: str | None, tools: list[str],
                 usage: dict | None = None, elapsed_s: float = 0.0, **extra: Any) -> dict:
    """The metadata of a run's checkpoint (one writer: this module and the fleet's first
    checkpoint): why it was saved, the task and its digest, model, tools, usage, time used."""
    return {"saved_due_to": due, "task": task, "task_sha256": task_digest(task), "model": model,
            "tools": sorted(tools), "usage": dict(usage or {}),
            "elapsed_s": round(float(elapsed_s), 6), **extra}


class ReplayedResult(ToolResult):
    """A tool result answered from the durable log: the call did not run in this process."""

    replayed = True


def attach(runtime: Any, checkpoints: Any) -> "DurableRuns":
    """Make ``runtime``'s runs durable with ``checkpoints`` (a ``CheckpointManager``)."""
    if isinstance(runtime.executor, DurableExecutor):
        raise ConfigError("invalid_config", "this runtime already has checkpoints attached")
    return DurableRuns(runtime, checkpoints)


class DurableRuns:
    """The durable side of one runtime: its resume phase, its hooks, and its executor."""

    def __init__(self, runtime: Any, checkpoints: Any) -> None:
        self.runtime, self.checkpoints = runtime, checkpoints
        self.claimed: set[str] = set()  # logged call ids already answered in the history
        self.lock = threading.Lock()
        self._run_id: str | None = None  # the run whose start this extension saw
        self._resumed: Any = None        # the checkpoint the current run resumed from
        runtime.on_resume(self.resume)
        runtime.declare_events(*EVENTS)
        runtime.on("run_start", self._run_start)
        runtime.on("turn_end", self._turn_end)
        runtime.on("run_end", self._run_end)
        self.credentials = CredentialGuard(runtime.executor, runtime)  # held calls' secrets
        runtime.executor = DurableExecutor(self.credentials, self)
        runtime.checkpoints = checkpoints

    # -- 1. the resume phase
    def resume(self, ctx: RunContext, ref: str) -> None:
        """Continue the run saved in checkpoint ``ref``; refuses one that does not fit."""
        rt, cm = self.runtime, self.checkpoints
        cp = cm.load(ref)
        if cp is None:
            raise CheckpointError("checkpoint_not_found", f"nothing to resume: {cm.checkpoint_dir} "
                                  "holds no checkpoint; call run() without resume_from to start")
        meta = cp.metadata
        where = f"checkpoint {cp.id} (run {cp.run_id}, revision {cp.revision})"
        check_metadata(meta, where, cp.id)
        if meta.get("saved_due_to") == "completed":
            raise CheckpointError("run_finished", f"{where} is of a run that finished; its answer "
                                  "is in the checkpoint's messages. Start a new run instead",
                                  details={"id": cp.id, "run_id": cp.run_id})
        self._register_key(cm)
        saved_task = meta.get("task")
        if ctx.task and saved_task is not None and not same_task(ctx.task, meta, cm.secrets()):
            raise CheckpointError("checkpoint_incompatible", f"{where} was saved for the task "
                                  f"{saved_task[:80]!r}, not {ctx.task[:80]!r}; pass the same task "
                                  "(or an empty one) to resume it", details={"id": cp.id})
        missing = sorted(set(meta.get("tools", [])) - set(rt.registry.list_tools()))
        if missing:
            raise CheckpointError("checkpoint_incompatible", f"{where} used tools that are not "
                                  f"registered now: {', '.join(missing)}; register them to resume",
                                  details={"id": cp.id, "missing_tools": missing})
        model = getattr(rt.llm, "model", None)
        if meta.get("model") not in (None, model):
            logger.warning("resuming %s with model %s (it was saved with %s)", where, model,
                           meta.get("model"))
        cm.bind(cp)
        ctx.restore(run_id=cp.run_id, turns=cp.turn, usage=meta.get("usage") or {},
                    elapsed_s=float(meta.get("elapsed_s") or 0.0),
                    tool_calls_made=cp.tool_calls_made, resumed_from=cp.id,
                    task=ctx.task or meta.get("task"), held_turn=meta.get("held_turn"),
                    extensions=meta.get("extensions"))
        rt.messages.restore(cp.messages)
        if rt.state is not None:
            for key, value in cp.state.items():
                rt.state.save(key, value)
        self.claimed = {m.get("tool_call_id") for m in cp.messages if m.get("role") == "tool"}
        self._resumed = cp

    def _register_key(self, cm: Any) -> None:
        """The API key the model client was built with stays off disk, and out of exports."""
        api_key = client_api_key(getattr(self.runtime, "llm", None))
        if api_key:
            cm.add_secret(api_key)
            register_secret(api_key)

    # -- 2. hooks
    def _run_start(self, event: dict) -> None:
        ctx, cm = self.runtime.context, self.checkpoints
        self._register_key(cm)
        self._run_id = ctx.run_id
        cp, self._resumed = self._resumed, None
        if ctx.resumed_from is not None and cp is not None:
            ctx.held_turn = restore_credentials(ctx.run_id, ctx.held_turn)  # kept here, if so
            self.credentials.expect(masked_calls((ctx.held_turn or {}).get("message")))
            self.runtime.emit("run_resumed", checkpoint_revision=cp.revision, turn=cp.turn,
                              saved_due_to=cp.metadata.get("saved_due_to"))
            return
        self.claimed = set()
        self.credentials.expect({})
        cm.run_id = ctx.run_id
        self.save(ctx, "start")

    def _turn_end(self, event: dict) -> None:
        ctx = self.runtime.context
        if event.get("tool_calls") and self.checkpoints.should_save(ctx.turns):  # a safe point
            self.save(ctx, "interval")

    def _run_end(self, event: dict) -> None:
        ctx, result = self.runtime.context, event["result"]
        if ctx is None or ctx.run_id != self._run_id:
            return  # this extension never saw the run start
        name = result.state.value  # finished, error, exhausted, cancelled, paused
        held = {"held_turn": ctx.held_turn} if ctx.held_turn is not None else {}  # a paused turn
        if held:  # its credentials stay in this process's memory only (credentials.py)
            keep_credentials(ctx.run_id, ctx.held_turn["message"])
        else:
            drop_credentials(ctx.run_id)
        self.save(ctx, "completed" if name == "finished" else name,
                  stopped_reason=result.stopped_reason, errors=list(ctx.errors), **held)

    # -- writing
    def save(self, ctx: RunContext, due: str, **extra: Any) -> str | None:
        """Save a checkpoint of the run now (``saved_due_to=due``); never raises."""
        rt = self.runtime
        messages = rt.messages.get_messages()
        if ctx.extensions:  # the gates' own state (e.g. approval decisions)
            extra = {"extensions": ctx.extensions, **extra}
        meta = run_metadata(due, ctx.task, model=getattr(rt.llm, "model", None),
                            tools=rt.registry.list_tools(), usage=ctx.usage,
                            elapsed_s=ctx.elapsed_ms() / 1000.0, **extra)
        bad = unsafe_index(messages)
        if bad is not None:  # only after a failure: a checkpoint must be a valid conversation
            meta["unsafe_tail"], messages = messages[bad[0]:], messages[:bad[0]]
        try:
            state = {k: rt.state.load(k) for k in rt.state.keys() if k != LAST_RUN_KEY} \
                if rt.state is not None else {}
            cid = self.checkpoints.save(ctx.turns, messages, state, ctx.tool_calls_made, meta,
                                        run_id=ctx.run_id)
        except Exception as exc:
            self.failed(ctx, f"the {due} checkpoint at turn {ctx.turns} could not be written", exc)
            return None
        rt.emit("checkpoint_saved", turn=ctx.turns, saved_due_to=due)
        return cid

    def record(self, ctx: RunContext, call: Any, result: Any) -> None:
        """Record a finished call durably (a call that never started is not recorded)."""
        if result.error_code in NOT_RUN_CODES:
            return
        try:
            self.checkpoints.record_tool_result(
                ctx.run_id, str(call.id), call.name, result.result, result.success,
                result.error_code, arguments=call.arguments, turn=ctx.turns)
        except Exception as exc:  # the run goes on; the loss of durability is on record
            self.failed(ctx, f"the result of {call.name} ({call.id}) could not be recorded", exc)
        with self.lock:
            self.claimed.add(str(call.id))  # answered in the history from now on

    @staticmethod
    def failed(ctx: RunContext, what: str, exc: Exception) -> None:
        logger.error("%s: %s", what, exc)
        ctx.add_error(AgentError("checkpoint_write_failed", f"{what}: {type(exc).__name__}: "
                                 f"{exc}. The run goes on; a resume may repeat this work"))


class DurableExecutor(ExecutorWrapper):
    """The runtime's executor with a durable log: replays logged calls, records the rest.

    Wraps ``inner`` (the runtime's executor); other attributes are the inner one's. The calls
    that must run go on to ``inner`` as a copy of the batch whose result callback records each
    result durably the moment it is known (then tells the batch's own callback).
    """

    def __init__(self, inner: Any, runs: DurableRuns) -> None:
        self.inner, self.runs = inner, runs

    def run(self, batch: ToolBatch) -> list:
        ctx, runs = self.runs.runtime.context, self.runs
        if ctx is None:  # not inside a run: nothing to log against
            return run_batch(self.inner, batch)
        calls = list(batch.calls)
        results = self._replay(ctx, calls)
        todo = [i for i, r in enumerate(results) if r is None]
        for r in results:
            if r is not None:
                batch.report(r)
        if todo:
            by_id = {str(calls[i].id): calls[i] for i in todo}
            rest = batch.replace(calls=[calls[i] for i in todo],
                                 key_prefix=idempotency_key(ctx.run_id, ""))
            rest = rest.also_report(lambda r: runs.record(ctx, by_id[str(r.tool_call_id)], r))
            for i, result in zip(todo, run_batch(self.inner, rest)):
                results[i] = result
        return results

    def _replay(self, ctx: RunContext, calls: list) -> list:
        """Results for the calls found in the log (``None`` for the ones that must run)."""
        runs, cm = self.runs, self.runs.checkpoints
        results: list = [None] * len(calls)
        logged: list = [None] * len(calls)  # the log's id for each replayed call
        try:
            with runs.lock:
                for i, call in enumerate(calls):
                    rec = cm.find_tool_result(ctx.run_id, str(call.id), call.name,
                                              call.arguments, runs.claimed)
                    if rec is None:
                        continue
                    runs.claimed.add(rec["tool_call_id"])
                    logged[i] = rec["tool_call_id"]
                    results[i] = ReplayedResult(call.id, call.name, rec["result"], rec["success"],
                                                0.0, rec["error_code"])
        except Exception as exc:  # unreadable log: the calls run (and the problem is on record)
            runs.failed(ctx, "the tool-result log could not be read", exc)
            return [None] * len(calls)
        for call, r, cid in zip(calls, results, logged):
            if r is not None and str(call.id) != cid:  # new id, same call: log it under both
                runs.record(ctx, call, r)
        return results

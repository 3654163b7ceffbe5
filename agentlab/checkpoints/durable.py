"""Durable runs: how ``AgentRuntime`` uses a ``CheckpointManager`` (chapter 11).

Taught in ``notebooks/11_checkpoints.ipynb``. With ``AgentRuntime(..., checkpoints=cm)`` the
runtime calls these functions at fixed points of its loop (the runtime owns the loop; this
module owns what is saved, restored and replayed):

1. ``prepare_resume(rt, resume_from, task)`` before anything runs: loads the checkpoint to
   resume (``"latest"`` or an id) and checks it fits (not a finished run, same task, the tools
   it used still registered). Raises ``CheckpointError``: nothing has run yet.
2. ``begin_run(rt, run, task, checkpoint)`` as the run starts. A new run appends the task and
   saves revision 1 at turn 0 (``saved_due_to="start"``): a run is resumable from its first
   moment. A resumed run gets back its messages, state-store values, tool-call log, turn
   counter, token usage and the time it had used, and keeps its ``run_id``; its next
   checkpoint is the next revision. The model client's API key is registered with
   ``cm.add_secret`` so it is masked wherever it would be written.
3. ``execute_tools(rt, run, calls, parallel, timeout)`` instead of the bare executor. A call
   whose result is in the durable log is not run again (the recorded result is reused). Every
   other call runs through the executor with the idempotency prefix ``"<run_id>:"`` (a tool
   registered with ``side_effects=True`` and an ``idempotency_key`` parameter gets
   ``idempotency_key(run_id, call.id)``), and its result is recorded durably the moment it
   completes, before the next step: a process killed later never runs it again.
4. ``checkpoint_turn(rt, run)`` at each safe point (a turn's results all appended): a
   checkpoint every ``auto_save_interval`` turns.
5. ``end_run(rt, run, state, reason)`` when the run ended: a last checkpoint, ``"completed"``
   for a finished run (resuming it is refused), else the terminal state (``"error"``,
   ``"exhausted"``, ``"cancelled"``), resumable, e.g. with a larger ``max_turns``. An unfinished
   tool batch at the end of the history is cut off (kept in ``metadata["unsafe_tail"]``).

2-5 never raise: a write that fails is recorded in ``result.errors`` (code
``checkpoint_write_failed``) and the run goes on. With an observer, saves and replays are
recorded as events (``checkpoint_saved``, ``run_resumed``, ``tool_replayed``).

Matching a re-asked call to the log: by ``tool_call_id`` first (the simulator's ids are digests
of the request, so the same history gives the same ids). A model that issues new ids is matched
by tool name and arguments to a recorded call that no result in the history answers yet.
What a resume may run twice: a call that was running when the process died (no result was
recorded). That is what the idempotency key is for.
"""
from __future__ import annotations

import inspect
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from .document import Checkpoint
from .safe_point import unsafe_index
from ..errors import AgentError, CheckpointError

__all__ = ["DurableRun", "prepare_resume", "begin_run", "execute_tools", "checkpoint_turn",
           "end_run", "NOT_RUN_CODES"]

logger = logging.getLogger(__name__)

#: Error codes of calls that never started (deadline, cancel, saturation): not recorded, so a
#: resumed run may still run them.
NOT_RUN_CODES = frozenset({"deadline_exceeded", "not_executed", "executor_saturated"})
_STATE_SKIP = ("last_run",)  # the runtime's own key: the previous run's result


@dataclass
class DurableRun:
    """What the runtime remembers about the durable side of its current run (``rt._durable``)."""

    run_id: str
    task: str
    resumed_from: str | None = None
    started: bool = False
    replayed: set[str] = field(default_factory=set)   # call ids answered from the log
    claimed: set[str] = field(default_factory=set)    # logged ids already answered in history
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


# ---------------------------------------------------------------- start and resume
def prepare_resume(rt: Any, resume_from: str | None, task: str) -> Checkpoint | None:
    """The checkpoint to resume (``None`` for a new run); refuses one that does not fit."""
    if resume_from is None:
        return None
    cm = rt.checkpoints
    cp = cm.load(resume_from)
    if cp is None:
        raise CheckpointError("checkpoint_not_found", f"nothing to resume: {cm.checkpoint_dir} "
                              "holds no checkpoint; call run() without resume_from to start")
    meta = cp.metadata
    where = f"checkpoint {cp.id} (run {cp.run_id}, revision {cp.revision})"
    if meta.get("saved_due_to") == "completed":
        raise CheckpointError("run_finished", f"{where} is of a run that finished; its answer "
                              "is in the checkpoint's messages. Start a new run instead",
                              details={"id": cp.id, "run_id": cp.run_id})
    saved_task = meta.get("task")
    if task and saved_task is not None and task != saved_task:
        raise CheckpointError("checkpoint_incompatible", f"{where} was saved for the task "
                              f"{saved_task[:80]!r}, not {task[:80]!r}; pass the same task (or "
                              "an empty one) to resume it", details={"id": cp.id})
    missing = sorted(set(meta.get("tools", [])) - set(rt.registry.list_tools()))
    if missing:
        raise CheckpointError("checkpoint_incompatible", f"{where} used tools that are not "
                              f"registered now: {', '.join(missing)}; register them to resume",
                              details={"id": cp.id, "missing_tools": missing})
    model = getattr(rt.llm, "model", None)
    if meta.get("model") not in (None, model):
        logger.warning("resuming %s with model %s (it was saved with %s)", where, model,
                       meta.get("model"))
    return cp


def begin_run(rt: Any, run: Any, task: str, cp: Checkpoint | None) -> None:
    """Start the durable side of ``run``: restore ``cp``, or append the task and save revision 1.

    ``run`` is the runtime's ``_Run``; this sets its ``run_id``, ``turns``, ``usage``,
    ``tool_calls_made``, and moves ``t0``/``deadline`` back by the time already used.
    """
    cm = rt.checkpoints
    api_key = getattr(getattr(rt.llm, "client", None), "api_key", None)
    if isinstance(api_key, str) and len(api_key) >= 6:  # what the client was built with stays off disk
        cm.add_secret(api_key)
    if cp is None:
        rt._durable = DurableRun(run.run_id, task)
        cm.run_id = run.run_id
        rt.messages.append({"role": "user", "content": task})
        rt._durable.started = True
        _save(rt, run, "start")
        return
    meta = cp.metadata
    rt._durable = DurableRun(cp.run_id, meta.get("task", task), resumed_from=cp.id)
    cm.bind(cp)
    run.run_id, run.turns = cp.run_id, cp.turn
    for key in run.usage:
        run.usage[key] = int((meta.get("usage") or {}).get(key) or 0)
    used = float(meta.get("elapsed_s") or 0.0)
    run.t0 -= used  # the time budget continues: the deadline is where it was
    run.deadline -= used
    run.tool_calls_made = list(cp.tool_calls_made)
    rt.messages.restore(cp.messages)
    if rt.state is not None:
        for key, value in cp.state.items():
            rt.state.save(key, value)
    rt._durable.claimed = {m.get("tool_call_id") for m in cp.messages if m.get("role") == "tool"}
    rt._durable.started = True
    _event(rt, "run_resumed", checkpoint_revision=cp.revision, turn=cp.turn,
           saved_due_to=meta.get("saved_due_to"))


# ---------------------------------------------------------------- tools
def execute_tools(rt: Any, run: Any, calls: list, parallel: bool, timeout: float) -> list:
    """Run one batch with durable results; a call found in the log is not run again."""
    from ..executor import ToolResult

    d: DurableRun = rt._durable
    cm = rt.checkpoints
    try:
        done = cm.completed_tool_calls(run.run_id)
    except Exception as exc:  # unreadable log: the calls run (and the problem is on record)
        _failed(run, "the tool-result log could not be read", exc)
        done = {}
    results: list = [None] * len(calls)
    with d.lock:
        for i, call in enumerate(calls):
            rec = done.get(str(call.id))
            if rec is None:
                rec = _match(done, call, d.claimed)
            if rec is not None:
                d.claimed.add(rec["tool_call_id"])
                d.replayed.add(str(call.id))
                results[i] = ToolResult(call.id, call.name, rec["result"], rec["success"], 0.0,
                                        rec["error_code"])
                if rec["tool_call_id"] != str(call.id):  # new id, same call: log it under both
                    _record(rt, run, call, results[i])
    todo = [i for i, r in enumerate(results) if r is None]
    deadline = time.monotonic() + timeout
    prefix = f"{run.run_id}:"

    def one(i: int) -> Any:
        left = max(deadline - time.monotonic(), 0.0)
        result = _execute_one(rt.executor, calls[i], left, prefix)
        if result.error_code not in NOT_RUN_CODES:
            _record(rt, run, calls[i], result)  # durable before this call counts as done
            with d.lock:
                d.claimed.add(str(calls[i].id))  # answered in the history from now on
        return result

    if parallel and len(todo) > 1:
        workers = min(len(todo), int(getattr(rt.executor, "max_workers", 4) or 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="agentlab-durable") as pool:
            for i, result in zip(todo, pool.map(one, todo)):
                results[i] = result
    else:
        for i in todo:
            results[i] = one(i)
    return results


def _match(done: dict[str, dict], call: Any, claimed: set[str]) -> dict | None:
    """A logged call with the same name and arguments that no result in the history answers."""
    for rec in done.values():
        if rec["tool_call_id"] not in claimed and rec["name"] == call.name \
                and rec.get("arguments") is not None and rec["arguments"] == call.arguments:
            return rec
    return None


def _execute_one(executor: Any, call: Any, timeout: float, prefix: str) -> Any:
    if "idempotency_prefix" in inspect.signature(executor.execute).parameters:
        return executor.execute([call], timeout=timeout, idempotency_prefix=prefix)[0]
    return executor.execute([call], timeout=timeout)[0]  # an executor without idempotency keys


def _record(rt: Any, run: Any, call: Any, result: Any) -> None:
    try:
        rt.checkpoints.record_tool_result(run.run_id, str(call.id), call.name, result.result,
                                          result.success, result.error_code,
                                          arguments=call.arguments, turn=run.turns)
    except Exception as exc:  # the run goes on; the loss of durability is on record
        _failed(run, f"the result of {call.name} ({call.id}) could not be recorded", exc)


# ---------------------------------------------------------------- checkpoints
def checkpoint_turn(rt: Any, run: Any) -> None:
    """At a safe point: a checkpoint every ``auto_save_interval`` turns."""
    if getattr(rt, "_durable", None) is not None and rt.checkpoints.should_save(run.turns):
        _save(rt, run, "interval")


def end_run(rt: Any, run: Any, state: Any, reason: str) -> None:
    """A last checkpoint: ``completed``, or the terminal state of a run that can be resumed."""
    d = getattr(rt, "_durable", None)
    if d is None or not d.started or d.run_id != run.run_id:
        return  # the run never started its durable side (e.g. it failed to restore)
    name = str(getattr(state, "value", state))  # a RunState: finished, error, exhausted, ...
    _save(rt, run, "completed" if name == "finished" else name, stopped_reason=reason,
          errors=list(run.errors))


def _save(rt: Any, run: Any, due: str, **extra: Any) -> str | None:
    cm = rt.checkpoints
    messages = rt.messages.get_messages()
    meta = {"saved_due_to": due, "task": rt._durable.task, "model": getattr(rt.llm, "model", None),
            "tools": sorted(rt.registry.list_tools()), "usage": dict(run.usage),
            "elapsed_s": round(run.ms() / 1000.0, 6), **extra}
    bad = unsafe_index(messages)
    if bad is not None:  # only after a failure: a checkpoint must be a valid conversation
        meta["unsafe_tail"], messages = messages[bad[0]:], messages[:bad[0]]
    try:
        state = {k: rt.state.load(k) for k in rt.state.keys() if k not in _STATE_SKIP} \
            if rt.state is not None else {}
        cid = cm.save(run.turns, messages, state, run.tool_calls_made, meta, run_id=run.run_id)
    except Exception as exc:
        _failed(run, f"the {due} checkpoint at turn {run.turns} could not be written", exc)
        return None
    _event(rt, "checkpoint_saved", turn=run.turns, saved_due_to=due)
    return cid


def _failed(run: Any, what: str, exc: Exception) -> None:
    logger.error("%s: %s", what, exc)
    run.errors.append(AgentError("checkpoint_write_failed", f"{what}: {type(exc).__name__}: "
                                 f"{exc}. The run goes on; a resume may repeat this work",
                                 details={"turn": run.turns}).to_dict())


def _event(rt: Any, name: str, **attrs: Any) -> None:
    obs = getattr(rt, "observer", None)
    if obs is not None and hasattr(obs, "record_event"):
        obs.record_event(name, **attrs)

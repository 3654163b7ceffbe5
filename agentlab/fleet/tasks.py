"""One delivery of a run to a worker: take the lease, count the attempt, resume, record.

Taught in ``notebooks/13_fleet.ipynb``. The Celery task ``agentlab.fleet.run`` carries only a
run id; everything else is in the run's record (``runs.py``) and its checkpoints. A delivery
may be the first, a redelivery after a worker died, or a duplicate of a run another worker is
still running; ``run_attempt`` handles all three the same way:

1. A run that is terminal or paused (waiting for approval) is not touched: the delivery is a
   late duplicate. A run whose cancel flag is set before it started ends ``cancelled``.
2. **Lease.** Wait while another live holder has the run (a duplicate: it returns when that
   holder finishes, or takes over if the holder dies and its lease expires).
3. **Attempts.** Each delivery that takes the lease counts one attempt. Attempts lost to the
   infrastructure (the reaper found the holder's lease expired, or Redis stopped answering)
   are counted apart (``infra_losses``); the rest crashed their worker. Past the run's
   ``max_attempts`` crashes, or ``max_infra_losses`` losses, it ends ``error``
   (``too_many_attempts`` / ``too_many_infra_losses``) instead of looping.
4. **Resume** from the run's newest checkpoint (``agent.start_reference``) with a heartbeat
   renewing the lease and the broker message while the runtime runs.
5. **Record** the outcome, unless the lease was lost meanwhile: then a newer holder owns the
   run and this attempt writes nothing.

**A delivery whose outcome was not recorded is never acknowledged.** When Redis does not
answer (a blip, a restart), the attempt stops as if its lease were lost, waits for Redis to
come back, counts an infrastructure loss and puts its message back at the front of the queue
(``reaper.requeue_front``): the run resumes from its last checkpoint. If Redis stays away, it
raises Celery's ``Reject(requeue=True)``, which fails too, and the message waits,
unacknowledged, for the reaper (``reaper.py``) or the broker's visibility timeout. A delivery for a run this namespace does not
know is not acked silently either: it is logged as an error, kept in ``<prefix>unknown``, and
rejected.
"""
from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from celery.exceptions import Reject
from celery.signals import worker_init, worker_ready, worker_shutdown

from ..errors import AgentError, CheckpointError
from ..tokens import count_text_tokens
from .agent import Attempt, build_runtime, fleet_llm, start_reference
from .app import TASK_NAME, FleetConfig, app, broker_key
from .connection import RedisTarget
from .lease import Heartbeat, RunLease
from .ledger import Ledger
from .reach import is_unreachable, wait_reachable
from .reaper import INSTANCE_ENV, Reaper, requeue_front
from .runs import PAUSED, RUNNING, TERMINAL, RunRecords, RunSpec
from .usertools import ToolsMissingError, build_registry, offered_tools

__all__ = ["run_attempt", "run_task", "find_delivery_tag", "result_summary"]

logger = logging.getLogger(__name__)

def find_delivery_tag(client: Any, task_id: str, unacked: str = "unacked") -> str | None:
    """The broker's delivery tag of the unacknowledged message carrying ``task_id``.

    kombu's Redis transport keeps unacknowledged messages in the ``unacked`` hash (tag ->
    payload) and their delivery times in ``unacked_index``; the heartbeat refreshes the latter.
    """
    for tag, payload in client.hscan_iter(unacked):
        if task_id.encode() in payload:
            return tag.decode() if isinstance(tag, bytes) else tag
    return None


def result_summary(result: Any) -> dict:
    """What the run record keeps of an ``AgentResult`` (the full result is in the checkpoint)."""
    return {"run_id": result.run_id, "state": result.state.value, "content": result.content,
            "turns": result.turns, "stopped_reason": result.stopped_reason,
            "tool_calls": len(result.tool_calls_made), "errors": result.errors,
            "usage": result.usage, "duration_ms": round(result.duration_ms, 1),
            "cost_usd": result.cost_usd}


def run_attempt(run_id: str, *, worker: str = "", task_id: str | None = None,
                cfg: FleetConfig | None = None) -> str:
    """Execute one delivery of ``run_id`` (see the module docstring); returns what happened."""
    cfg = cfg or FleetConfig.from_env()
    client = RedisTarget(cfg.redis_url).client
    worker = worker or socket.gethostname()
    try:
        return _attempt(run_id, cfg, client, worker, task_id)
    except Exception as exc:
        if not is_unreachable(exc):
            raise
        _requeue(client, cfg, run_id, None, f"Redis cannot be reached ({type(exc).__name__})")
        raise  # not reached: _requeue raises


def _attempt(run_id: str, cfg: FleetConfig, client: Any, worker: str,
             task_id: str | None) -> str:
    records, ledger = RunRecords(client, cfg.prefix), Ledger(client, cfg.prefix)
    rec = records.get(run_id)
    if rec is None:
        return _unknown(client, cfg, run_id, task_id, worker)
    if rec["state"] in TERMINAL or rec["state"] == PAUSED:  # 1. a late duplicate
        return f"skipped_{rec['state']}"
    spec = RunSpec.from_dict(rec["spec"])
    if records.cancel_requested(run_id):
        return _end(records, ledger, run_id, "cancelled", worker, error=AgentError(
            "cancelled", "the run was cancelled before a worker started it"))

    lease = RunLease(client, run_id, ttl_s=cfg.lease_ttl_s, prefix=cfg.prefix, holder=worker)
    tag = find_delivery_tag(client, task_id, broker_key(cfg, "unacked")) if task_id else None
    waiting = Heartbeat(lease, delivery_tag=tag, unacked_index=broker_key(cfg, "unacked_index"))

    def settled() -> bool:
        return _settled(records, run_id)

    if not lease.acquire():  # 2. another holder: wait for it to finish or to die, keeping our
        poll_s = lease.ttl_ms / 4000.0  # message fresh so the reaper does not restore it
        while not lease.wait_acquire(poll_s, give_up=settled):
            if settled():
                return "duplicate"
            waiting.refresh_message()
        if settled():
            lease.release()
            return "duplicate"
    attempts = records.add_attempt(run_id)  # 3. count it, before anything can crash
    infra = records.get(run_id).get("infra_losses", 0)
    crashes = attempts - 1 - infra
    too_many = None
    if crashes >= spec.max_attempts:
        too_many = AgentError("too_many_attempts", f"the run was started {attempts - 1} times "
                              f"and crashed its worker {crashes} times (max_attempts="
                              f"{spec.max_attempts}); it is not retried again",
                              details={"attempts": attempts - 1, "crashes": crashes})
    elif infra > spec.max_infra_losses:
        too_many = AgentError("too_many_infra_losses", f"the run lost its worker or Redis "
                              f"{infra} times (max_infra_losses={spec.max_infra_losses}); it "
                              "is not retried again", details={"infra_losses": infra})
    if too_many is not None:
        out = _end(records, ledger, run_id, "error", worker, error=too_many)
        lease.release()
        return out
    # output_dir: where the run's files (the research report) go, on the worker's machine;
    # `agentlab submit --wait` and `runs show` tell the user to look there.
    records.update(run_id, state=RUNNING, worker=worker, instance=os.environ.get(INSTANCE_ENV, ""),
                   output_dir=str((Path(cfg.fleet_dir) / "output" / run_id).resolve()))
    return _execute(run_id, spec, cfg, client, records, ledger, lease, worker, tag)


def _execute(run_id: str, spec: RunSpec, cfg: FleetConfig, client: Any, records: RunRecords,
             ledger: Ledger, lease: RunLease, worker: str, tag: str | None) -> str:
    """4-5: resume the run under a heartbeat and record its outcome."""
    rt_box: list = []

    def stop() -> None:
        if rt_box:
            rt_box[0].cancel()

    def unreachable() -> None:
        lease.lost = lease.unreachable = True

    beat = Heartbeat(lease, delivery_tag=tag, on_lost=stop,
                     unacked_index=broker_key(cfg, "unacked_index"),
                     on_beat=lambda: records.cancel_requested(run_id) and stop())
    at = Attempt(run_id=run_id, spec=spec, client=client, ledger=ledger, lease_ok=lease.holds,
                 token=lease.token, worker=worker, checkpoints=cfg.checkpoints,
                 output_dir=Path(cfg.fleet_dir) / "output",
                 should_stop=lambda: records.cancel_requested(run_id), prefix=cfg.prefix,
                 on_unreachable=unreachable)
    try:
        rt = build_runtime(at)
        rt_box.append(rt)
        with beat:
            ref = start_reference(rt, run_id, spec.task)
            result = rt.run(spec.task, resume_from=ref)
    except Exception as exc:
        if is_unreachable(exc) or lease.unreachable:
            return _requeue(client, cfg, run_id, lease, f"Redis cannot be reached ({exc})", tag)
        if isinstance(exc, CheckpointError) and exc.code == "run_finished":
            # it finished, but its worker died before recording it
            return _end(records, ledger, run_id, "finished", worker,
                        result=_finished_summary(rt_box[0], run_id, exc.details.get("id")))
        if isinstance(exc, (CheckpointError, ToolsMissingError)):
            return _end(records, ledger, run_id, "error", worker, error=exc)
        logger.exception("run %s failed on %s", run_id, worker)  # a bug: on record, never a
        return _end(records, ledger, run_id, "error", worker, error=AgentError(  # silent loop
            "internal_error", f"{type(exc).__name__}: {exc}"))
    if not lease.holds():  # 5. superseded, or Redis went away: write nothing
        if lease.unreachable:
            return _requeue(client, cfg, run_id, lease, "Redis stopped answering during the run",
                            tag)
        records.add_infra_loss(run_id, lease.token)  # its lease expired under it: not a crash
        if lease.current_holder() is None and not _settled(records, run_id):
            app.send_task(TASK_NAME, args=[run_id])  # nobody holds it: hand it on
        return "lease_lost"
    summary = result_summary(result)
    state = result.state.value
    if state == PAUSED:  # waiting for a human: hold no worker (approve re-enqueues it)
        records.update(run_id, state=PAUSED, worker=worker, result=summary,
                       pending=json.loads(json.dumps(result.pending_approvals, default=str)))
        lease.release()
        return PAUSED
    out = _end(records, ledger, run_id, state, worker, result=summary)
    lease.release()
    return out


def _requeue(client: Any, cfg: FleetConfig, run_id: str, lease: RunLease | None,
             why: str, tag: str | None = None) -> str:
    """The attempt could not record its outcome: never ack it as done. Wait for Redis, count
    an infrastructure loss, free the lease, and put the message back at the *front* of the
    queue (``reaper.requeue_front``; Celery's ``Reject(requeue=True)`` would put it at the
    back, behind every queued run). If that cannot be done, ``Reject(requeue=True)``: and if
    Redis is still away, the message stays unacknowledged for the reaper."""
    logger.warning("run %s: %s; the delivery is requeued, not acknowledged", run_id, why)
    if wait_reachable(client, timeout_s=max(30.0, 3 * cfg.lease_ttl_s)):
        try:
            if lease is not None and lease.token is not None:
                RunRecords(client, cfg.prefix).add_infra_loss(run_id, lease.token)
                lease.release()
            if tag and requeue_front(client, cfg, tag):
                return "requeued"  # the old delivery's ack now finds nothing to remove
        except Exception:  # gone again: the reaper or the visibility timeout will requeue it
            logger.warning("run %s: Redis went away again while requeueing", run_id)
    raise Reject(why, requeue=True)


def _unknown(client: Any, cfg: FleetConfig, run_id: str, task_id: str | None,
             worker: str) -> str:
    """A delivery for a run this namespace has no record of: on record, loudly, and rejected
    (never acked as if it had run). The reaper of the run's own namespace re-enqueues it."""
    logger.error("delivery %s names run %s, which %s does not know (wrong tenant or prefix?); "
                 "rejected and kept in %sunknown", task_id, run_id, cfg.prefix, cfg.prefix)
    client.rpush(f"{cfg.prefix}unknown", json.dumps({"run_id": run_id, "task_id": task_id,
                                                     "worker": worker, "t": time.time()}))
    raise Reject(f"unknown run {run_id}", requeue=False)


def _settled(records: RunRecords, run_id: str) -> bool:
    state = (records.get(run_id) or {}).get("state")
    return state in TERMINAL or state == PAUSED


def _finished_summary(rt: Any, run_id: str, checkpoint_id: str | None) -> dict:
    """The answer of a run whose last checkpoint says it finished."""
    cp = rt.checkpoints.load(checkpoint_id)
    answers = [m.get("content") for m in cp.messages if m.get("role") == "assistant"]
    return {"run_id": run_id, "state": "finished", "content": answers[-1] if answers else "",
            "turns": cp.turn, "stopped_reason": "completed", "recovered_from": cp.id}


def _end(records: RunRecords, ledger: Ledger, run_id: str, state: str, worker: str, *,
         result: dict | None = None, error: AgentError | None = None) -> str:
    fields: dict = {"state": state, "worker": worker}
    if result is not None:
        fields["result"] = result
    if error is not None:
        fields["error"] = error.to_dict()
    records.update(run_id, **fields)
    ledger.run_finished(run_id)
    return state


@worker_init.connect
def warm_up(**_: Any) -> None:
    """Load the model stack and the token table once per worker, before its pool starts.

    Otherwise a worker's first run pays for them (seconds on a busy machine) while it holds a
    lease, and an import holding the interpreter's import lock can delay its heartbeat. The
    worker's own tools (``--tools``) are built once here too: one that fails stops the worker.
    """
    # this worker process's identity for the reaper (the pool's children inherit it); a
    # worker restarted under the same name is a new instance
    os.environ[INSTANCE_ENV] = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    fleet_llm(RunSpec(task="warm up"))
    count_text_tokens("warm up")
    for spec in offered_tools():  # a worker whose --tools cannot be built does not start
        try:
            build_registry(spec, Path(FleetConfig.from_env().fleet_dir) / "output" / "warm-up")
        except Exception as exc:  # (Celery logs and ignores what a signal handler raises)
            logger.critical("the worker's tools %r cannot be built: %s", spec, exc)
            raise SystemExit(1) from None


_reapers: list[Reaper] = []


@worker_ready.connect
def start_reaper(**_: Any) -> None:
    """Every worker runs the reaper (a thread of its main process; one pass at a time
    fleet-wide): a killed worker's runs are resumed within seconds of their lease expiring."""
    cfg = FleetConfig.from_env()
    if cfg.reaper_interval_s > 0:
        _reapers.append(Reaper(cfg, app, instance=os.environ.get(INSTANCE_ENV)).start())


@worker_shutdown.connect
def stop_reaper(**_: Any) -> None:
    while _reapers:
        _reapers.pop().stop()


@app.task(name=TASK_NAME, bind=True)
def run_task(self: Any, run_id: str) -> str:
    """The Celery task: one delivery of a fleet run (``run_attempt``)."""
    return run_attempt(run_id, worker=self.request.hostname or "", task_id=self.request.id)

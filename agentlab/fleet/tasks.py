"""One delivery of a run to a worker: take the lease, count the attempt, resume, record.

Taught in ``notebooks/13_fleet.ipynb``. The Celery task ``agentlab.fleet.run`` carries only a
run id; everything else is in the run's record (``runs.py``) and its checkpoints. A delivery
may be the first, a redelivery after a worker died, or a duplicate of a run another worker is
still running; ``run_attempt`` handles all three the same way:

1. A run that is terminal or paused (waiting for approval) is not touched: the delivery is a
   late duplicate. A run whose cancel flag is set before it started ends ``cancelled``.
2. **Lease.** Wait while another live holder has the run (a duplicate: it returns when that
   holder finishes, or takes over if the holder dies and its lease expires).
3. **Attempts.** Each delivery that takes the lease counts one attempt; past the run's
   ``max_attempts`` it ends ``error`` (``too_many_attempts``) instead of crashing another worker.
4. **Resume** from the run's newest checkpoint (``agent.start_reference``) with a heartbeat
   renewing the lease and the broker message while the runtime runs.
5. **Record** the outcome, unless the lease was lost meanwhile: then a newer holder owns the
   run and this attempt writes nothing.
"""
from __future__ import annotations

import json
import logging
import socket
from pathlib import Path
from typing import Any

from celery.signals import worker_init

from ..errors import AgentError, CheckpointError
from ..tokens import count_text_tokens
from .agent import Attempt, build_runtime, fleet_llm, start_reference
from .app import TASK_NAME, FleetConfig, app
from .connection import RedisTarget
from .lease import Heartbeat, RunLease
from .ledger import Ledger
from .runs import PAUSED, RUNNING, TERMINAL, RunRecords, RunSpec

__all__ = ["run_attempt", "run_task", "find_delivery_tag", "result_summary"]

logger = logging.getLogger(__name__)


def find_delivery_tag(client: Any, task_id: str) -> str | None:
    """The broker's delivery tag of the unacknowledged message carrying ``task_id``.

    kombu's Redis transport keeps unacknowledged messages in the ``unacked`` hash (tag ->
    payload) and their delivery times in ``unacked_index``; the heartbeat refreshes the latter.
    """
    for tag, payload in client.hscan_iter("unacked"):
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
    records, ledger = RunRecords(client, cfg.prefix), Ledger(client, cfg.prefix)
    worker = worker or socket.gethostname()
    rec = records.get(run_id)
    if rec is None:
        return "unknown_run"
    if rec["state"] in TERMINAL or rec["state"] == PAUSED:  # 1. a late duplicate
        return f"skipped_{rec['state']}"
    spec = RunSpec.from_dict(rec["spec"])
    if records.cancel_requested(run_id):
        return _end(records, ledger, run_id, "cancelled", worker, error=AgentError(
            "cancelled", "the run was cancelled before a worker started it"))

    lease = RunLease(client, run_id, ttl_s=cfg.lease_ttl_s, prefix=cfg.prefix, holder=worker)
    tag = find_delivery_tag(client, task_id) if task_id else None
    waiting = Heartbeat(lease, delivery_tag=tag)  # while waiting: keep our message unacked

    def settled() -> bool:
        return _settled(records, run_id)

    if not lease.acquire():  # 2. another holder: wait for it to finish or to die
        while not lease.wait_acquire(lease.ttl_ms / 1000.0, give_up=settled):
            if settled():
                return "duplicate"
            if tag:
                waiting.refresh_message()
        if settled():
            lease.release()
            return "duplicate"
    attempts = records.add_attempt(run_id)  # 3. count it, before anything can crash
    if attempts > spec.max_attempts:
        out = _end(records, ledger, run_id, "error", worker, error=AgentError(
            "too_many_attempts", f"the run was started {attempts - 1} times and its worker died "
            f"each time (max_attempts={spec.max_attempts}); it is not retried again",
            details={"attempts": attempts - 1}))
        lease.release()
        return out
    records.update(run_id, state=RUNNING, worker=worker)
    return _execute(run_id, spec, cfg, client, records, ledger, lease, worker, tag)


def _execute(run_id: str, spec: RunSpec, cfg: FleetConfig, client: Any, records: RunRecords,
             ledger: Ledger, lease: RunLease, worker: str, tag: str | None) -> str:
    """4-5: resume the run under a heartbeat and record its outcome."""
    rt_box: list = []

    def stop() -> None:
        if rt_box:
            rt_box[0].cancel()

    beat = Heartbeat(lease, delivery_tag=tag, on_lost=stop,
                     on_beat=lambda: records.cancel_requested(run_id) and stop())
    at = Attempt(run_id=run_id, spec=spec, client=client, ledger=ledger, lease_ok=lease.check,
                 token=lease.token, worker=worker, checkpoints=cfg.checkpoints,
                 output_dir=Path(cfg.fleet_dir) / "output",
                 should_stop=lambda: records.cancel_requested(run_id), prefix=cfg.prefix)
    try:
        rt = build_runtime(at)
        rt_box.append(rt)
        with beat:
            ref = start_reference(rt, run_id, spec.task)
            result = rt.run(spec.task, resume_from=ref)
    except CheckpointError as exc:
        if exc.code == "run_finished":  # it finished, but its worker died before recording it
            return _end(records, ledger, run_id, "finished", worker,
                        result=_finished_summary(rt_box[0], run_id, exc.details.get("id")))
        return _end(records, ledger, run_id, "error", worker, error=exc)
    except Exception as exc:  # a bug or an unreachable store: on record, never a silent loop
        logger.exception("run %s failed on %s", run_id, worker)
        return _end(records, ledger, run_id, "error", worker, error=AgentError(
            "internal_error", f"{type(exc).__name__}: {exc}"))
    if not lease.check():  # 5. superseded: the new holder owns the record now...
        if lease.current_holder() is None and not _settled(records, run_id):
            app.send_task(TASK_NAME, args=[run_id])  # ...or nobody does: hand it on
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
    lease, and an import holding the interpreter's import lock can delay its heartbeat.
    """
    fleet_llm(RunSpec(task="warm up"))
    count_text_tokens("warm up")


@app.task(name=TASK_NAME, bind=True)
def run_task(self: Any, run_id: str) -> str:
    """The Celery task: one delivery of a fleet run (``run_attempt``)."""
    return run_attempt(run_id, worker=self.request.hostname or "", task_id=self.request.id)

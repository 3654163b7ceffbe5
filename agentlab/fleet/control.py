"""Using the fleet from anywhere: submit runs, watch them, cancel them (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``; ``agentlab submit`` and ``agentlab runs`` are this
module on the command line. ``Fleet`` talks to Redis only (the record, the cancel flag) and
to the broker (one Celery message per delivery); it never needs a worker to be alive, so a
run can be submitted, listed or cancelled while the fleet is down.

Every method turns a Redis that stops answering into ``FleetUnavailableError`` (code
``redis_unavailable``, one line), never a raw ``redis.ConnectionError``. ``submit`` never leaves
a ghost: if the message cannot be sent after the record was written, the record is marked
``submit_failed`` (and if even that cannot be written, the reaper marks it later).

Cancelling sets a flag in Redis rather than only revoking the Celery task: a revoke lives in
the memory of the workers alive when it is sent and cannot stop a running task on every pool
(``../shared/FLEET_NOTES.md``); the flag is read by the worker before a run starts, at every
turn and by its heartbeat, and stops it at the next safe point on any pool.
"""
from __future__ import annotations

import time
from typing import Any, Iterable

from ..errors import ConfigError
from .app import TASK_NAME, FleetConfig, make_app
from .connection import RedisTarget
from .decisions import approve as approve_call, reject as reject_call
from .ledger import Ledger
from .reach import FleetUnavailableError, unavailable
from .runs import PAUSED, QUEUED, SUBMIT_FAILED, TERMINAL, RunRecords, RunSpec, new_fleet_run_id

__all__ = ["Fleet", "FleetUnavailableError", "connect"]


def connect(cfg: FleetConfig) -> Any:
    """A ``redis.Redis`` for ``cfg.redis_url`` that answered PING, else ``FleetUnavailableError``."""
    client = RedisTarget(cfg.redis_url, socket_timeout_s=5.0).client
    try:
        client.ping()
    except Exception as exc:  # refused, timed out, auth: all mean "the fleet is not there"
        raise FleetUnavailableError(cfg.redis_url, exc) from None
    return client


class Fleet:
    """A handle on the fleet described by ``cfg`` (default: the environment's)."""

    def __init__(self, cfg: FleetConfig | None = None) -> None:
        self.cfg = cfg or FleetConfig.from_env()
        self.client = connect(self.cfg)
        self.records = RunRecords(self.client, self.cfg.prefix)
        self.ledger = Ledger(self.client, self.cfg.prefix)
        self.app = make_app(self.cfg)

    # -- submitting
    def submit(self, task: str, *, run_id: str | None = None, **options: Any) -> str:
        """Record a run and queue its first delivery; returns its run id.

        ``options`` are ``RunSpec`` fields: ``time_scale``, ``tool_latency_s``, ``max_turns``,
        ``max_attempts``, ``max_infra_losses``, ``tool_limits``, ``approve_tools``,
        ``crash_on_tool``, ``tools``, ``max_cost_usd``.
        """
        spec = RunSpec(task=task, **options)
        run_id = run_id or new_fleet_run_id()
        with unavailable(self.cfg.redis_url):
            self.records.create(run_id, spec)
        try:
            self.enqueue(run_id)
        except Exception as exc:  # compensate: no ghost run left `queued` forever
            try:
                self.records.update(run_id, state=SUBMIT_FAILED, error={
                    "code": "submit_failed", "retryable": True, "details": {},
                    "message": f"its message could not be sent ({type(exc).__name__})"})
            except Exception:  # Redis is gone: the reaper marks it once it is back
                pass
            raise
        with unavailable(self.cfg.redis_url):
            self.records.update(run_id, enqueued=1)
        return run_id

    def submit_many(self, tasks: Iterable[str], **options: Any) -> list[str]:
        return [self.submit(t, **options) for t in tasks]

    def enqueue(self, run_id: str) -> str:
        """Send one delivery of the run to the queue (a resume, for a run that has started)."""
        with unavailable(self.cfg.redis_url):
            return self.app.send_task(TASK_NAME, args=[run_id]).id

    # -- controlling
    def cancel(self, run_id: str) -> dict:
        """Stop the run: a queued one never starts, a running one stops at its next turn."""
        with unavailable(self.cfg.redis_url):
            return self._cancel(run_id)

    def _cancel(self, run_id: str) -> dict:
        rec = self.show(run_id)
        if rec["state"] in TERMINAL:
            return rec
        self.records.request_cancel(run_id)
        if rec["state"] == QUEUED:  # no worker has it: it is over now (a worker that takes
            self.records.update(run_id, state="cancelled")  # it anyway skips a terminal run)
            self.ledger.run_finished(run_id)
        elif rec["state"] == PAUSED:  # no worker holds it: a delivery ends it as cancelled
            self.records.update(run_id, state=QUEUED)
            self.enqueue(run_id)
        return self.show(run_id)

    def approve(self, run_id: str, call_id: str | None = None) -> dict:
        """Let a paused run's call run (every pending call when ``call_id`` is None); the run
        is queued again and continues on any worker."""
        return self._decide(run_id, call_id, lambda cid: approve_call(self.cfg.checkpoints,
                                                                      run_id, cid))

    def reject(self, run_id: str, call_id: str | None = None, reason: str = "") -> dict:
        """Refuse a paused run's call: the model gets ``reason`` as the tool result instead."""
        return self._decide(run_id, call_id, lambda cid: reject_call(self.cfg.checkpoints,
                                                                     run_id, cid, reason))

    def _decide(self, run_id: str, call_id: str | None, decide: Any) -> dict:
        with unavailable(self.cfg.redis_url):
            return self._decide_now(run_id, call_id, decide)

    def _decide_now(self, run_id: str, call_id: str | None, decide: Any) -> dict:
        rec = self.show(run_id)
        if rec["state"] != PAUSED:
            raise ConfigError("not_paused", f"run {run_id} is {rec['state']}, not paused: it "
                              "has no call waiting for approval")
        pending = [c["call_id"] for c in rec.get("pending") or []]
        for cid in [call_id] if call_id else pending:
            decide(cid)  # a new checkpoint revision with the decision (chapter 13's approval)
        self.records.update(run_id, state=QUEUED, pending=[], attempts=0,  # a fresh start
                            infra_losses=0)
        self.enqueue(run_id)
        return self.show(run_id)

    # -- reading
    def show(self, run_id: str) -> dict:
        """The run's record; ``ConfigError('run_not_found')`` for an unknown id."""
        with unavailable(self.cfg.redis_url):
            rec = self.records.get(run_id)
        if rec is None:
            raise ConfigError("run_not_found", f"no fleet run {run_id!r}; `agentlab runs list` "
                              "shows the runs this Redis knows")
        return rec

    def runs(self, limit: int | None = None) -> list[dict]:
        with unavailable(self.cfg.redis_url):
            return self.records.all(limit)

    def wait(self, run_ids: str | Iterable[str], timeout_s: float = 60.0, *,
             poll_s: float = 0.1, until: Iterable[str] = ()) -> list[dict]:
        """Wait until every run is terminal or paused (or in one of ``until``); their records.

        Raises ``ConfigError('wait_timeout')`` naming the runs still going after ``timeout_s``.
        """
        ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        stop = TERMINAL | {PAUSED} | set(until)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                recs = [self.show(i) for i in ids]
            except FleetUnavailableError as exc:
                # Redis restarted and still loading its data: waited out like a run still
                # going; a Redis that does not answer ends the wait at once (one line, exit 2)
                if not exc.details.get("loading") or time.monotonic() >= deadline:
                    raise
                time.sleep(poll_s)
                continue
            left = [r["run_id"] for r in recs if r["state"] not in stop]
            if not left:
                return recs
            if time.monotonic() >= deadline:
                raise ConfigError("wait_timeout", f"{len(left)} run(s) still going after "
                                  f"{timeout_s} s: {', '.join(left[:5])}", details={"runs": left})
            time.sleep(poll_s)

    def clear(self) -> int:
        """Delete every key of this fleet's namespace (records, ledger, leases); for tests."""
        with unavailable(self.cfg.redis_url):
            keys = list(self.client.scan_iter(match=f"{self.cfg.prefix}*"))
            return self.client.delete(*keys) if keys else 0

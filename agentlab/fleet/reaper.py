"""The reaper: runs nobody is working on are handed on within seconds, and ghosts are laid.

Taught in ``notebooks/13_fleet.ipynb``. The broker's visibility timeout redelivers a dead
worker's message only after it has passed (30 s by default), and never one that was lost or
acknowledged by mistake. The run's lease knows sooner: a live holder renews it every quarter of
its ttl, so a lease that has expired means its holder is gone. Every worker runs a ``Reaper``
thread; one pass at a time fleet-wide (a short lock in Redis), every ``reaper_interval_s``, it
reads the broker's queue and its unacknowledged messages and looks at each run that is not
settled:

==========  =====================================  ===========================================
state       finding                                action
==========  =====================================  ===========================================
running     lease free, its message unacknowledged  put the message back at the front of the
            and not refreshed for a lease ttl, its  queue (``requeue_front``, as kombu's own
            worker gone                             restore does); one infrastructure loss
running     lease free, no message anywhere, not   send a new message; one infrastructure loss
            updated for ``grace_s``
queued      no message anywhere for ``grace_s``,   a ghost of a failed submit: ``submit_failed``
            never enqueued
queued      no message anywhere for ``grace_s``,   the message was lost (e.g. Redis restarted
            enqueued before                         without its data): send a new one
running     its message waits in the queue behind  move it to the front: a started run resumes
            new runs                                before new runs start (a worker that loses
                                                    its connection puts its reserved message at
                                                    the back)
==========  =====================================  ===========================================

"Its worker gone": each reaper also keeps its worker process's *presence* key
(``<prefix>worker:<instance>``, renewed every pass, expiring after a lease ttl; the instance is
made new each time a worker process starts, ``$AGENTLAB_WORKER_INSTANCE``, and a run's record
names the instance running it). A run whose worker is still present lost only a pool process
(the run crashed it): that worker's main process requeues the message itself
(``task_reject_on_worker_lost``) and the next attempt counts it as a crash, not as an
infrastructure loss.

A message that is merely waiting (a duplicate delivery waiting for the lease) or long (a run
longer than the visibility timeout) is refreshed by its worker's heartbeat, so it is never
"not refreshed for a lease ttl" while its worker lives. Handing a run on twice is harmless:
the lease lets one delivery run it and the other returns ``duplicate``.
"""
from __future__ import annotations

import base64
import json
import logging
import threading
import time
import uuid
from typing import Any

from .app import QUEUE, TASK_NAME, FleetConfig, broker_key
from .connection import RedisTarget
from .runs import QUEUED, RUNNING, SUBMIT_FAILED, RunRecords

__all__ = ["Reaper", "run_of_message", "requeue_front", "INSTANCE_ENV"]

#: The worker process's identity (set by the worker at start, inherited by its pool).
INSTANCE_ENV = "AGENTLAB_WORKER_INSTANCE"

logger = logging.getLogger(__name__)


def run_of_message(message: Any) -> str | None:
    """The run id a kombu message of the fleet's run task carries (None for other tasks)."""
    try:
        if isinstance(message, (bytes, str)):
            message = json.loads(message)
        headers = message.get("headers") or {}
        if headers.get("task") != TASK_NAME:
            return None
        body = message.get("body")
        if (message.get("properties") or {}).get("body_encoding") == "base64":
            body = base64.b64decode(body)
        args = json.loads(body)[0]
        return str(args[0]) if args else None
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        return None


class Reaper:
    """Hand on the runs nobody works on (see the module docstring); ``reap_once`` is one pass."""

    def __init__(self, cfg: FleetConfig, app: Any, *, client: Any = None,
                 grace_s: float | None = None, instance: str | None = None) -> None:
        self.cfg, self.app, self.instance = cfg, app, instance
        self.client = client or RedisTarget(cfg.redis_url).client
        self.records = RunRecords(self.client, cfg.prefix)
        self.stale_s = cfg.lease_ttl_s  # a message its heartbeat has not refreshed for this long
        self.grace_s = grace_s if grace_s is not None else max(5.0, 2 * cfg.lease_ttl_s)
        self.interval_s = cfg.reaper_interval_s or 0.5
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="agentlab-reaper")

    def start(self) -> "Reaper":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                if self.instance:  # "this worker's main process is alive"
                    self.client.set(f"{self.cfg.prefix}worker:{self.instance}", "1",
                                    px=max(int(self.cfg.lease_ttl_s * 1000), 100))
                self.reap_once()
            except Exception as exc:  # Redis away: the next pass tries again
                logger.debug("reaper pass failed: %s", exc)

    def in_flight(self) -> tuple[dict[str, tuple[int, bytes]], dict[str, list[tuple[str, float]]]]:
        """Runs with a message in the queue (how many messages are ahead of it, the message);
        runs with unacknowledged messages (tag, score)."""
        raw = self.client.lrange(broker_key(self.cfg, QUEUE), 0, -1)
        queued = {}  # consumers pop from the right: the last element is the next one out
        for i, payload in enumerate(raw):
            run_id = run_of_message(payload)
            if run_id:
                queued[run_id] = (len(raw) - 1 - i, payload)
        scores = dict(self.client.zrange(broker_key(self.cfg, "unacked_index"), 0, -1,
                                         withscores=True))
        unacked: dict[str, list[tuple[str, float]]] = {}
        for tag, payload in self.client.hgetall(broker_key(self.cfg, "unacked")).items():
            try:
                run_id = run_of_message(json.loads(payload)[0])
            except (ValueError, IndexError, TypeError):
                run_id = None
            if run_id:
                unacked.setdefault(run_id, []).append((tag.decode() if isinstance(tag, bytes)
                                                       else tag, float(scores.get(tag, 0))))
        return queued, unacked

    def reap_once(self) -> dict[str, list[str]]:
        """One pass (skipped when another worker's reaper holds this interval); what it did."""
        done: dict[str, list[str]] = {"restored": [], "resent": [], "ghosts": [], "front": []}
        lock_ms = max(int(self.interval_s * 900), 50)
        if not self.client.set(f"{self.cfg.prefix}reaper", "1", nx=True, px=lock_ms):
            return done
        queued, unacked = self.in_flight()
        now = time.time()
        records = self.records.all()
        resumes = sum(r["state"] == RUNNING and r["run_id"] in queued for r in records)
        for rec in records:
            run_id, state = rec["run_id"], rec["state"]
            if state == RUNNING and run_id in queued and queued[run_id][0] >= resumes:
                # a started run waits behind new ones (a worker that lost its connection puts
                # its reserved message at the back): resumes go first
                if self.client.eval(_TO_FRONT, 1, broker_key(self.cfg, QUEUE), queued[run_id][1]):
                    done["front"].append(run_id)
            if state not in (QUEUED, RUNNING) or run_id in queued:
                continue
            idle = now - rec["updated_at"] > self.grace_s
            if state == RUNNING and not self.client.exists(f"{self.cfg.prefix}lease:{run_id}"):
                stale = [tag for tag, score in unacked.get(run_id, []) if now - score > self.stale_s]
                present = rec.get("instance") and self.client.exists(
                    f"{self.cfg.prefix}worker:{rec['instance']}")
                if stale and present:
                    continue  # a crashed pool process: its own worker requeues the message
                if stale and self._still(run_id, RUNNING):
                    for tag in stale:
                        self._restore(tag)
                    self.records.add_infra_loss(run_id)
                    done["restored"].append(run_id)
                elif run_id not in unacked and idle and self._still(run_id, RUNNING):
                    self.app.send_task(TASK_NAME, args=[run_id])
                    self.records.add_infra_loss(run_id)
                    done["resent"].append(run_id)
            elif state == QUEUED and run_id not in unacked and idle and self._still(run_id, QUEUED):
                if rec.get("enqueued"):
                    self.app.send_task(TASK_NAME, args=[run_id])
                    done["resent"].append(run_id)
                else:
                    self.records.update(run_id, state=SUBMIT_FAILED, error={
                        "code": "submit_failed", "retryable": True, "details": {},
                        "message": "the run was recorded but its message was never sent; "
                                   "submit it again"})
                    done["ghosts"].append(run_id)
        for kind, ids in done.items():
            if ids:
                logger.warning("reaper: %s %s", kind, ", ".join(ids))
        return done

    def _still(self, run_id: str, state: str) -> bool:
        """Read the state again just before acting (a worker may have settled it since)."""
        return (self.records.get(run_id) or {}).get("state") == state

    def _restore(self, tag: str) -> None:
        requeue_front(self.client, self.cfg, tag)


# Move a queued message to the front of the queue (if it is still there).
_TO_FRONT = """
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[1], ARGV[1])
  return 1
end
return 0
"""

# Move an unacknowledged message back to the front of its queue, atomically and only if it is
# still the one we read (another reaper or the attempt itself may have moved it already).
_REQUEUE = """
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[3])
return 1
"""


def requeue_front(client: Any, cfg: FleetConfig, tag: str) -> bool:
    """Put the unacknowledged message ``tag`` back at the front of the fleet's queue (what
    kombu's own restore does) with a *new* delivery tag, so that a late acknowledgement of the
    old delivery (its worker finishing after all) cannot remove the new one; True if moved."""
    unacked = broker_key(cfg, "unacked")
    raw = client.hget(unacked, tag)
    if raw is None:
        return False
    message = json.loads(raw)[0]
    props = message.setdefault("properties", {})
    props["delivery_tag"] = str(uuid.uuid4())
    (props.setdefault("delivery_info", {}))["redelivered"] = True
    message.setdefault("headers", {})["redelivered"] = True
    return bool(client.eval(_REQUEUE, 3, unacked, broker_key(cfg, "unacked_index"),
                            broker_key(cfg, QUEUE), tag, raw, json.dumps(message)))

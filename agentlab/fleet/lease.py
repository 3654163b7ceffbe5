"""The run lease: one holder per run at a time, renewed while the run is alive (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. Celery with ``acks_late`` redelivers a run whose worker
died, which is what makes a fleet survive a kill -9. It also redelivers a run that is still
running, once its message has been unacknowledged for longer than the broker's visibility
timeout (``../shared/FLEET_NOTES.md``): then two workers hold the same run. The lease is what
makes that harmless:

- ``acquire`` is ``SET key holder NX PX ttl``: it succeeds for one holder only, and only when
  nobody holds the lease or the last holder stopped renewing it (its process died, so the key
  expired). A new holder also gets a *fencing token* (``INCR``), larger than every earlier one.
- ``Heartbeat`` renews the lease every ``ttl/4`` from a thread while the run is alive (a Lua
  script extends it only if this holder still owns it), and refreshes the message's score in
  kombu's ``unacked_index`` so the broker does not redeliver a run that is merely long.
- ``check()`` is called before every step and every checkpoint or tool-log write: it is true
  only while this holder's token is still the newest (and it renews the lease, atomically). A holder that lost the lease (paused
  past its ttl, say) finds out at its next step and stops without writing anything.
- ``holds()`` is the check an attempt uses: ``check()``, except that a Redis that does not
  answer counts as a lost lease (the attempt cannot know it still owns the run), and a lease
  found lost once stays lost for that attempt (``lost``; ``unreachable`` says why), so a run
  stopped by a blip does not write its cancelled state when Redis comes back.
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Callable

from .reach import UNREACHABLE

__all__ = ["RunLease", "Heartbeat"]

# Extend the lease only if ``holder`` still owns it (a plain PEXPIRE could revive a lease that
# another worker has taken over since).
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# The fencing check: true only if ``holder`` owns the lease and its token is the newest; then
# the lease is extended too, so every step an attempt takes also keeps it alive.
_HOLD = """
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('GET', KEYS[2]) == ARGV[2] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 0
"""
# Delete the lease only if ``holder`` still owns it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RunLease:
    """The lease on one run, as seen by one would-be holder (a worker's attempt).

    Args:
        client: a ``redis.Redis``.
        run_id: the run.
        ttl_s: how long the lease lives without a renewal; a dead holder's lease is free
            again after at most this long.
        prefix: key namespace (``<prefix>lease:<run_id>`` and ``<prefix>fence:<run_id>``).
        holder: who holds it (default: a fresh id; the worker name goes in front when given).
    """

    def __init__(self, client: Any, run_id: str, *, ttl_s: float = 10.0,
                 prefix: str = "agentlab:default:fleet:", holder: str | None = None) -> None:
        self.client, self.run_id, self.ttl_ms = client, run_id, max(int(ttl_s * 1000), 100)
        self.key, self.fence_key = f"{prefix}lease:{run_id}", f"{prefix}fence:{run_id}"
        self.holder = f"{holder or 'holder'}:{uuid.uuid4().hex[:12]}"
        self.token: int | None = None  # the fencing token, once acquired
        self.lost = False          # holds() found the lease lost (sticky for this attempt)
        self.unreachable = False   # ...because Redis did not answer
        self._renew = client.register_script(_RENEW)
        self._release = client.register_script(_RELEASE)
        self._hold = client.register_script(_HOLD)

    def acquire(self) -> bool:
        """Take the lease if it is free (never held, released, or expired); True if taken."""
        if not self.client.set(self.key, self.holder, nx=True, px=self.ttl_ms):
            return False
        self.token = int(self.client.incr(self.fence_key))
        return True

    def wait_acquire(self, timeout_s: float, *, poll_s: float = 0.2,
                     give_up: Callable[[], bool] = lambda: False) -> bool:
        """Try to take the lease until ``timeout_s`` passes or ``give_up()`` says stop."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self.acquire():
                return True
            if give_up() or time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)

    def renew(self) -> bool:
        """Extend the lease by its ttl; False if this holder no longer owns it."""
        return bool(self._renew(keys=[self.key], args=[self.holder, self.ttl_ms]))

    def check(self) -> bool:
        """True while this holder owns the lease and its fencing token is the newest (and then
        the lease is renewed: a step taken is a sign of life, whatever the heartbeat does)."""
        if self.token is None:
            return False
        return bool(self._hold(keys=[self.key, self.fence_key],
                               args=[self.holder, self.token, self.ttl_ms]))

    def holds(self) -> bool:
        """``check()`` for an attempt: False from the first time the lease is found lost or
        Redis does not answer (then ``unreachable`` is True), and False ever after."""
        if self.lost:
            return False
        try:
            ok = self.check()
        except UNREACHABLE:
            ok, self.unreachable = False, True
        self.lost = not ok
        return ok

    def release(self) -> bool:
        """Give the lease up (only if still ours), so the next delivery need not wait."""
        return bool(self._release(keys=[self.key], args=[self.holder]))

    def current_holder(self) -> str | None:
        """Who holds the lease now (None when free)."""
        owner = self.client.get(self.key)
        return owner.decode() if isinstance(owner, bytes) else owner


class Heartbeat:
    """A daemon thread that keeps a run alive while it runs: renews the lease and the message.

    Every ``interval_s`` it renews ``lease``, refreshes the message's score in kombu's
    ``unacked_index`` sorted set (``ZADD XX``: only if the message is still unacknowledged) so
    the broker does not redeliver a long run, and calls ``on_beat()`` (the task checks the
    cancel flag there). When the renewal fails, or Redis does not answer (the lease is then
    marked lost and unreachable), it calls ``on_lost()`` once and stops.
    """

    def __init__(self, lease: RunLease, *, interval_s: float | None = None,
                 delivery_tag: str | None = None, unacked_index: str = "unacked_index",
                 on_beat: Callable[[], Any] = lambda: None,
                 on_lost: Callable[[], Any] = lambda: None) -> None:
        self.lease, self.delivery_tag, self.unacked_index = lease, delivery_tag, unacked_index
        self.interval_s = interval_s if interval_s is not None else lease.ttl_ms / 4000.0
        self.on_beat, self.on_lost = on_beat, on_lost
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name=f"agentlab-heartbeat-{lease.run_id[:12]}")

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def beat(self) -> None:
        """One heartbeat (the thread calls this every ``interval_s``)."""
        if not self.lease.renew():
            self.lost = True
            self.on_lost()
            return
        self.refresh_message()
        self.on_beat()

    def refresh_message(self) -> None:
        """Tell the broker the message is still being worked on (its delivery time = now)."""
        if self.delivery_tag:  # keep the broker from redelivering a run that is only long
            self.lease.client.zadd(self.unacked_index, {self.delivery_tag: time.time()}, xx=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except UNREACHABLE:  # the attempt cannot know it still owns the run: it stops
                self.lease.lost = self.lease.unreachable = self.lost = True
                self.on_lost()
                return
            except Exception:  # anything else (a script reloaded): the next beat tries again
                continue
            if self.lost:
                return

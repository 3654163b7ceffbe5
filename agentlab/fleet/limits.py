"""Concurrency bounds across the fleet: at most N concurrent calls of a tool (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. ``--concurrency`` bounds one worker; a rate-limited API
needs a bound over all workers together. ``ToolSemaphore`` is a counting semaphore in Redis:
a sorted set of holders scored by when their slot expires. Taking a slot (a Lua script, so it
is atomic) first drops expired holders, so a worker killed while holding one frees it after
``ttl_s`` instead of never; the highest count ever held is kept in ``<key>:peak`` so a test
or a notebook can show the bound held.
"""
from __future__ import annotations

import time
import uuid
from typing import Any

__all__ = ["ToolSemaphore"]

_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  local n = redis.call('ZCARD', KEYS[1])
  if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
  return 1
end
return 0
"""


class ToolSemaphore:
    """At most ``limit`` holders of ``name`` at once, fleet-wide.

    Use as a context manager around one call: ``with ToolSemaphore(r, "web_search", 2): ...``.
    Waiting polls every ``poll_s`` (a slot frees when a call returns, so this is short).
    """

    def __init__(self, client: Any, name: str, limit: int, *, ttl_s: float = 60.0,
                 poll_s: float = 0.01, prefix: str = "agentlab:default:fleet:") -> None:
        self.client, self.name, self.limit = client, name, int(limit)
        self.ttl_s, self.poll_s = ttl_s, poll_s
        self.key = f"{prefix}sem:{name}"
        self._acquire = client.register_script(_ACQUIRE)
        self._holder: str | None = None

    def acquire(self, timeout_s: float | None = None) -> bool:
        """Wait for a slot (forever when ``timeout_s`` is None); True once held."""
        holder = uuid.uuid4().hex
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            now = time.time()
            if self._acquire(keys=[self.key, f"{self.key}:peak"],
                             args=[now, now + self.ttl_s, self.limit, holder]):
                self._holder = holder
                return True
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(self.poll_s)

    def release(self) -> None:
        if self._holder is not None:
            self.client.zrem(self.key, self._holder)
            self._holder = None

    def peak(self) -> int:
        """The most holders there ever were at once."""
        return int(self.client.get(f"{self.key}:peak") or 0)

    def __enter__(self) -> "ToolSemaphore":
        self.acquire()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

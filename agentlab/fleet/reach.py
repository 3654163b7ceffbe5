"""When Redis cannot be reached: one typed error for callers, "lease lost" for workers (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. Redis is the fleet's broker, its book of runs and the
lease of every run, so "Redis did not answer" must mean the same thing everywhere:

- **for a caller** (``Fleet``, ``agentlab submit|runs|worker``): ``FleetUnavailableError``
  (code ``redis_unavailable``, retryable), one line naming the server without its password.
  ``unavailable(url)`` turns redis-py's and kombu's connection errors raised inside its block
  into it, so a ``Fleet`` made while Redis was up never leaks ``redis.ConnectionError`` later.
- **for a worker**: an attempt that cannot check its lease cannot know that it still owns the
  run, so it behaves as if it lost it: no more turns, nothing written (``lease.RunLease.holds``);
  its delivery is not acknowledged (``tasks.py``) and the run continues once Redis is back.

``UNREACHABLE`` is the tuple of exceptions that mean "not reached" (not "refused": a wrong
password or a missing permission is not retried).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator

import redis
from kombu.exceptions import OperationalError

from ..errors import AgentError
from .connection import safe_url

__all__ = ["FleetUnavailableError", "UNREACHABLE", "unavailable", "wait_reachable",
           "is_unreachable", "loading"]

#: Exceptions that mean Redis did not answer (refused, reset, timed out), from redis-py and from
#: kombu (a message that could not be published after its retries).
UNREACHABLE: tuple[type[BaseException], ...] = (redis.ConnectionError, redis.TimeoutError,
                                                OperationalError, ConnectionError, TimeoutError)


def is_unreachable(exc: BaseException) -> bool:
    """True for a connection error, raw or already typed by a store (``redis_unavailable``)."""
    if isinstance(exc, redis.AuthenticationError):
        return False
    return isinstance(exc, UNREACHABLE) or getattr(exc, "code", None) == "redis_unavailable"


class FleetUnavailableError(AgentError):
    """Redis (the fleet's broker and store) cannot be reached."""

    def __init__(self, url: str, exc: BaseException) -> None:
        url = safe_url(url)
        text = " ".join(str(exc).split())[:200]  # one line, whatever the driver said
        super().__init__("redis_unavailable", f"cannot reach Redis at {url} ({type(exc).__name__}"
                         f": {text}); start it (redis-server --port 6379) or set AGENTLAB_REDIS_URL",
                         retryable=True, details={"url": url, "loading": loading(exc)})


def loading(exc: BaseException) -> bool:
    """True when Redis answered but is still loading its data (just restarted with an
    append-only file): it will serve in a moment, unlike a server that does not answer."""
    return isinstance(exc, redis.BusyLoadingError)


@contextlib.contextmanager
def unavailable(url: str) -> Iterator[None]:
    """Raise ``FleetUnavailableError`` for a connection error inside the block."""
    try:
        yield
    except redis.AuthenticationError:  # refused, not unreachable: the caller's own error
        raise
    except UNREACHABLE as exc:
        raise FleetUnavailableError(url, exc) from None


def wait_reachable(client: Any, timeout_s: float, poll_s: float = 0.25) -> bool:
    """PING ``client`` until it answers (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            client.ping()
            return True
        except UNREACHABLE:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)

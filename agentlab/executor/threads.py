"""Worker threads for sync tools, and the process-wide cap on abandoned ones (chapter 03).

Python cannot kill a thread. A sync call that misses its deadline is *abandoned*: the batch
moves on, the thread runs until the function returns by itself. Each abandoned thread is
counted here, for the whole process: one runtime per request means one executor per request,
so a cap per executor would let 1,000 requests leave 1,000 stuck threads. Once
``abandoned_limit()`` of them are still running, executors refuse new calls with
``executor_saturated`` instead of starting more threads (calls already running when the cap is
reached may still add to it, so the count stays below the cap plus the calls in flight).
"""
from __future__ import annotations

import inspect
import logging
import queue
import threading
from typing import Any, Callable

from ..errors import ToolError
from ..knobs import positive_int

__all__ = ["WorkerPool", "abandoned_threads", "abandoned_calls", "abandoned_limit",
           "set_abandoned_limit", "DEFAULT_ABANDONED_LIMIT"]

logger = logging.getLogger(__name__)

#: Abandoned threads tolerated in one process before new calls fail fast.
DEFAULT_ABANDONED_LIMIT = 32

_lock = threading.Lock()
_abandoned: dict[int, tuple[str, str]] = {}  # id(call state) -> (tool name, tool_call_id)
_limit = DEFAULT_ABANDONED_LIMIT


def abandoned_threads() -> int:
    """How many abandoned tool threads are still running in this process."""
    with _lock:
        return len(_abandoned)


def abandoned_calls() -> list[tuple[str, str]]:
    """(tool name, tool_call_id) of every abandoned call still running in this process."""
    with _lock:
        return list(_abandoned.values())


def abandoned_limit() -> int:
    """The process-wide cap (see the module docstring)."""
    return _limit


def set_abandoned_limit(limit: int) -> int:
    """Set the process-wide cap; returns the previous one."""
    global _limit
    limit = positive_int("abandoned limit", limit)
    with _lock:
        previous, _limit = _limit, limit
    return previous


def check_capacity(name: str, mine: list[tuple[str, str]], max_mine: int) -> None:
    """Raise ``executor_saturated`` instead of starting one more thread that may hang, when
    an executor has ``max_mine`` abandoned calls (``mine``) or the process has its limit."""
    everyone = abandoned_calls()
    if len(mine) < max_mine and len(everyone) < _limit:
        return
    stuck, where = (mine, "of this executor") if len(mine) >= max_mine else \
        (everyone, "in this process")
    names = sorted({n for n, _ in stuck})
    raise ToolError("executor_saturated", f"'{name}' was not run: {len(stuck)} earlier calls "
                    f"{where} ({', '.join(names)}) timed out and are still running. Avoid "
                    "these tools for now or answer without them.")


def register_abandoned(key: int, info: tuple[str, str]) -> None:
    with _lock:
        _abandoned[key] = info


def release_abandoned(key: int) -> None:
    with _lock:
        _abandoned.pop(key, None)


def call_sync(func: Callable, kwargs: dict, name: str) -> tuple[Any, BaseException | None]:
    """``(value, error)`` of ``func(**kwargs)`` in a worker; a coroutine returned by a plain
    function is closed (it would never run) and reported as ``unsupported_type``."""
    try:
        value = func(**kwargs)
    except BaseException as exc:  # a thread cannot re-raise; record it
        return None, exc
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # never awaited: close it to avoid a "never awaited" warning
        return None, ToolError("unsupported_type", f"Tool '{name}' returned an awaitable from "
                               "a plain function, so it never ran; its author must declare it "
                               "`async def`.")
    return value, None


class WorkerPool:
    """Daemon threads that run jobs; a new thread only when no idle one is waiting.

    Daemon, so a hung tool never blocks interpreter exit (``ThreadPoolExecutor`` joins its
    threads at exit). Workers are reused (starting a thread costs ~0.1 ms; handing a call to an
    idle worker ~0.01 ms) and a worker idle for ``idle_s`` seconds exits. Invariant: jobs in
    the queue <= waiting workers - ``idle``, because a submitter reserves a worker
    (``idle -= 1``) before queueing, and a worker whose wait timed out only exits when it can
    un-count itself from ``idle``.
    """

    idle_s = 10.0

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, job: Any) -> None:
        with self._lock:
            spawn = self._idle == 0
            if spawn:
                self.threads += 1
            else:
                self._idle -= 1
        self._jobs.put(job)
        if spawn:
            threading.Thread(target=self._loop, daemon=True, name="agentlab-tool-worker").start()

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_s)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # nobody reserved this worker: leave
                        self._idle -= 1
                        self.threads -= 1
                        return
                continue  # reserved: the job is on its way
            try:
                job()
            except BaseException:  # never lose the worker (jobs catch their own errors)
                logger.exception("tool worker job failed")
            with self._lock:
                self._idle += 1

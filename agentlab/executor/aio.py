"""The event loop on which ``async def`` tools run (chapter 03, ``notebooks/03_tool_executor``).

Calling an ``async def`` function only creates a coroutine; nothing runs until an event loop
drives it. Each ``ToolExecutor`` owns one loop, in a daemon thread started on the first async
call, so async tools work the same from a script, from a thread, and from inside Jupyter
(whose own loop is already running in the caller's thread, where ``asyncio.run`` would fail).
Unlike a thread, a task can be stopped: a timed-out async call is cancelled
(``CancelledError`` is raised at its next ``await``), so it does not keep running.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from typing import Any, Callable

__all__ = ["LoopRunner"]


async def _drive(func: Callable, kwargs: dict) -> Any:
    value = func(**kwargs)
    if inspect.isawaitable(value):  # a coroutine (or a wrapper that returned one)
        value = await value
    return value


class LoopRunner:
    """One event loop in a daemon thread; ``submit`` runs a tool call on it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task] = set()

    def _ensure(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = asyncio.new_event_loop()
                ready = threading.Event()
                thread = threading.Thread(target=self._run, args=(loop, ready), daemon=True,
                                          name="agentlab-tool-loop")
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
            return self._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def submit(self, func: Callable, kwargs: dict) -> concurrent.futures.Future:
        """Start ``func(**kwargs)`` on the loop; cancelling the future cancels the task."""
        loop = self._ensure()

        async def job() -> Any:
            task = asyncio.current_task()
            self._tasks.add(task)
            try:
                return await _drive(func, kwargs)
            finally:
                self._tasks.discard(task)
        return asyncio.run_coroutine_threadsafe(job(), loop)

    def running_tasks(self) -> int:
        """Tool tasks still running on the loop (a cancelled task that ignores its
        cancellation keeps running and is counted here)."""
        return len(self._tasks)

    def close(self) -> None:
        """Cancel what still runs and stop the loop (also done when the executor is freed)."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None and not loop.is_closed():
            def stop() -> None:
                for task in list(self._tasks):
                    task.cancel()
                loop.call_soon(loop.stop)
            try:
                loop.call_soon_threadsafe(stop)
            except RuntimeError:  # already closed
                pass

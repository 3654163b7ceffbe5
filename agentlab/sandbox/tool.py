"""A tool that runs in the sandbox: ``SandboxedTool`` (chapter 15, ``notebooks/15_sandbox``).

``ToolRegistry.register(f, sandbox=SandboxPolicy(...))`` stores ``policy.wrap(f)``: the same
signature and docstring (the schema is built from ``f``), but a call runs in a warm worker of
the policy's pool. Two ways in:

- ``tool(**kwargs)``: a plain blocking call bounded by ``policy.timeout_s`` (what a DAG
  executor, a user's own executor or a notebook cell does);
- ``tool.submit_call(kwargs, timeout_s)``: a ``SandboxFuture``, which chapter 03's
  ``ToolExecutor`` uses for any tool that offers it: the executor's deadline and the run's
  cancel then *kill* the call (``future.cancel()``) instead of abandoning a thread.

Nothing here is specific to one process: a fleet worker (chapter 13) that builds the same
registry runs the same sandboxed tools in its own pool; no special case is needed.
"""
from __future__ import annotations

import concurrent.futures
import functools
import threading
from typing import Any, Callable

from .pool import pool_for

__all__ = ["SandboxedTool", "SandboxFuture"]


class SandboxFuture(concurrent.futures.Future):
    """The future of one sandboxed call. ``cancel()`` kills the call (and every process it
    started) whether or not it has started, unlike a thread's future."""

    #: How the executor words a stopped call (see ``ToolExecutor._abandon``).
    stop_words = ("killed with every process it started",
                  "Its outcome is unknown (it may have done part of its work; it is not retried "
                  "automatically)")

    def __init__(self) -> None:
        super().__init__()
        self.call: Any = None
        self._stop = threading.Event()

    def cancel(self) -> bool:
        self._stop.set()
        call = self.call
        return bool(call is not None and call.kill("cancelled")) or not self.done()


class SandboxedTool:
    """``func`` run under ``policy`` (see the module docstring); call it like ``func``."""

    def __init__(self, func: Callable, policy: Any, name: str | None = None) -> None:
        functools.update_wrapper(self, func)
        self.sandboxed_function, self.policy = func, policy
        self.name = name or getattr(func, "__name__", "tool")

    def __call__(self, **kwargs: Any) -> Any:
        pool = pool_for(self.policy)
        return pool.submit(self.sandboxed_function, kwargs, None, self.name).wait()

    def submit_call(self, kwargs: dict, timeout_s: float) -> SandboxFuture:
        """Start the call now; its future ends with the value or a ``ToolError``."""
        future = SandboxFuture()
        future.set_running_or_notify_cancel()

        def run() -> None:
            try:
                call = pool_for(self.policy).submit(self.sandboxed_function, kwargs,
                                                    timeout_s, self.name)
                future.call = call
                if future._stop.is_set():
                    call.kill("cancelled")
                future.set_result(call.wait())
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
                future.set_exception(exc)

        threading.Thread(target=run, daemon=True, name=f"sandbox-{self.name}").start()
        return future

    def __repr__(self) -> str:
        return f"SandboxedTool({self.name!r}, {self.policy!r})"

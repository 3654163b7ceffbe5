"""A fleet run's side effects, guarded: tool calls and durable writes only while the lease holds.

Taught in ``notebooks/13_fleet.ipynb``. Chapter 11 made a run durable by wrapping its executor
and giving its checkpoint manager a store; the fleet adds two more wrappers at the same seams,
so the loop and the durable layer stay unchanged:

- ``GuardedExecutor`` sits *inside* chapter 11's ``DurableExecutor``, so it only sees calls
  that really run (a call answered from the durable log never reaches it). It takes the
  turn's ``ToolBatch`` (deadline, cancel, result callback, key prefix, approvals) and hands
  each call on in a copy of it, so a cancel stops the fleet's runs as fast as any. For each call it
  (1) checks the lease's fencing token, and refuses to run the call when it is stale (the run
  has a newer holder; the call comes back ``not_executed``, which the log does not record),
  (2) counts the execution in the ledger under its idempotency key, (3) takes the tool's
  fleet-wide semaphore slot if it has a limit, (4) runs it on the wrapped ``ToolExecutor``.
- ``FencedBackend`` wraps the checkpoint backend: every checkpoint and tool-log write checks
  the lease first and raises ``LeaseLostError`` when it is stale, so a holder that lost its
  lease cannot overwrite what the new holder wrote. Reads pass through.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from ..errors import AgentError
from ..executor import not_run
from ..executor.batch import BatchExecutor, ToolBatch, run_batch
from .ledger import Ledger
from .limits import ToolSemaphore
from .reach import UNREACHABLE, is_unreachable

__all__ = ["GuardedExecutor", "FencedBackend", "LeaseLostError"]


class LeaseLostError(AgentError):
    """This attempt no longer holds the run's lease: another worker continues the run."""

    def __init__(self, run_id: str) -> None:
        super().__init__("lease_lost", f"run {run_id} has a newer lease holder; this attempt "
                         "stops without writing", details={"run_id": run_id})


class GuardedExecutor(BatchExecutor):
    """The tool executor of a fleet run (see the module docstring).

    Args:
        inner: the ``ToolExecutor`` that runs the calls.
        run_id: the run (idempotency keys are ``<run_id>:<call id>``).
        lease_ok: returns True while this attempt's lease holds (``RunLease.check``).
        ledger: where executions are counted.
        limits: ``{tool: max concurrent calls fleet-wide}``.
        client: the Redis client for the semaphores.
        tool_latency_s: simulated extra time per call (inside the semaphore slot).
        crash_on_tool: a teaching fault: SIGKILL this process when that tool is called.
        should_stop: the run's cancel flag, read before each call starts.
    """

    def __init__(self, inner: Any, run_id: str, lease_ok: Callable[[], bool], ledger: Ledger,
                 *, limits: dict | None = None, client: Any = None, tool_latency_s: float = 0.0,
                 crash_on_tool: str | None = None, on_lost: Callable[[], Any] = lambda: None,
                 prefix: str = "agentlab:default:fleet:",
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        self.inner, self.run_id, self.lease_ok, self.ledger = inner, run_id, lease_ok, ledger
        self.limits, self.client, self.prefix = dict(limits or {}), client, prefix
        self.tool_latency_s, self.crash_on_tool, self.on_lost = tool_latency_s, crash_on_tool, on_lost
        self.max_workers = getattr(inner, "max_workers", 4)
        self.should_stop = should_stop

    def run(self, batch: ToolBatch) -> list:
        """Each call guarded (see the class docstring); at most ``max_workers`` at once when
        the batch is parallel. Results in call order, each reported as it is known."""
        calls = list(batch.calls)
        if not batch.parallel or len(calls) < 2:
            return [self._one(call, batch) for call in calls]
        with ThreadPoolExecutor(min(len(calls), int(self.max_workers or 1)),
                                thread_name_prefix="agentlab-guarded") as pool:
            return list(pool.map(lambda call: self._one(call, batch), calls))

    def _one(self, call: Any, batch: ToolBatch) -> Any:
        if not self.lease_ok():  # 1. a stale holder (or one that cannot reach Redis) must not act
            self.on_lost()
            return self._skip(call, batch, "not executed: this worker lost the run's lease")
        if batch.cancelled() or self._stop_requested():  # a cancel stops the next call too
            return self._skip(call, batch, "not executed: the run was cancelled")
        key = f"{self.run_id}:{call.id}"
        limit = self.limits.get(call.name)
        slot = ToolSemaphore(self.client, call.name, limit, prefix=self.prefix) if limit else None
        try:
            self.ledger.call_started(self.run_id, key)  # 2. evidence, before anything happens
            if self.crash_on_tool == call.name:
                os.kill(os.getpid(), signal.SIGKILL)  # the poison run of the attempts lesson
            if slot is not None:
                slot.acquire()  # 3. the fleet-wide bound for this tool
        except UNREACHABLE:  # no evidence, no slot: the call must not run unrecorded
            self.on_lost()
            return self._skip(call, batch, "not executed: Redis cannot be reached")
        started = time.time()
        try:
            if self.tool_latency_s:  # a simulated slow tool, cut short by a cancel
                (batch.cancel or threading.Event()).wait(self.tool_latency_s)
            result = run_batch(self.inner, batch.replace(calls=[call], parallel=False))[0]
            ended = time.time()
        finally:
            if slot is not None:
                _quietly(slot.release)
        if not _quietly(lambda: self.ledger.call_finished(self.run_id, key, call.name, started,
                                                          ended)):
            self.on_lost()  # the result will not be logged either: a resume may run it again
        return result

    def _stop_requested(self) -> bool:
        try:
            return bool(self.should_stop())
        except UNREACHABLE:
            return False  # the lease check that follows fails the same way and stops the run

    @staticmethod
    def _skip(call: Any, batch: ToolBatch, why: str) -> Any:
        result = not_run([call], "not_executed", why)[0]
        batch.report(result)
        return result


def _quietly(fn: Callable[[], Any]) -> bool:
    """Run ``fn``; False (instead of raising) when Redis cannot be reached."""
    try:
        fn()
        return True
    except UNREACHABLE:
        return False


class FencedBackend:
    """A checkpoint backend whose writes require a valid lease (reads pass through).

    A read or write that cannot reach Redis calls ``on_unreachable()`` (the attempt's lease
    is then lost for good: a tool log that could not be read must not let a logged call run
    again once Redis answers) and ``on_lost()``. ``on_recorded(record)`` is told of each tool
    result written to the log (the ledger marks the call recorded)."""

    def __init__(self, inner: Any, run_id: str, lease_ok: Callable[[], bool],
                 on_lost: Callable[[], Any] = lambda: None,
                 on_unreachable: Callable[[], Any] = lambda: None,
                 on_recorded: Callable[[dict], Any] = lambda record: None) -> None:
        self.inner, self.run_id, self.lease_ok, self.on_lost = inner, run_id, lease_ok, on_lost
        self.on_unreachable, self.on_recorded = on_unreachable, on_recorded

    def _fence(self) -> None:
        if not self.lease_ok():
            self.on_lost()
            raise LeaseLostError(self.run_id)

    def _write(self, fn: Callable[[], Any]) -> Any:
        """A fenced write; Redis going away in the middle of it is a lost lease too."""
        self._fence()
        try:
            return fn()
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            self._unreachable()
            raise LeaseLostError(self.run_id) from None

    def _read(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception as exc:
            if is_unreachable(exc):
                self._unreachable()
            raise

    def _unreachable(self) -> None:
        self.on_unreachable()
        self.on_lost()

    def write(self, run_id: str, build: Callable, max_keep: int | None) -> dict:
        return self._write(lambda: self.inner.write(run_id, build, max_keep))

    def record_tool_result(self, record: dict) -> bool:
        stored = self._write(lambda: self.inner.record_tool_result(record))
        _quietly(lambda: self.on_recorded(record))  # the ledger: this call must never run again
        return stored

    def read(self, checkpoint_id: str | None) -> Any:
        return self._read(lambda: self.inner.read(checkpoint_id))

    def headers(self) -> list[dict]:
        return self._read(self.inner.headers)

    def tool_results(self, run_id: str) -> dict[str, dict]:
        return self._read(lambda: self.inner.tool_results(run_id))

    def delete(self, checkpoint_id: str) -> bool:
        self._fence()
        return self.inner.delete(checkpoint_id)

    def clear(self) -> int:
        self._fence()
        return self.inner.clear()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

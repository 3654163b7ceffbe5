"""One tool batch and everything that travels with it (chapters 03, 06, 11, 13).

A turn's tool calls leave the loop as one ``ToolBatch``: the calls, whether they may run in
parallel, the deadline, the run's cancel event, the callback told of each result, the
idempotency-key prefix and the ids of calls a human approved. Every executor in a stack
(``ToolExecutor``, chapter 11's ``DurableExecutor``, chapter 13's ``ApprovalExecutor`` and the
fleet's ``GuardedExecutor``) takes the batch in ``run(batch)`` and hands a changed copy
(``batch.replace(...)``) to the executor it wraps, so no wrapper needs to know another's
options and none can drop the cancel or the callback (the way httpx's request carries its
timeout through every transport).

A result is reported by an explicit call, ``batch.report(result)``, the moment it is known;
a failing callback is logged and never loses the result.

``run_batch(executor, batch)`` runs a batch on any executor: ``run(batch)`` when its class has
one, else a *foreign* executor written against ``execute(calls, timeout=None)`` /
``execute_parallel(calls, timeout=None)`` (API.md): it runs in a worker thread that the caller
stops waiting for within ``POLL_S`` of a cancel, its calls then answered ``cancelled``.
"""
from __future__ import annotations

import contextvars
import dataclasses
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .results import OnResult, ToolResult, not_run
from .threads import WorkerPool

__all__ = ["ToolBatch", "BatchExecutor", "ExecutorWrapper", "run_batch", "POLL_S"]

logger = logging.getLogger(__name__)

#: How often a wait looks at the cancel event (seconds): the latency of a cancel.
POLL_S = 0.02

_WORKERS = WorkerPool()  # for foreign executors (no thread exists until the first one)


@dataclass(frozen=True)
class ToolBatch:
    """One turn's tool calls and the options that travel with them through every executor.

    Attributes:
        calls: ``ToolCall``-like objects (``id``, ``name``, ``arguments``), in the model's order.
        parallel: the calls may run at once (``ToolExecutor.execute_parallel``).
        deadline: ``time.monotonic()`` by which the batch must end (None: no bound).
        cancel: the run's cancel event; set, the batch stops within ``POLL_S``.
        on_result: told of each result the moment it is known (``report``).
        key_prefix: the idempotency-key prefix (None: the executor's own, "" by default).
        approved: ids of calls a human approved (a call that needs approval runs only then).
    """

    calls: tuple = ()
    parallel: bool = False
    deadline: float | None = None
    cancel: threading.Event | None = None
    on_result: OnResult | None = None
    key_prefix: str | None = None
    approved: frozenset = frozenset()

    @classmethod
    def of(cls, calls: Iterable[Any], timeout: float | None = None, **options: Any) -> "ToolBatch":
        """A batch of ``calls`` that must end within ``timeout`` seconds from now."""
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        return cls(tuple(calls), deadline=deadline, **options)

    def timeout(self) -> float | None:
        """Seconds left before the deadline (never negative; None without one)."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def replace(self, **changes: Any) -> "ToolBatch":
        """A copy with ``changes`` (e.g. fewer ``calls``), every other option kept."""
        if "calls" in changes:
            changes["calls"] = tuple(changes["calls"])
        return dataclasses.replace(self, **changes)

    def also_report(self, listener: Callable[[ToolResult], Any]) -> "ToolBatch":
        """A copy whose results go to ``listener`` first, then to this batch's ``on_result``."""
        def both(result: ToolResult) -> None:
            try:
                listener(result)
            finally:
                self.report(result)
        return self.replace(on_result=both)

    def report(self, result: ToolResult) -> None:
        """Tell ``on_result`` of ``result``; what the callback raises is logged, never raised."""
        if self.on_result is None or result is None:
            return
        try:
            self.on_result(result)
        except Exception:  # noqa: BLE001 - a listener's failure must not lose the result
            logger.exception("on_result failed for %s", getattr(result, "tool_call_id", "?"))


class BatchExecutor:
    """Base of the package's executor wrappers: ``run(batch)`` is theirs to write;
    ``execute``/``execute_parallel`` (the article's names, API.md) build the batch for it."""

    def run(self, batch: ToolBatch) -> list:
        raise NotImplementedError

    def execute(self, tool_calls: Iterable[Any], timeout: float | None = None, **options: Any) -> list:
        """Run the calls one after another (``options``: ``ToolBatch`` fields)."""
        return self.run(ToolBatch.of(tool_calls, timeout, **options))

    def execute_parallel(self, tool_calls: Iterable[Any], timeout: float | None = None,
                         **options: Any) -> list:
        """Run the calls at once where the executor can (``options``: ``ToolBatch`` fields)."""
        return self.run(ToolBatch.of(tool_calls, timeout, parallel=True, **options))


class ExecutorWrapper(BatchExecutor):
    """A ``BatchExecutor`` around another executor, ``self.inner``: the attributes it does not
    define itself (``max_workers``, ``results_to_messages``, ...) are the inner one's."""

    inner: Any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "inner":  # never recurse before inner is set
            raise AttributeError(name)
        return getattr(self.inner, name)


def run_batch(executor: Any, batch: ToolBatch) -> list:
    """Run ``batch`` on ``executor`` (see the module docstring); results in call order."""
    if _takes_batches(type(executor)):
        return executor.run(batch)
    return _run_foreign(executor, batch)


def _takes_batches(cls: type) -> bool:
    """True when ``cls`` has a ``run(batch)`` that its ``execute``/``execute_parallel`` go
    through: a subclass that overrides ``execute`` below the ``run`` it inherits (a user's
    ``ToolExecutor`` subclass) is called through ``execute``, so its override is honoured."""
    def owner(name: str) -> int | None:
        return next((i for i, k in enumerate(cls.__mro__) if name in vars(k)), None)
    run = owner("run")
    if run is None or not callable(getattr(cls, "run")):
        return False
    return all(i is None or i >= run for i in (owner("execute"), owner("execute_parallel")))


def _run_foreign(executor: Any, batch: ToolBatch) -> list:
    """An executor with only ``execute``/``execute_parallel``: waited for in worker threads,
    abandoned within ``POLL_S`` of a cancel (the calls without a result answered ``cancelled``).
    With a result callback, the calls go one at a time (up to ``max_workers`` at once for a
    parallel batch), so each result is reported the moment its call returns."""
    calls, lock, done, failures = list(batch.calls), threading.Lock(), threading.Event(), []
    results: list = [None] * len(calls)
    jobs = [[list(range(len(calls)))]]  # one job, one group: the whole batch in one call
    if batch.on_result is not None and len(calls) > 1:  # k jobs, a group per call
        k = min(len(calls), int(getattr(executor, "max_workers", 4) or 1)) if batch.parallel else 1
        jobs = [[[i] for i in range(j, len(calls), k)] for j in range(k)]
    left = [len(jobs)]

    def work(job: list) -> None:
        try:
            for group in job:
                if batch.cancelled():
                    break
                part = [calls[i] for i in group]
                run = executor.execute_parallel if batch.parallel and len(part) > 1 else executor.execute
                for i, result in zip(group, run(part, timeout=batch.timeout())):
                    with lock:
                        fresh, results[i] = results[i] is None, results[i] or result
                    if fresh:
                        batch.report(result)
        except BaseException as exc:  # handed to the waiting thread
            failures.append(exc)
        finally:
            with lock:
                left[0] -= 1
                if not left[0]:
                    done.set()

    for job in jobs if not batch.cancelled() else ():
        context = contextvars.copy_context()  # the caller's context variables (span nesting)
        _WORKERS.submit(lambda job=job, context=context: context.run(work, job))
    while not batch.cancelled() and not done.wait(POLL_S):
        pass
    if failures and not batch.cancelled():
        raise failures[0]
    return _abandon_missing(batch, calls, results, lock)


def _abandon_missing(batch: ToolBatch, calls: list, results: list, lock: threading.Lock) -> list:
    """Answer (and report) the calls that have no result: their batch was abandoned on a
    cancel (or the executor returned too few results)."""
    code, why = ("cancelled", "the run was cancelled before the executor returned; it may "
                 "have done part of its work: check before calling it again") \
        if batch.cancelled() else ("executor_error", "the executor returned no result for it")
    with lock:
        missing = [i for i, r in enumerate(results) if r is None]
        for i, result in zip(missing, not_run([calls[i] for i in missing], code, why)):
            results[i] = result
    for i in missing:
        batch.report(results[i])
    return results

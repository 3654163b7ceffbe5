"""Cancellation that is never lost and never late (chapter 06, ``notebooks/06_runtime_loop``).

``AgentRuntime.cancel()`` sets a ``threading.Event`` from any thread. The loop honours it at
its safe points (before a model call, between streamed chunks, between tools); the helpers
here make the two long waits of a turn interruptible, so a cancel takes effect within about
``POLL_S`` instead of after the slow call:

* **A model call** runs in a daemon worker thread (reused: about 30 us per call) while the
  run's thread waits for it *or* for the cancel (``call_unless_cancelled``). On a cancel the call is abandoned: its reply (or
  error), when it comes, is discarded. A streamed call is pumped by a worker
  (``iterate_unless_cancelled``), which closes the stream (and with it the HTTP response) as
  soon as it next gets control.
* **A tool batch** carries the cancel event in its ``ToolBatch`` through every executor
  wrapper (``agentlab.executor.batch``): ``ToolExecutor`` stops waiting within ``POLL_S``,
  cancels the async calls, abandons the sync ones (Python cannot kill a thread) and reports
  each as ``cancelled``; calls not started yet are ``not_executed``. An executor that has only
  ``execute``/``execute_parallel`` is waited for in a worker like a model call
  (``run_batch``) and its calls reported ``cancelled``.

When is a cancel spent? Each ``cancel()`` is consumed by the first run that *ends* after it
(whatever its state): sent before ``run()`` or as it starts, it cancels that run; sent during
a run, it cancels it (or, if it came after the last model call, the run still finishes and
the cancel is spent with it), so it never leaks into the next run.
"""
from __future__ import annotations

import contextvars
import queue
import threading
from typing import Any, Callable, Iterable, Iterator

from ..executor.batch import POLL_S
from ..executor.threads import WorkerPool

__all__ = ["POLL_S", "Interrupted", "call_unless_cancelled", "iterate_unless_cancelled"]

_END = object()  # the pump's "no more items" marker
_WORKERS = WorkerPool()  # daemon threads, reused (no thread exists until the first call)


class Interrupted(Exception):
    """The run was cancelled while it waited; what it waited for was abandoned."""


def _in_worker(target: Callable[[], None]) -> None:
    """Run ``target`` in a daemon worker with the caller's context variables (span nesting)."""
    ctx = contextvars.copy_context()
    _WORKERS.submit(lambda: ctx.run(target))


def call_unless_cancelled(fn: Callable[[], Any], cancel: threading.Event) -> Any:
    """``fn()``'s value (or its exception), unless ``cancel`` is set first: then ``Interrupted``
    within ``POLL_S``, and whatever ``fn`` later returns or raises is discarded."""
    if cancel.is_set():
        raise Interrupted()
    done = threading.Event()
    outcome: list = []

    def work() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # handed to the waiting thread
            outcome.append((False, exc))
        done.set()

    _in_worker(work)
    while not done.wait(POLL_S):
        if cancel.is_set():
            raise Interrupted()
    if cancel.is_set():  # the reply came with the cancel: the cancel wins
        raise Interrupted()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def iterate_unless_cancelled(items: Iterable[Any], cancel: threading.Event) -> Iterator[Any]:
    """The items of ``items`` (a stream), read by a worker thread; stops with ``Interrupted``
    within ``POLL_S`` of a cancel. However this generator ends (done, cancelled, closed by its
    consumer), the worker stops reading and closes ``items`` -- in its own thread, the only one
    allowed to close a generator it is running -- as soon as its current read returns."""
    box: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def pump() -> None:
        try:
            for item in items:
                if stop.is_set():
                    break
                box.put((True, item))
        except BaseException as exc:
            box.put((False, exc))
        finally:
            getattr(items, "close", lambda: None)()
            box.put((True, _END))

    _in_worker(pump)
    try:
        while True:
            try:
                ok, item = box.get(timeout=POLL_S)
            except queue.Empty:
                if cancel.is_set():
                    raise Interrupted() from None
                continue
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()

"""Tool executor: run the model's tool calls with enforced timeouts, serially or in parallel.

Taught in ``notebooks/03_tool_executor.ipynb`` (article Step 3).

A sync call runs in a daemon worker thread (``threads.py``); an ``async def`` call runs as a
task on the executor's own event loop (``aio.py``). The caller waits for either with a
deadline, in ``execute`` (one at a time) and ``execute_parallel`` (up to ``max_workers`` at
once) alike. The article's parallel version waits inside ``with ThreadPoolExecutor(...)`` and
calls ``result(timeout)`` future by future: the ``with`` block joins every thread on exit, so
one hung tool holds the whole batch for as long as it hangs, and the timeouts add up.

What a timeout can stop: a timed-out async call is *cancelled* (``CancelledError`` at its next
``await``). Python cannot kill a thread, so a timed-out sync call is *abandoned*: reported as
``tool_timeout``, its thread runs on until the function returns, and its writes still happen
(so tools should carry their own request timeouts, and side-effecting tools be idempotent).
Abandoned threads are capped per process (``threads.py``): past the cap, calls fail fast.

The error contract: nothing raises out of ``execute``/``execute_parallel``. Each call yields one
``ToolResult`` in call order, rendered to text inside its own error boundary (``results.py``,
which lists the error codes); a failure carries ``error_code`` and a text telling the model
what to do differently.

A tool that offers ``submit_call`` (chapter 15's sandbox) runs like a task: at its deadline or a
cancel its future is cancelled, which *kills* the call and every process it started.

Timeouts: a call's own limit is the tool's ``timeout`` option, else
``timeout_manager.get_timeout(name)`` when a manager is set, else ``default_timeout``. The
``timeout`` argument of ``execute*`` bounds the whole batch (the runtime passes its remaining
time): no call runs past ``start + timeout``. ``ToolResult.timeout_s`` is the limit enforced.
With a ``timeout_manager``, every call that ran is reported through
``record_execution(name, duration_ms, success=, timed_out=)``; a call cut off by its own limit
is recorded as that limit in ms with ``timed_out=True`` (a call cut short only by the batch
bound is not recorded: it says nothing about the tool).

What is checked before a call starts (name, arguments, idempotency key, room, time left) is
in ``preflight.py``.

The batch and its options travel as one ``ToolBatch`` (``batch.py``): ``run(batch)``;
``execute``/``execute_parallel`` are shorthands that build one.

Cancellation: ``execute*(..., cancel=event)`` (``ToolBatch.cancel``) (a ``threading.Event``, the runtime's cancel flag)
stops the batch within ``CANCEL_POLL_S`` of the event being set, with the timeout machinery:
running calls are cancelled (async) or abandoned (sync) and reported ``cancelled``, calls not
started yet ``not_executed``.
"""
from __future__ import annotations

import concurrent.futures
import logging
import math
import threading
import time
import weakref
from typing import Any, Iterable

from ..errors import AgentError, ToolError
from ..knobs import positive_int, positive_number
from ..tools import ToolRegistry
from .aio import LoopRunner
from .calls import CallState, call_ids, enforced_s, report_execution, stoppable
from .preflight import preflight
from .batch import POLL_S, ToolBatch
from .results import OnResult, ToolResult, failed_result, not_run, render_result, safe_str
from .threads import (WorkerPool, abandoned_threads as _process_abandoned, call_sync, check_capacity,
                      register_abandoned, release_abandoned)

__all__ = ["ToolExecutor", "CANCEL_POLL_S"]

#: How often a batch given a ``cancel`` event looks at it (seconds).
CANCEL_POLL_S = POLL_S

logger = logging.getLogger(__name__)


class ToolExecutor:
    """Runs tool calls against a ``ToolRegistry``; see the module docstring for the contract.

    Args:
        registry: where tools, schemas, validation and per-tool options come from.
        default_timeout: seconds per call when neither the tool nor the manager sets one.
        max_workers: calls running at once in ``execute_parallel``.
        timeout_manager: optional ``AdaptiveTimeoutManager`` (``get_timeout``/``record_execution``).
        max_output_chars: longer results are cut with a visible marker.
        max_abandoned: this executor's abandoned-but-running threads tolerated before its new
            calls fail fast (default ``max(8, 4 * max_workers)``); the process-wide cap
            (``agentlab.executor.set_abandoned_limit``) applies as well.

    Every number is checked here (``ConfigError`` for 0, negatives, inf, NaN, None, bools).
    Thread-safe: several threads may call ``execute`` on one executor at once.
    """

    def __init__(self, registry: ToolRegistry, default_timeout: float = 30.0,
                 max_workers: int = 4, timeout_manager: Any = None, *,
                 max_output_chars: int = 20000, max_abandoned: int | None = None) -> None:
        self.registry = registry
        self.default_timeout = positive_number("default_timeout", default_timeout)
        self.max_workers = positive_int("max_workers", max_workers)
        self.timeout_manager = timeout_manager
        self.max_output_chars = positive_int("max_output_chars", max_output_chars)
        self.max_abandoned = (max(8, 4 * self.max_workers) if max_abandoned is None else
                              positive_int("max_abandoned", max_abandoned))
        self.idempotency_prefix = ""
        self._lock = threading.Lock()
        self._abandoned: dict[int, tuple[str, str]] = {}  # id(call state) -> (tool, call id)
        self._pool = WorkerPool()
        self._loop = LoopRunner()
        weakref.finalize(self, self._loop.close)

    # -- public API ---------------------------------------------------------------------------
    def run(self, batch: ToolBatch) -> list[ToolResult]:
        """Run a ``ToolBatch`` (``agentlab.executor.batch``): serially, or up to ``max_workers``
        calls at once when ``batch.parallel``; results in call order. Each result is reported
        (``batch.report``, e.g. to record it durably in chapter 11) the moment it is known."""
        return self._run_safely(batch, self.max_workers if batch.parallel else 1)

    def execute(self, tool_calls: Iterable[Any], timeout: float | None = None, *,
                idempotency_prefix: str | None = None, cancel: threading.Event | None = None,
                on_result: OnResult | None = None) -> list[ToolResult]:
        """Run the calls one after another, each bounded by its timeout (``run`` shorthand)."""
        return self.run(ToolBatch.of(tool_calls, timeout, key_prefix=idempotency_prefix,
                                     cancel=cancel, on_result=on_result))

    def execute_parallel(self, tool_calls: Iterable[Any], timeout: float | None = None, *,
                         idempotency_prefix: str | None = None,
                         cancel: threading.Event | None = None,
                         on_result: OnResult | None = None) -> list[ToolResult]:
        """Run up to ``max_workers`` calls at once; results in call order (``on_result`` is
        told in completion order). A ``run`` shorthand."""
        return self.run(ToolBatch.of(tool_calls, timeout, parallel=True,
                                     key_prefix=idempotency_prefix, cancel=cancel,
                                     on_result=on_result))

    @property
    def abandoned_threads(self) -> int:
        """How many of *this executor's* timed-out sync calls still run in their threads
        (``agentlab.executor.abandoned_threads()`` counts the whole process)."""
        with self._lock:
            return len(self._abandoned)

    process_abandoned_threads = staticmethod(_process_abandoned)

    worker_threads = property(lambda self: self._pool.threads,
                              doc="Worker threads alive now (busy, abandoned or idle).")
    running_tasks = property(lambda self: self._loop.running_tasks(),
                             doc="Async tool tasks still running on this executor's loop.")

    @property
    def abandoned_calls(self) -> list[tuple[str, str]]:
        """(tool name, tool_call_id) of each abandoned call that is still running."""
        with self._lock:
            return list(self._abandoned.values())

    def close(self) -> None:
        """Stop the event loop of async tools (cancelling what still runs on it)."""
        self._loop.close()

    @staticmethod
    def results_to_messages(results: Iterable[ToolResult]) -> list[dict]:
        """One ``{"role": "tool", "tool_call_id", "content"}`` message per result, in order."""
        return [{"role": "tool", "tool_call_id": r.tool_call_id, "content": r.result}
                for r in results]

    # -- the batch loop -----------------------------------------------------------------------
    def _run_safely(self, batch: ToolBatch, concurrency: int) -> list[ToolResult]:
        """The batch, behind a last boundary: an internal failure fails the calls without a
        result, each saying whether it had started (so the model knows what ran)."""
        states: list[CallState] = []
        results: list[ToolResult | None] = []
        try:
            states = [CallState(i, c) for i, c in enumerate(batch.calls)]
            results = [None] * len(states)
            self._run_batch(states, concurrency, batch, results)
        except Exception as exc:  # noqa: BLE001 - the executor never raises
            logger.exception("tool batch failed")
            for st in states:
                if results[st.index] is None:
                    call_id, name = call_ids(st.call)
                    ran = ("had started and may have completed its effects" if st.started
                           else "was not run")
                    self._done(batch, results, st.index, failed_result(
                        call_id, name, "executor_error", f"The executor failed "
                        f"({type(exc).__name__}: {safe_str(exc)}); '{name}' {ran}.", 0.0,
                        st.started, None, self.max_output_chars))
        return list(results)  # type: ignore[arg-type]

    @staticmethod
    def _done(batch: ToolBatch, results: list, index: int, result: ToolResult) -> None:
        """A call's result is known: keep it in its slot and report it at once."""
        results[index] = result
        batch.report(result)

    def _run_batch(self, states: list[CallState], concurrency: int, batch: ToolBatch,
                   results: list) -> None:
        """Start up to ``concurrency`` calls, wait for the first to finish or the nearest
        deadline, collect, repeat. Serial execution is the same loop with concurrency 1.
        A set ``cancel`` event stops the batch at once (``_interrupt``)."""
        start, cancel, timeout = time.perf_counter(), batch.cancel, batch.timeout()
        timeout = None if timeout is None or timeout == math.inf else float(timeout)
        if timeout is not None and math.isnan(timeout):
            raise ToolError("invalid_config", "the batch timeout is NaN")
        batch_deadline = None if timeout is None else start + max(0.0, timeout)
        prefix = self.idempotency_prefix if batch.key_prefix is None else batch.key_prefix
        pending = list(reversed(states))  # pop() from the end keeps call order
        running: list[CallState] = []
        cond = threading.Condition()
        with cond:
            while pending or running:
                if cancel is not None and cancel.is_set():
                    self._interrupt(pending, running, results, batch)
                    return
                # 1. start calls while there is room (rejected calls finish at once)
                while pending and len(running) < concurrency:
                    state = pending.pop()
                    early = self._prepare(state, batch_deadline, prefix, batch.approved)
                    if early is not None:
                        self._done(batch, results, state.index, early)
                    else:
                        self._start(state, cond)
                        running.append(state)
                if not running:
                    continue
                # 2. wait until something finishes or the nearest deadline passes
                now = time.perf_counter()
                nearest = min(s.deadline for s in running)
                if not any(s.done for s in running) and nearest > now:
                    cond.wait(nearest - now if cancel is None else
                              min(nearest - now, CANCEL_POLL_S))
                # 3. collect finished calls, give up on overdue ones
                now = time.perf_counter()
                for state in list(running):
                    if state.done:
                        self._done(batch, results, state.index, self._finish(state))
                    elif now >= state.deadline:
                        self._done(batch, results, state.index, self._abandon(state, now))
                    else:
                        continue
                    running.remove(state)

    def _prepare(self, state: CallState, batch_deadline: float | None, prefix: str,
                 approved: frozenset) -> ToolResult | None:
        """Check and time one call (``preflight.py``); a ``ToolResult`` if it must not run."""
        refusal = preflight(state, self.registry, prefix, batch_deadline, self.timeout_manager,
                            self.default_timeout, self._check_capacity, approved)
        if refusal is None:
            return None
        call_id, name = call_ids(state.call)
        return self._failed(call_id, name, *refusal, 0.0)

    def _check_capacity(self, name: str) -> None:
        if not (self.registry.is_async(name) or stoppable(self.registry.get_function(name))):
            check_capacity(name, self.abandoned_calls, self.max_abandoned)

    def _start(self, state: CallState, cond: threading.Condition) -> None:
        func = self.registry.get_function(state.call.name)
        is_async = self.registry.is_async(state.call.name)

        def finish(value: Any, error: BaseException | None, t0: float) -> None:
            elapsed_ms = (time.perf_counter() - t0) * 1000
            with cond:
                state.outcome, state.done = (value, error, elapsed_ms), True
                if state.abandoned:  # nobody is waiting any more: just stop counting it
                    self._release(state)
                    logger.info("abandoned call %s of '%s' finished after %.0f ms",
                                state.call.id, state.call.name, elapsed_ms)
                cond.notify_all()

        state.started = time.perf_counter()
        if is_async or stoppable(func):  # a task, or a tool that runs elsewhere (chapter 15)
            fut = state.future = self._loop.submit(func, state.kwargs) if is_async else \
                func.submit_call(state.kwargs, state.deadline - state.started)

            def done(f: concurrent.futures.Future) -> None:
                if f.cancelled():
                    finish(None, TimeoutError("cancelled"), state.started)
                else:
                    finish(None if f.exception() else f.result(), f.exception(), state.started)
            fut.add_done_callback(done)
            return

        def work() -> None:
            t0 = time.perf_counter()
            finish(*call_sync(func, state.kwargs, state.call.name), t0)

        self._pool.submit(work)

    def _finish(self, state: CallState) -> ToolResult:
        value, error, elapsed_ms = state.outcome  # type: ignore[misc]
        call_id, name = call_ids(state.call)
        limit = enforced_s(state)
        if error is None:
            report_execution(self.timeout_manager, name, elapsed_ms, success=True, timed_out=False)
            return render_result(call_id, name, value, elapsed_ms, state.started, limit,
                                 self.max_output_chars)
        report_execution(self.timeout_manager, name, elapsed_ms, success=False, timed_out=False)
        if isinstance(error, AgentError):
            code, text = error.code, safe_str(error.message)
        else:
            code = "tool_failed"
            text = (f"Tool '{name}' raised {type(error).__name__}: {safe_str(error)}. Check the "
                    "arguments or try a different approach; do not repeat the same call unchanged.")
        logger.info("tool '%s' failed: %s", name, text)
        return self._failed(call_id, name, code, text, elapsed_ms, state.started, limit)

    def _interrupt(self, pending: list[CallState], running: list[CallState], results: list,
                   batch: ToolBatch) -> None:
        """The run was cancelled: stop the running calls, skip the pending ones."""
        now = time.perf_counter()
        for state in running:
            self._done(batch, results, state.index, self._finish(state) if state.done else
                       self._abandon(state, now, cancelled=True))
        for state, result in zip(pending, not_run([s.call for s in pending], "not_executed",
                                                  "not executed: the run was cancelled")):
            self._done(batch, results, state.index, result)

    def _abandon(self, state: CallState, now: float, cancelled: bool = False) -> ToolResult:
        """Stop waiting for a call that timed out (or whose run was ``cancelled``)."""
        call_id, name = call_ids(state.call)
        limit = enforced_s(state)
        if state.own_limit and not cancelled:
            report_execution(self.timeout_manager, name, state.limit_s * 1000, success=False, timed_out=True)
        side = self.registry.get_options(name).get("side_effects")
        if state.future is not None:
            state.future.cancel()  # a task: CancelledError at its next await; a process: killed
            how, effects = getattr(state.future, "stop_words",
                                   ("cancelled", "It may have done part of its work"))
        else:
            state.abandoned = True
            with self._lock:
                self._abandoned[id(state)] = (name, call_id)
            register_abandoned(id(state), (name, call_id))
            how, effects = "abandoned", "It may still complete its side effects"
        what = (f"was {how} because the run was cancelled" if cancelled else
                f"did not finish within {limit:.1f} s and was {how}")
        text = (f"Tool '{name}' {what}. " + (f"{effects}: check before calling it again."
                if side or cancelled else "Try a smaller request, or continue without this result."))
        logger.info("tool '%s' (%s) %s", name, call_id, what)
        return self._failed(call_id, name, "cancelled" if cancelled else "tool_timeout", text,
                            (now - state.started) * 1000, state.started, limit)

    def _release(self, state: CallState) -> None:
        with self._lock:
            self._abandoned.pop(id(state), None)
        release_abandoned(id(state))

    def _failed(self, call_id: str, name: str, code: str, text: str, ms: float,
                started: float = 0.0, timeout_s: float | None = None) -> ToolResult:
        return failed_result(call_id, name, code, text, ms, started, timeout_s,
                             self.max_output_chars)

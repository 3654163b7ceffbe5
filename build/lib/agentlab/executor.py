"""Tool executor: run the model's tool calls with enforced timeouts, serially or in parallel.

Taught in ``notebooks/03_tool_executor.ipynb`` (article Step 3).

Every call runs in a daemon worker thread and the caller waits for it with a deadline, in
``execute`` (one at a time) and ``execute_parallel`` (up to ``max_workers`` at once) alike.
Workers are reused (starting a thread costs ~0.1 ms; handing a call to an idle worker ~0.01 ms)
and a worker idle for ``_WorkerPool.idle_s`` seconds exits.
The article's parallel version waits inside ``with ThreadPoolExecutor(...)`` and calls
``result(timeout)`` future by future: the ``with`` block joins every thread on exit, so one hung
tool holds the whole batch for as long as it hangs, and the timeouts add up one after another.

What a thread-based timeout cannot do: Python cannot kill a thread. A call that misses its
deadline is *abandoned*: the batch reports it as ``tool_timeout`` and moves on, but the thread
keeps running until the function returns by itself, and whatever it does (writes, requests)
still happens. Tools should therefore carry their own request timeouts, and a side-effecting
tool should be idempotent (it gets an ``idempotency_key``, see below). Abandoned threads are
counted (``abandoned_threads``); when ``max_abandoned`` of them are still running, new calls
fail fast with ``error_code="executor_saturated"`` instead of piling up more stuck threads.

The error contract: nothing raises out of ``execute``/``execute_parallel``. Each call yields one
``ToolResult`` in call order; a failure carries ``error_code`` and a text telling the model what
to do differently:

    tool_not_found     the name is not registered (the text lists the available tools)
    invalid_arguments  arguments are not a JSON object or fail ``ToolRegistry.validate``
    tool_failed        the function raised (type and message shown); an ``AgentError`` raised
                       by a tool keeps its own code
    tool_timeout       the call missed its deadline and was abandoned
    deadline_exceeded  the batch ``timeout`` ran out before the call could start
    executor_saturated too many abandoned calls are still running

Timeouts: a call's own limit is the tool's ``timeout`` option, else
``timeout_manager.get_timeout(name)`` when a manager is set, else ``default_timeout``. The
``timeout`` argument of ``execute*`` bounds the whole batch (the runtime passes its remaining
time): no call runs past ``start + timeout``. With a ``timeout_manager``, every call that ran
is reported through ``record_execution(name, duration_ms, success=, timed_out=)``; a call cut
off by its own limit is recorded as that limit in ms with ``timed_out=True`` (a call cut short
only by the batch bound is not recorded: it says nothing about the tool).

Idempotency: a tool registered with ``side_effects=True`` that has an ``idempotency_key``
parameter is called with ``idempotency_key=prefix + tool_call_id``, where the prefix is
``execute*(..., idempotency_prefix=...)`` or else the executor's ``idempotency_prefix``
attribute (the runtime sets it to ``"<run_id>:"``). A retried or resumed call with the same id
gets the same key, so the tool can refuse to write twice.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Iterable

from .errors import AgentError, ToolError
from .tools import IDEMPOTENCY_PARAM, ToolRegistry

__all__ = ["ToolResult", "ToolExecutor", "to_text"]

logger = logging.getLogger(__name__)


@dataclass
class ToolResult:
    """The outcome of one tool call, ready to go back to the model as a ``tool`` message.

    ``started_at`` is the ``time.perf_counter()`` at which the call started (0.0 if it never
    ran); the Gantt charts of ``notebooks/03_tool_executor`` are drawn from it.
    """

    tool_call_id: str
    name: str
    result: str
    success: bool
    duration_ms: float = 0.0
    error_code: str | None = None
    started_at: float = field(default=0.0, compare=False, repr=False)


def _json_default(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, (_dt.date, _dt.time)):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.decode("utf-8", errors="replace")
    if isinstance(obj, PurePath):
        return str(obj)
    return str(obj)


def to_text(value: Any, max_chars: int | None = None) -> str:
    """A tool's return value as the text the model reads.

    Strings pass through; anything else becomes JSON (non-ASCII kept, dataclasses as objects,
    Enums as their values, sets/tuples as arrays, dates in ISO form). Text longer than
    ``max_chars`` is cut, with a marker saying how much was cut.
    """
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False, default=_json_default)
        except (TypeError, ValueError):  # e.g. a circular structure
            value = str(value)
    if max_chars is not None and len(value) > max_chars:
        cut = len(value) - max_chars
        value = (value[:max_chars] + f"\n...[truncated: {cut} of {len(value)} characters cut; "
                 "ask for less, e.g. a narrower query or a page range]")
    return value


class _Call:
    """Book-keeping for one call of a batch; guarded by the batch's condition lock."""

    __slots__ = ("index", "call", "kwargs", "limit_s", "own_limit", "deadline", "started",
                 "done", "abandoned", "outcome")

    def __init__(self, index: int, call: Any) -> None:
        self.index, self.call = index, call
        self.kwargs: dict = {}
        self.limit_s = self.deadline = self.started = 0.0
        self.own_limit = True  # False when the batch bound, not the tool's limit, applies
        self.done = self.abandoned = False
        self.outcome: tuple[Any, BaseException | None, float] | None = None


class _WorkerPool:
    """Daemon threads that run jobs; a new thread only when no idle one is waiting.

    Daemon, so a hung tool never blocks interpreter exit (``ThreadPoolExecutor`` joins its
    threads at exit). Invariant: jobs in the queue <= waiting workers - ``idle``, because a
    submitter reserves a worker (``idle -= 1``) before queueing, and a worker whose wait timed
    out only exits when it can un-count itself from ``idle``.
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


class ToolExecutor:
    """Runs tool calls against a ``ToolRegistry``; see the module docstring for the contract.

    Args:
        registry: where tools, schemas, validation and per-tool options come from.
        default_timeout: seconds per call when neither the tool nor the manager sets one.
        max_workers: calls running at once in ``execute_parallel``.
        timeout_manager: optional ``AdaptiveTimeoutManager`` (``get_timeout``/``record_execution``).
        max_output_chars: longer results are cut with a visible marker.
        max_abandoned: abandoned-but-running threads tolerated before new calls fail fast
            (default ``max(8, 4 * max_workers)``).

    Thread-safe: several threads may call ``execute`` on one executor at once.
    """

    def __init__(self, registry: ToolRegistry, default_timeout: float = 30.0,
                 max_workers: int = 4, timeout_manager: Any = None, *,
                 max_output_chars: int = 20000, max_abandoned: int | None = None) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.registry = registry
        self.default_timeout = default_timeout
        self.max_workers = max_workers
        self.timeout_manager = timeout_manager
        self.max_output_chars = max_output_chars
        self.max_abandoned = max(8, 4 * max_workers) if max_abandoned is None else max_abandoned
        self.idempotency_prefix = ""
        self._lock = threading.Lock()
        self._abandoned: dict[int, tuple[str, str]] = {}  # id(call state) -> (tool, call id)
        self._pool = _WorkerPool()

    # -- public API ---------------------------------------------------------------------------
    def execute(self, tool_calls: Iterable[Any], timeout: float | None = None, *,
                idempotency_prefix: str | None = None) -> list[ToolResult]:
        """Run the calls one after another, each bounded by its timeout."""
        return self._run_batch(list(tool_calls), 1, timeout, idempotency_prefix)

    def execute_parallel(self, tool_calls: Iterable[Any], timeout: float | None = None, *,
                         idempotency_prefix: str | None = None) -> list[ToolResult]:
        """Run up to ``max_workers`` calls at once; results in call order."""
        return self._run_batch(list(tool_calls), self.max_workers, timeout, idempotency_prefix)

    @property
    def abandoned_threads(self) -> int:
        """How many timed-out calls are still running in their (abandoned) threads."""
        with self._lock:
            return len(self._abandoned)

    @property
    def worker_threads(self) -> int:
        """Worker threads alive now (busy, abandoned or idle; idle ones exit after a while)."""
        return self._pool.threads

    @property
    def abandoned_calls(self) -> list[tuple[str, str]]:
        """(tool name, tool_call_id) of each abandoned call that is still running."""
        with self._lock:
            return list(self._abandoned.values())

    @staticmethod
    def results_to_messages(results: Iterable[ToolResult]) -> list[dict]:
        """One ``{"role": "tool", "tool_call_id", "content"}`` message per result, in order."""
        return [{"role": "tool", "tool_call_id": r.tool_call_id, "content": r.result}
                for r in results]

    # -- the batch loop -----------------------------------------------------------------------
    def _run_batch(self, calls: list[Any], concurrency: int, timeout: float | None,
                   prefix: str | None) -> list[ToolResult]:
        """Start up to ``concurrency`` calls, wait for the first to finish or the nearest
        deadline, collect, repeat. Serial execution is the same loop with concurrency 1."""
        start = time.perf_counter()
        batch_deadline = None if timeout is None else start + max(0.0, timeout)
        prefix = self.idempotency_prefix if prefix is None else prefix
        results: list[ToolResult | None] = [None] * len(calls)
        pending = [_Call(i, c) for i, c in enumerate(calls)]
        pending.reverse()  # pop() from the end keeps call order
        running: list[_Call] = []
        cond = threading.Condition()
        with cond:
            while pending or running:
                # 1. start calls while there is room (rejected calls finish at once)
                while pending and len(running) < concurrency:
                    state = pending.pop()
                    early = self._prepare(state, batch_deadline, prefix)
                    if early is not None:
                        results[state.index] = early
                    else:
                        self._start(state, cond)
                        running.append(state)
                if not running:
                    continue
                # 2. wait until something finishes or the nearest deadline passes
                now = time.perf_counter()
                nearest = min(s.deadline for s in running)
                if not any(s.done for s in running) and nearest > now:
                    cond.wait(nearest - now)
                # 3. collect finished calls, abandon overdue ones
                now = time.perf_counter()
                for state in list(running):
                    if state.done:
                        results[state.index] = self._finish(state)
                    elif now >= state.deadline:
                        results[state.index] = self._abandon(state, now)
                    else:
                        continue
                    running.remove(state)
        return results  # type: ignore[return-value]

    def _prepare(self, state: _Call, batch_deadline: float | None,
                 prefix: str) -> ToolResult | None:
        """Validate and time one call; a ``ToolResult`` if it must not run."""
        call = state.call
        call_id, name = str(getattr(call, "id", "")), str(getattr(call, "name", ""))
        try:
            parse_error = getattr(call, "parse_error", None)
            if name not in self.registry:
                self.registry.validate(name, {})  # raises tool_not_found with the list
            if parse_error:
                raise ToolError("invalid_arguments", f"The arguments for '{name}' are not a "
                                f"valid JSON object ({parse_error}). Call '{name}' again with "
                                "the arguments as one JSON object.")
            kwargs = self.registry.validate(name, getattr(call, "arguments", None))
            options = self.registry.get_options(name)
            if options.get("idempotency_key"):
                kwargs[IDEMPOTENCY_PARAM] = f"{prefix}{call_id}"
            stuck = self.abandoned_calls
            if len(stuck) >= self.max_abandoned:
                names = sorted({n for n, _ in stuck})
                raise ToolError("executor_saturated", f"'{name}' was not run: {len(stuck)} "
                                f"earlier calls ({', '.join(names)}) timed out and are still "
                                "running. Avoid these tools for now or answer without them.")
        except AgentError as exc:
            return self._failed(call_id, name, exc.code, exc.message, 0.0)
        except Exception as exc:  # a bug while checking must still not escape the executor
            logger.exception("checking call %s of '%s' failed", call_id, name)
            return self._failed(call_id, name, "invalid_arguments", f"The arguments for "
                                f"'{name}' could not be checked ({type(exc).__name__}: {exc}).",
                                0.0)
        limit = self._own_limit(name, options)
        now = time.perf_counter()
        state.kwargs, state.limit_s, state.deadline = kwargs, limit, now + limit
        if batch_deadline is not None and batch_deadline < state.deadline:
            state.deadline, state.own_limit = batch_deadline, False
            if batch_deadline <= now:
                return self._failed(call_id, name, "deadline_exceeded", f"'{name}' was not run: "
                                    "the time budget for this step ran out before it could "
                                    "start. Retry it in a later step if it is still needed.", 0.0)
        return None

    def _own_limit(self, name: str, options: dict) -> float:
        if options.get("timeout") is not None:
            return float(options["timeout"])
        if self.timeout_manager is not None:
            try:
                return float(self.timeout_manager.get_timeout(name))
            except Exception:  # a broken manager must not break the batch
                logger.exception("timeout_manager.get_timeout(%r) failed", name)
        return float(self.default_timeout)

    def _start(self, state: _Call, cond: threading.Condition) -> None:
        func = self.registry.get_function(state.call.name)

        def work() -> None:
            t0 = time.perf_counter()
            value, error = None, None
            try:
                value = func(**state.kwargs)
            except BaseException as exc:  # a thread cannot re-raise; record it
                error = exc
            elapsed_ms = (time.perf_counter() - t0) * 1000
            with cond:
                state.outcome, state.done = (value, error, elapsed_ms), True
                if state.abandoned:  # nobody is waiting any more: just stop counting it
                    with self._lock:
                        self._abandoned.pop(id(state), None)
                    logger.info("abandoned call %s of '%s' finished after %.0f ms",
                                state.call.id, state.call.name, elapsed_ms)
                cond.notify_all()

        state.started = time.perf_counter()
        self._pool.submit(work)

    def _finish(self, state: _Call) -> ToolResult:
        value, error, elapsed_ms = state.outcome  # type: ignore[misc]
        call_id, name = str(state.call.id), state.call.name
        if error is None:
            self._record(name, elapsed_ms, success=True, timed_out=False)
            return ToolResult(call_id, name, to_text(value, self.max_output_chars), True,
                              elapsed_ms, None, state.started)
        self._record(name, elapsed_ms, success=False, timed_out=False)
        if isinstance(error, AgentError):
            code, text = error.code, error.message
        else:
            code = "tool_failed"
            text = (f"Tool '{name}' raised {type(error).__name__}: {error}. Check the "
                    "arguments or try a different approach; do not repeat the same call unchanged.")
        logger.info("tool '%s' failed: %s", name, text)
        return self._failed(call_id, name, code, text, elapsed_ms, state.started)

    def _abandon(self, state: _Call, now: float) -> ToolResult:
        state.abandoned = True
        with self._lock:
            self._abandoned[id(state)] = (state.call.name, str(state.call.id))
        name, limit = state.call.name, state.deadline - state.started
        if state.own_limit:
            self._record(name, state.limit_s * 1000, success=False, timed_out=True)
        side = self.registry.get_options(name).get("side_effects")
        text = (f"Tool '{name}' did not finish within {limit:.1f} s and was abandoned. "
                + ("It may still complete its side effects: check before calling it again."
                   if side else "Try a smaller request, or continue without this result."))
        logger.info("tool '%s' (%s) timed out after %.2f s", name, state.call.id, limit)
        return self._failed(str(state.call.id), name, "tool_timeout", text,
                            (now - state.started) * 1000, state.started)

    def _failed(self, call_id: str, name: str, code: str, text: str, ms: float,
                started: float = 0.0) -> ToolResult:
        return ToolResult(call_id, name, to_text(f"Error: {text}", self.max_output_chars), False,
                          ms, code, started)

    def _record(self, name: str, ms: float, *, success: bool, timed_out: bool) -> None:
        if self.timeout_manager is None:
            return
        try:
            self.timeout_manager.record_execution(name, ms, success=success, timed_out=timed_out)
        except Exception:
            logger.exception("timeout_manager.record_execution(%r) failed", name)

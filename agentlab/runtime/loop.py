"""Chapters 06-07 — ``AgentRuntime``: the agent loop with terminal states, budgets and hooks.

Taught in ``notebooks/06_runtime_loop.ipynb`` (section 4 of the article) and
``notebooks/07_streaming.ipynb`` (section 5.1). The loop is the article's: call the model; if it
asks for tools, run them, append the results and go round again; if it answers in plain text,
stop. Around that loop this module keeps the promises the article's version breaks:

* **A run always ends in a terminal state** (``RunState``): ``FINISHED`` only when the model
  answered; ``EXHAUSTED`` when a budget ran out (``max_turns``, ``max_total_time``, or an answer
  cut at the model's length limit), carrying what was done so far and the last content;
  ``CANCELLED``; ``ERROR`` with every error recorded as ``{code, message, retryable, details}``.
  Model and tool failures never escape ``run()`` as exceptions.
* **Budgets hold inside a turn.** ``max_total_time`` is a deadline: the time left bounds the
  model call (``llm.chat(..., timeout=remaining)``) and the tool batch
  (``executor.execute(calls, timeout=remaining)``), so a slow tool cannot overshoot it.
* **Loops are stopped** (``agentlab.runtime.loop_guard``: repetition and A->B->A->B cycles, whatever the
  order of parallel calls), and the history left behind stays valid for the API: the stopped
  calls get "not executed" tool results, so a follow-up ``run()`` works.
* **Hooks and cancellation.** ``.on(event, fn)`` for the events in ``HOOK_EVENTS``; a hook that
  raises is recorded and ignored. ``cancel()`` is thread-safe and honoured at the next safe
  point (before a model call, between tools, between streamed chunks).
* **Streaming** (``run_stream``) is the same loop yielding event dicts, so budgets, loop
  detection and terminal states are identical in both modes.
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ..errors import AgentError, ConfigError
from .loop_guard import LoopDetector
from .types import AgentResult, RunState, RuntimeConfig
from ..models import DEFAULT_MODEL

__all__ = ["RunState", "RuntimeConfig", "AgentResult", "AgentRuntime", "HOOK_EVENTS",
           "STREAM_EVENTS"]

#: Events a hook can subscribe to with ``AgentRuntime.on`` (``"*"`` subscribes to all).
HOOK_EVENTS = ("run_start", "turn_start", "llm_start", "text", "llm_end", "tool_start",
               "tool_end", "turn_end", "error", "run_end")
#: Event types ``run_stream()`` yields.
STREAM_EVENTS = frozenset({"text", "tool_start", "tool_end", "turn_start", "turn_end", "error",
                           "done"})


class _Stop(Exception):
    """Internal: end the run with this state, reason and (optional) error."""

    def __init__(self, state: RunState, reason: str, error: AgentError | None = None) -> None:
        super().__init__(reason)
        self.state, self.reason, self.error = state, reason, error


@dataclass
class _Run:
    """Book-keeping of one run (kept off the runtime so a result never mixes two runs)."""

    run_id: str
    t0: float
    deadline: float
    turns: int = 0
    content: str = ""
    last_content: str = ""
    finish_reason: str = ""
    tool_calls_made: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0,
                                                  "total_tokens": 0})
    turn_log: list = field(default_factory=list)

    def ms(self) -> float:
        return (time.monotonic() - self.t0) * 1000

    def remaining(self) -> float:
        return self.deadline - time.monotonic()


class AgentRuntime:
    """The agent loop (notebooks 06-08). See the module docstring for what it guarantees.

    Args:
        llm: an ``agentlab.llm.LLMClient`` (or anything with ``chat``/``stream``/``model``).
        registry: the ``ToolRegistry`` whose tools the model may call.
        system_prompt: first message of every request.
        config: a ``RuntimeConfig``.
        messages: a ``MessageManager`` to use instead of a fresh one (``rt.messages``).
        state: an opt-in state store; the last result is saved under ``"last_run"``.
        checkpoints: an opt-in ``CheckpointManager`` (chapter 11; see ``_safe_point``).
        observer: an opt-in ``AgentObserver`` (chapter 12).
        executor: a tool executor to use instead of ``ToolExecutor(registry, ...)``.
    """

    def __init__(self, llm: Any, registry: Any, system_prompt: str = "You are a helpful assistant.",
                 config: RuntimeConfig | None = None, *, messages: Any = None, state: Any = None,
                 checkpoints: Any = None, observer: Any = None, executor: Any = None) -> None:
        self.llm = llm
        self.registry = registry
        self.config = config or RuntimeConfig()
        if messages is None:
            from ..messages import MessageManager
            messages = MessageManager(system_prompt=system_prompt,
                                      model=getattr(llm, "model", DEFAULT_MODEL))
        self.messages = messages
        if executor is None:
            from ..executor import ToolExecutor
            executor = ToolExecutor(registry, default_timeout=self.config.tool_timeout,
                                    max_workers=self.config.max_workers)
        self.executor = executor
        self.state = state              # the article's name for the state store
        self.checkpoints = checkpoints  # chapter 11 integration point (see _safe_point)
        self.observer = observer        # chapter 12: traced from the hook events (observe_runtime)
        self.run_state = RunState.IDLE
        self.last_result: AgentResult | None = None
        self._hooks: dict[str, list[Callable[[dict], Any]]] = {}
        self._cancel = threading.Event()
        self._busy = threading.Lock()

    # -- public API ---------------------------------------------------------------------------
    def on(self, event: str, callback: Callable[[dict], Any]) -> Callable[[dict], Any]:
        """Call ``callback(event_dict)`` on ``event`` (one of ``HOOK_EVENTS``, or ``"*"``)."""
        if event != "*" and event not in HOOK_EVENTS:
            raise ConfigError("invalid_hook", f"unknown hook event {event!r}; use one of "
                              f"{', '.join(HOOK_EVENTS)} or '*'")
        self._hooks.setdefault(event, []).append(callback)
        return callback

    def cancel(self) -> None:
        """Ask the current run to stop at its next safe point. Safe from any thread."""
        self._cancel.set()

    def run(self, user_input: str, resume_from: str | None = None) -> AgentResult:
        """Run the loop on ``user_input`` until a terminal state; never raises for model or
        tool failures (they are in ``result.errors``)."""
        event: dict = {}
        for event in self._loop(user_input, stream=False, resume_from=resume_from):
            pass
        return event["result"]

    def run_stream(self, user_input: str, resume_from: str | None = None) -> Iterator[dict]:
        """The same loop, yielding event dicts (``STREAM_EVENTS``) as they happen; the last one
        is ``{"type": "done", "result": AgentResult, ...}``."""
        return self._loop(user_input, stream=True, resume_from=resume_from)

    # -- the loop -----------------------------------------------------------------------------
    def _loop(self, user_input: str, stream: bool, resume_from: str | None) -> Iterator[dict]:
        resume = None
        if self.checkpoints is not None:  # chapter 11: check the checkpoint before anything runs
            from ..checkpoints.durable import prepare_resume
            resume = prepare_resume(self, resume_from, user_input)
        elif resume_from is not None:
            raise ConfigError("not_supported", "resume_from needs checkpoints= (chapter 11)")
        if not self._busy.acquire(blocking=False):
            raise ConfigError("already_running", "this runtime is already running; use one "
                              "AgentRuntime per concurrent run")
        t0 = time.monotonic()
        run = _Run(resume.run_id if resume else str(uuid.uuid4()), t0,  # a resumed run keeps its id
                   t0 + self.config.max_total_time)
        self._cancel.clear()
        self.run_state = RunState.RUNNING
        state, reason = RunState.ERROR, "exception: unknown"
        try:
            if self.observer is not None:  # chapter 12: spans and metrics from the hook events
                from ..observe.tracer import trace_runtime
                trace_runtime(self)  # once per runtime; a used observer is replaced by a fresh one
            yield from self._event(run, "run_start", run_id=run.run_id, input=user_input)
            if self.checkpoints is None:
                self.messages.append({"role": "user", "content": user_input})
            else:  # chapter 11: restore the resumed run, or append the task and save revision 1
                from ..checkpoints.durable import begin_run
                begin_run(self, run, user_input, resume)
            tools = self.registry.get_all_schemas() or None  # once per run (schemas are copies)
            detector = LoopDetector(self.config.loop_detection_window,
                                    self.config.loop_detection_threshold)
            while True:
                self._check_stop(run)  # safe point: before a model call
                run.turns += 1
                turn = {"turn": run.turns, "start_ms": run.ms(), "tool_calls": 0,
                        "prompt_tokens": 0, "completion_tokens": 0}
                run.turn_log.append(turn)
                yield from self._event(run, "turn_start", turn=run.turns)
                resp, content = yield from self._call_model(run, tools, stream, turn)
                if not resp.tool_calls:  # plain text: the model is done (or was cut short)
                    yield from self._event(run, "turn_end", turn=run.turns, tool_calls=0,
                                           duration_ms=run.ms() - turn["start_ms"])
                    self._finish_text(run, resp, content)
                if resp.finish_reason == "incomplete":  # a stream broke after text was shown
                    raise _Stop(RunState.ERROR, "exception: ProviderError", AgentError(
                        "stream_incomplete", "the stream broke after text was shown; its tool "
                        "calls were not run", retryable=True))
                asst = self._assistant_message(resp, content)
                loop = detector.observe(resp.tool_calls)
                if loop:  # answer every call so the history stays valid, then stop
                    self.messages.extend([asst, *self._not_run_messages(resp.tool_calls,
                                                                        "loop detected")])
                    raise _Stop(RunState.ERROR, "loop_detected", AgentError(
                        "loop_detected", f"stopped: {loop}. Change the approach or the task.",
                        details={"turn": run.turns}))
                results = yield from self._run_tools(run, resp.tool_calls, turn)
                self.messages.extend([asst, *self._to_messages(results)])
                turn["end_ms"] = run.ms()
                yield from self._event(run, "turn_end", turn=run.turns,
                                       tool_calls=len(results), duration_ms=turn["end_ms"] - turn["start_ms"])
                self._safe_point(run)
        except _Stop as stop:
            state, reason = stop.state, stop.reason
            if stop.error is not None:
                yield from self._record(run, stop.error)
        except Exception as exc:  # a bug or an unexpected failure: recorded, never raised
            state, reason = RunState.ERROR, f"exception: {type(exc).__name__}"
            err = exc if isinstance(exc, AgentError) else AgentError(
                "internal_error", f"{type(exc).__name__}: {exc}", details={"turn": run.turns})
            yield from self._record(run, err)
        finally:
            self._busy.release()
            if self.run_state is RunState.RUNNING and state is RunState.ERROR \
                    and reason == "exception: unknown":  # the consumer stopped iterating
                self.run_state = RunState.CANCELLED
        if self.checkpoints is not None:  # chapter 11: a last checkpoint (completed, or resumable)
            from ..checkpoints.durable import end_run
            end_run(self, run, state, reason)
        result = self._result(run, state, reason)
        yield from self._event(run, "run_end", result=result)
        yield {"type": "done", "result": result, "content": result.content,
               "state": result.state.value, "stopped_reason": result.stopped_reason}

    def _check_stop(self, run: _Run) -> None:
        if self._cancel.is_set():
            raise _Stop(RunState.CANCELLED, "cancelled")
        if run.remaining() <= 0:
            raise self._timeout(run)
        if run.turns >= self.config.max_turns:
            raise _Stop(RunState.EXHAUSTED, f"max_turns ({self.config.max_turns})", AgentError(
                "max_turns", f"the run used its {self.config.max_turns} model calls before the "
                "model answered; raise max_turns or narrow the task", retryable=True))

    def _timeout(self, run: _Run) -> _Stop:
        limit = self.config.max_total_time
        return _Stop(RunState.EXHAUSTED, f"timeout ({limit}s)", AgentError(
            "deadline_exceeded", f"the run's time budget of {limit} s ran out at turn "
            f"{run.turns}; raise max_total_time or narrow the task", retryable=True))

    def _call_model(self, run: _Run, tools: list | None, stream: bool, turn: dict):
        """One model call bounded by the time left; returns (response, text)."""
        timeout = run.remaining()
        if self.config.step_timeout is not None:
            timeout = min(timeout, self.config.step_timeout)
        msgs = self.messages.get_messages()
        yield from self._event(run, "llm_start", turn=run.turns, messages=len(msgs))
        t = time.monotonic()
        resp, parts = None, []
        try:
            if not stream:
                resp = self.llm.chat(msgs, tools=tools, temperature=self.config.temperature,
                                     timeout=timeout)
            else:
                chunks = self.llm.stream(msgs, tools=tools, temperature=self.config.temperature,
                                         timeout=timeout)
                try:
                    for chunk in chunks:
                        if chunk.content:
                            parts.append(chunk.content)
                            yield from self._event(run, "text", turn=run.turns, content=chunk.content)
                        elif chunk.content is None:
                            resp = chunk  # the final response: tool calls, usage, finish
                        if self._cancel.is_set():  # nothing appended yet: safe to stop here
                            raise _Stop(RunState.CANCELLED, "cancelled")
                finally:
                    getattr(chunks, "close", lambda: None)()
        except AgentError as exc:
            if run.remaining() <= 0:  # the call ran into the run's deadline
                yield from self._record(run, exc)
                raise self._timeout(run) from None
            raise _Stop(RunState.ERROR, f"exception: {type(exc).__name__}", exc) from None
        # chapter 12: the observer records this call from the llm_end / error hook events
        # (agentlab.observe.tracer.RuntimeTracer), as a span inside the turn's span.
        from ..llm import LLMResponse
        resp = resp or LLMResponse(content="".join(parts) or None, finish_reason="incomplete")
        content = "".join(parts) if stream else (resp.content or "")
        usage = resp.usage or {}
        for k in run.usage:
            run.usage[k] += int(usage.get(k) or 0)
        turn.update(llm_ms=(time.monotonic() - t) * 1000,
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0))
        run.finish_reason = resp.finish_reason or ""
        if content:
            run.last_content = content
        yield from self._event(run, "llm_end", turn=run.turns, finish_reason=run.finish_reason,
                               tool_calls=len(resp.tool_calls), usage=dict(usage),
                               duration_ms=turn["llm_ms"])
        return resp, content

    def _finish_text(self, run: _Run, resp: Any, content: str) -> None:
        """A reply without tool calls ends the run: cleanly only if the model stopped itself."""
        self.messages.append({"role": "assistant", "content": content})
        run.content = content
        turn = run.turn_log[-1]
        turn["end_ms"] = run.ms()
        if resp.finish_reason == "length":
            raise _Stop(RunState.EXHAUSTED, "length", AgentError(
                "output_truncated", "the answer was cut at the model's output limit "
                "(finish_reason 'length'); raise max_tokens or ask for a shorter answer"))
        if resp.finish_reason == "content_filter":
            raise _Stop(RunState.ERROR, "content_filter", AgentError(
                "content_filtered", "the provider withheld the answer (content filter)"))
        if resp.finish_reason == "incomplete":
            raise _Stop(RunState.ERROR, "exception: ProviderError", AgentError(
                "stream_incomplete", "the stream broke before the answer was complete",
                retryable=True))
        raise _Stop(RunState.FINISHED, "completed")

    def _run_tools(self, run: _Run, calls: list, turn: dict):
        """Run one turn's calls (parallel or serial), bounded by the time left."""
        t = time.monotonic()
        results: list = []
        if self.config.parallel_tool_calls and len(calls) > 1:
            for c in calls:
                yield from self._event(run, "tool_start", turn=run.turns, id=c.id, name=c.name,
                                       arguments=c.arguments)
            results = self._execute(run, calls, parallel=True)
            for r in results:
                yield from self._tool_end(run, r)
        else:
            for c in calls:  # serial: cancel and the deadline are checked between tools
                if self._cancel.is_set() or run.remaining() <= 0:
                    why = "run cancelled" if self._cancel.is_set() else "time budget used up"
                    results.extend(self._not_run(calls[len(results):], why))
                    break
                yield from self._event(run, "tool_start", turn=run.turns, id=c.id, name=c.name,
                                       arguments=c.arguments)
                results.extend(self._execute(run, [c], parallel=False))
                yield from self._tool_end(run, results[-1])
        # chapter 12: the observer records each result from its tool_end hook event.
        for c, r in zip(calls, results):
            run.tool_calls_made.append({"turn": run.turns, "id": c.id, "name": c.name,
                                        "arguments": c.arguments, "success": r.success,
                                        "duration_ms": r.duration_ms, "error_code": r.error_code})
        turn.update(tool_calls=len(calls), tools_ms=(time.monotonic() - t) * 1000)
        return results

    def _execute(self, run: _Run, calls: list, parallel: bool) -> list:
        remaining = max(run.remaining(), 0.001)
        try:
            if self.checkpoints is not None:  # chapter 11: results logged durably, never re-run
                from ..checkpoints.durable import execute_tools
                return execute_tools(self, run, calls, parallel, remaining)
            if parallel:
                return self.executor.execute_parallel(calls, timeout=remaining)
            return self.executor.execute(calls, timeout=remaining)
        except Exception as exc:  # the executor promises not to raise; stay valid if it does
            run.errors.append(AgentError("tool_failed", f"executor raised {type(exc).__name__}: "
                                         f"{exc}").to_dict())
            return self._not_run(calls, f"executor failed: {exc}")

    def _tool_end(self, run: _Run, r: Any):
        yield from self._event(run, "tool_end", turn=run.turns, id=r.tool_call_id, name=r.name,
                               ok=r.success, duration_ms=r.duration_ms, error_code=r.error_code,
                               result=r.result[:200])

    # -- messages and results -----------------------------------------------------------------
    def _assistant_message(self, resp: Any, content: str) -> dict:
        to_msg = getattr(type(self.llm), "to_assistant_message", None)
        if to_msg is not None:
            return to_msg(resp, content or None)
        import json
        return {"role": "assistant", "content": content or None, "tool_calls": [
            {"id": tc.id, "type": "function", "function": {
                "name": tc.name,
                "arguments": getattr(tc, "raw_arguments", "") or json.dumps(tc.arguments)}}
            for tc in resp.tool_calls]}

    @staticmethod
    def _not_run(calls: list, why: str) -> list:
        from ..executor import ToolResult
        return [ToolResult(tool_call_id=c.id, name=c.name, result=f"Not executed: {why}.",
                           success=False, error_code="not_executed") for c in calls]

    def _not_run_messages(self, calls: list, why: str) -> list[dict]:
        return self._to_messages(self._not_run(calls, why))

    def _to_messages(self, results: list) -> list[dict]:
        return type(self.executor).results_to_messages(results) \
            if hasattr(type(self.executor), "results_to_messages") else [
                {"role": "tool", "tool_call_id": r.tool_call_id, "content": r.result}
                for r in results]

    def _result(self, run: _Run, state: RunState, reason: str) -> AgentResult:
        self.run_state = state
        result = AgentResult(
            content=run.content if state is RunState.FINISHED else (run.content or run.last_content),
            turns=run.turns, total_tokens=run.usage["total_tokens"],
            tool_calls_made=run.tool_calls_made, duration_ms=run.ms(), stopped_reason=reason,
            state=state, run_id=run.run_id, errors=run.errors, usage=dict(run.usage),
            finish_reason=run.finish_reason, turn_log=run.turn_log)
        if run.turn_log and "end_ms" not in run.turn_log[-1]:
            run.turn_log[-1]["end_ms"] = result.duration_ms
        if self.state is not None:  # opt-in: keep the last result in the state store
            try:
                self.state.save("last_run", result.to_dict())
            except Exception as exc:
                run.errors.append(AgentError("state_save_failed", str(exc)).to_dict())
        self.last_result = result
        return result

    # -- events, hooks, errors ----------------------------------------------------------------
    def _event(self, run: _Run, kind: str, **payload: Any) -> Iterator[dict]:
        """Fire hooks for ``kind`` and yield the event if ``run_stream`` shows that type."""
        event = {"type": kind, **payload}
        hooks = self._hooks.get(kind)
        every = self._hooks.get("*")
        if hooks or every:
            for fn in (hooks or []) + (every or []):
                try:
                    fn(event)
                except Exception as exc:  # a broken hook must not break the run
                    run.errors.append(AgentError(
                        "hook_failed", f"a {kind!r} hook raised {type(exc).__name__}: {exc}",
                        details={"event": kind}).to_dict())
        if kind in STREAM_EVENTS:
            yield event

    def _record(self, run: _Run, error: AgentError) -> Iterator[dict]:
        record = error.to_dict()
        record["details"] = {**record.get("details", {}), "turn": run.turns}
        run.errors.append(record)
        yield from self._event(run, "error", turn=run.turns, code=error.code,
                               message=error.message, retryable=error.retryable)

    def _safe_point(self, run: _Run) -> None:
        """After each turn: every tool call has its result, so the history is a valid request.

        Chapter 11: with ``checkpoints``, a checkpoint every ``auto_save_interval`` turns
        (``agentlab.checkpoints.durable``). The observer (chapter 12) follows the hook events.
        """
        if self.checkpoints is not None:
            from ..checkpoints.durable import checkpoint_turn
            checkpoint_turn(self, run)

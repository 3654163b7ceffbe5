"""The steps of one turn: call the model, check its reply, run the tools (chapters 06-07).

Taught in ``notebooks/06_runtime_loop.ipynb`` and ``07_streaming.ipynb``. ``TurnSteps`` is the
part of ``AgentRuntime`` the loop (``loop.py``) calls for each step; a step that ends the run
raises ``StopRun`` with the terminal state, the article's reason string and the error, and the
loop turns it into the result. Every step is bounded by the run's deadline, fires its hook
events (``agentlab.runtime.context``) and is interrupted by a cancel (``agentlab.runtime.cancel``).
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator

from ..errors import AgentError
from ..executor import ToolExecutor, ToolResult
from .cancel import (Interrupted, call_unless_cancelled, execute_unless_cancelled,
                     iterate_unless_cancelled)
from .context import STREAM_EVENTS, RunContext
from .hooks import Hooks
from .loop_guard import LoopDetector
from .protocols import LLM, Executor, Messages, ModelReply, Registry
from .types import RunState, RuntimeConfig

__all__ = ["TurnSteps", "StopRun"]


class StopRun(Exception):
    """Raised inside the loop to end the run with this state, reason and (optional) error."""

    def __init__(self, state: RunState, reason: str, error: AgentError | None = None) -> None:
        super().__init__(reason)
        self.state, self.reason, self.error = state, reason, error


@dataclass(frozen=True)
class _BrokenStream:
    """Stands in for the final response of a stream that ended without one."""

    content: str | None
    tool_calls: tuple = ()
    usage: dict | None = None
    finish_reason: str = "incomplete"


class TurnSteps:
    """Model call, reply checks and tool batch of one turn (a base of ``AgentRuntime``)."""

    llm: LLM
    registry: Registry
    config: RuntimeConfig
    messages: Messages
    executor: Executor
    _hooks: Hooks
    _cancel: threading.Event

    def _timeout(self, ctx: RunContext) -> StopRun:
        limit = self.config.max_total_time
        return StopRun(RunState.EXHAUSTED, f"timeout ({limit}s)", AgentError(
            "deadline_exceeded", f"the run's time budget of {limit} s ran out at turn "
            f"{ctx.turns}; raise max_total_time or narrow the task", retryable=True))

    # -- one model call -----------------------------------------------------------------------
    def _offer_tools(self) -> list | None:
        """The tool schemas sent with every request of this run; the message manager counts
        them in its budget (chapter 04: 40 tools can take 2,000 tokens)."""
        tools = self.registry.get_all_schemas() or None  # copies: safe to hand out
        set_tools = getattr(self.messages, "set_tools", None)
        if set_tools is not None:
            set_tools(tools)
        return tools

    def _check_context(self) -> None:
        """Stop before a request that cannot fit the model's context: it would only earn the
        provider's 400 (``context_overflow``, chapter 04)."""
        check_budget = getattr(self.messages, "check_budget", None)
        if check_budget is None:
            return
        try:
            check_budget()
        except AgentError as exc:
            raise StopRun(RunState.ERROR, "context_overflow", exc) from None

    def _call_model(self, ctx: RunContext, tools: list | None, stream: bool, turn: dict):
        """One model call bounded by the time left; returns (response, text). A cancel
        abandons it at once: its reply is discarded and nothing is appended."""
        timeout = ctx.remaining()
        if self.config.step_timeout is not None:
            timeout = min(timeout, self.config.step_timeout)
        self._check_context()
        msgs = self.messages.get_messages()
        yield from self._event(ctx, "llm_start", turn=ctx.turns, messages=len(msgs))
        t = time.monotonic()
        try:
            if stream:
                resp, content = yield from self._stream_reply(ctx, msgs, tools, timeout)
            else:
                resp = call_unless_cancelled(lambda: self.llm.chat(
                    msgs, tools=tools, temperature=self.config.temperature, timeout=timeout),
                    self._cancel)
                content = resp.content or ""
        except Interrupted:
            raise StopRun(RunState.CANCELLED, "cancelled") from None
        except AgentError as exc:
            if ctx.remaining() <= 0:  # the call ran into the run's deadline
                yield from self._record(ctx, exc)
                raise self._timeout(ctx) from None
            raise StopRun(RunState.ERROR, f"exception: {type(exc).__name__}", exc) from None
        usage = resp.usage or {}
        for k in ctx.usage:
            ctx.usage[k] += int(usage.get(k) or 0)
        turn.update(llm_ms=(time.monotonic() - t) * 1000,
                    prompt_tokens=int(usage.get("prompt_tokens") or 0),
                    completion_tokens=int(usage.get("completion_tokens") or 0))
        ctx.finish_reason = resp.finish_reason or ""
        if content:
            ctx.last_content = content
        yield from self._event(ctx, "llm_end", turn=ctx.turns, finish_reason=ctx.finish_reason,
                               tool_calls=len(resp.tool_calls), usage=dict(usage),
                               duration_ms=turn["llm_ms"])
        return resp, content

    def _stream_reply(self, ctx: RunContext, msgs: list, tools: list | None, timeout: float):
        """Stream one reply, firing a ``text`` event per delta; returns (response, text).
        The stream is read by a worker (``iterate_unless_cancelled``), which closes it however
        this ends: done, cancelled, or the consumer of ``run_stream`` stopped iterating."""
        chunks = iterate_unless_cancelled(self.llm.stream(
            msgs, tools=tools, temperature=self.config.temperature, timeout=timeout), self._cancel)
        parts: list[str] = []
        final: ModelReply | None = None
        try:
            for chunk in chunks:
                if chunk.content:
                    parts.append(chunk.content)
                    yield from self._event(ctx, "text", turn=ctx.turns, content=chunk.content)
                elif chunk.content is None:
                    final = chunk  # the final response: tool calls, usage, finish
                if self._cancel.is_set():  # nothing appended yet: safe to stop here
                    raise StopRun(RunState.CANCELLED, "cancelled")
        finally:
            chunks.close()
        content = "".join(parts)
        return (final if final is not None else _BrokenStream(content or None)), content

    def _finish_text(self, ctx: RunContext, resp: ModelReply, content: str) -> StopRun:
        """A reply without tool calls ends the run: cleanly only if the model stopped itself.
        Appends the answer and returns the ``StopRun`` the loop raises after the turn's end."""
        self.messages.append({"role": "assistant", "content": content})
        ctx.content = content
        ctx.turn_log[-1]["end_ms"] = ctx.elapsed_ms()
        if resp.finish_reason == "length":
            return StopRun(RunState.EXHAUSTED, "length", AgentError(
                "output_truncated", "the answer was cut at the model's output limit "
                "(finish_reason 'length'); raise max_tokens or ask for a shorter answer"))
        if resp.finish_reason == "content_filter":
            return StopRun(RunState.ERROR, "content_filter", AgentError(
                "content_filtered", "the provider withheld the answer (content filter)"))
        if resp.finish_reason == "incomplete":
            return StopRun(RunState.ERROR, "exception: ProviderError", AgentError(
                "stream_incomplete", "the stream broke before the answer was complete",
                retryable=True))
        return StopRun(RunState.FINISHED, "completed")

    def _stop_if_refused(self, ctx: RunContext, resp: ModelReply, content: str,
                         turn: dict) -> Iterator[dict]:
        """A refusal is not an answer: the run ends ERROR ``refused`` with the refusal text as
        its content (and in the error's details). The refusal stays in the history, so a
        follow-up ``run()`` sends a valid conversation."""
        refusal = getattr(resp, "refusal", None)
        if not refusal:
            return
        self.messages.append(self._assistant_message(resp, content))
        ctx.content = refusal
        turn["end_ms"] = ctx.elapsed_ms()
        yield from self._event(ctx, "refusal", turn=ctx.turns, refusal=refusal)
        yield from self._event(ctx, "turn_end", turn=ctx.turns, tool_calls=0,
                               duration_ms=turn["end_ms"] - turn["start_ms"])
        raise StopRun(RunState.ERROR, "refused", AgentError(
            "refused", f"the model declined: {refusal}", details={"refusal": refusal}))

    @staticmethod
    def _cut_short(resp: ModelReply) -> bool:
        """Cut at the output limit or by a content filter: tool calls in such a reply may be
        incomplete or withheld, so none of them runs (``_finish_text`` ends the run)."""
        return resp.finish_reason in ("length", "content_filter")

    @staticmethod
    def _stop_if_incomplete(resp: ModelReply) -> None:
        if resp.finish_reason == "incomplete":  # a stream broke after text was shown
            raise StopRun(RunState.ERROR, "exception: ProviderError", AgentError(
                "stream_incomplete", "the stream broke after text was shown; its tool calls "
                "were not run", retryable=True))

    def _stop_if_looping(self, ctx: RunContext, detector: LoopDetector, calls: Any,
                         asst: dict) -> None:
        loop = detector.observe(calls)
        if loop:  # answer every call so the history stays valid, then stop
            self.messages.extend([asst, *self._to_messages(self._not_run(calls, "loop detected"))])
            raise StopRun(RunState.ERROR, "loop_detected", AgentError(
                "loop_detected", f"stopped: {loop}. Change the approach or the task.",
                details={"turn": ctx.turns}))

    # -- one turn's tools ---------------------------------------------------------------------
    def _run_tools(self, ctx: RunContext, calls: list, asst: dict, turn: dict):
        """Run one turn's calls (parallel or serial), bounded by the time left, then append
        the assistant message and one result per call. However the batch ends (a cancel, the
        consumer of ``run_stream`` stopping at a tool event) every call is answered: the ones
        that did not run as "not executed", so the history stays valid for the API."""
        t = time.monotonic()
        results: list = []
        try:
            if self.config.parallel_tool_calls and len(calls) > 1:
                for c in calls:
                    yield from self._event(ctx, "tool_start", turn=ctx.turns, id=c.id,
                                           name=c.name, arguments=c.arguments)
                results = self._execute(ctx, calls, parallel=True)
                for r in results:
                    yield from self._tool_end(ctx, r)
            else:
                for c in calls:  # serial: cancel and the deadline are checked between tools
                    if self._cancel.is_set() or ctx.remaining() <= 0:
                        break
                    yield from self._event(ctx, "tool_start", turn=ctx.turns, id=c.id,
                                           name=c.name, arguments=c.arguments)
                    results.extend(self._execute(ctx, [c], parallel=False))
                    yield from self._tool_end(ctx, results[-1])
        finally:
            why = "time budget used up" if ctx.remaining() <= 0 else "run cancelled"
            results = [*results, *self._not_run(calls[len(results):], why)]
            ctx.tool_calls_made.extend(self._call_record(ctx, c, r) for c, r in zip(calls, results))
            self.messages.extend([asst, *self._to_messages(results)])
            turn.update(tool_calls=len(calls), tools_ms=(time.monotonic() - t) * 1000)
        return results

    def _execute(self, ctx: RunContext, calls: list, parallel: bool) -> list:
        try:
            return execute_unless_cancelled(self.executor, calls, parallel=parallel,
                                            timeout=max(ctx.remaining(), 0.001),
                                            cancel=self._cancel)
        except Exception as exc:  # the executor promises not to raise; stay valid if it does
            ctx.add_error(AgentError("tool_failed", f"executor raised {type(exc).__name__}: {exc}"))
            return self._not_run(calls, f"executor failed: {exc}")

    def _tool_end(self, ctx: RunContext, r: Any) -> Iterator[dict]:
        yield from self._event(ctx, "tool_end", turn=ctx.turns, id=r.tool_call_id, name=r.name,
                               ok=r.success, duration_ms=r.duration_ms, error_code=r.error_code,
                               result=r.result[:200], replayed=bool(getattr(r, "replayed", False)))

    @staticmethod
    def _call_record(ctx: RunContext, call: Any, r: Any) -> dict:
        """The ``tool_calls_made`` entry of one call (``timeout_s``: the limit the executor enforced)."""
        entry = {"turn": ctx.turns, "id": call.id, "name": call.name, "arguments": call.arguments,
                 "success": r.success, "duration_ms": r.duration_ms, "error_code": r.error_code}
        timeout_s = getattr(r, "timeout_s", None)
        if timeout_s is not None:
            entry["timeout_s"] = timeout_s
        return entry

    # -- messages and results -----------------------------------------------------------------
    def _assistant_message(self, resp: ModelReply, content: str) -> dict:
        to_msg = getattr(type(self.llm), "to_assistant_message", None)
        if to_msg is not None:
            return to_msg(resp, content or None)
        return {"role": "assistant", "content": content or None, "tool_calls": [
            {"id": tc.id, "type": "function", "function": {
                "name": tc.name,
                "arguments": getattr(tc, "raw_arguments", "") or json.dumps(tc.arguments)}}
            for tc in resp.tool_calls]}

    @staticmethod
    def _not_run(calls: list, why: str) -> list[ToolResult]:
        return [ToolResult(tool_call_id=c.id, name=c.name, result=f"Not executed: {why}.",
                           success=False, error_code="not_executed") for c in calls]

    def _to_messages(self, results: list) -> list[dict]:
        """One ``tool`` message per result (the executor's rendering, chapter 03)."""
        to_messages = getattr(self.executor, "results_to_messages", ToolExecutor.results_to_messages)
        return to_messages(results)

    # -- events and errors --------------------------------------------------------------------
    def _event(self, ctx: RunContext, kind: str, **payload: Any) -> Iterator[dict]:
        """Fire hooks for ``kind`` and yield the event if ``run_stream`` shows that type."""
        event = {"type": kind, **payload}
        self._hooks.fire(ctx, event)
        if kind in STREAM_EVENTS:
            yield event

    def _record(self, ctx: RunContext, error: AgentError) -> Iterator[dict]:
        ctx.add_error(error)
        yield from self._event(ctx, "error", turn=ctx.turns, code=error.code,
                               message=error.message, retryable=error.retryable)

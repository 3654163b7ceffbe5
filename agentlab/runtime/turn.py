"""One turn of the loop, as functions over the runtime and its ``RunContext`` (chapters 06-07).

Taught in ``notebooks/06_runtime_loop.ipynb`` and ``notebooks/07_streaming.ipynb``. The loop
(``agentlab.runtime.loop``) reads top to bottom: ask the gates, ``call_model`` (or
``stream_reply``), stop on a text answer, ask the gates about the calls (``gate_tools``),
``run_tools``. Each function is a generator of the events it fires (``event``), so ``run``
and ``run_stream`` are the same code.

What these functions promise: a cancel abandons a model call at once (its reply is discarded,
nothing appended); a tool batch goes out as one ``ToolBatch`` with the run's deadline and
cancel event; however a turn ends, every call the model asked for gets a tool message (its
result, or ``not_run``'s "has no result"), so the history stays valid for the API.
"""
from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from ..errors import AgentError
from ..executor import ToolBatch, ToolExecutor, not_run, run_batch
from ..llm.responses import ToolCall, parse_arguments
from .cancel import Interrupted, call_unless_cancelled, iterate_unless_cancelled
from .context import STREAM_EVENTS, RunContext, idempotency_key
from .cost import charge_prompt, charged_usage, completion_tokens_of, prompt_tokens_sent
from .gates import Pause, Stop, ask, timeout_stop
from .protocols import ModelReply
from .types import RunState

__all__ = ["call_model", "stream_reply", "gate_tools", "run_tools", "finish_held_turn",
           "finish_text", "event",
           "record", "new_turn", "end_turn", "assistant_message", "CUT_SHORT"]

#: Finish reasons of a reply cut short (output limit, content filter): none of its calls runs.
CUT_SHORT = ("length", "content_filter")


@dataclass(frozen=True)
class _BrokenStream:
    """Stands in for the final response of a stream that ended without one."""

    content: str | None
    tool_calls: tuple = ()
    usage: dict | None = None
    finish_reason: str = "incomplete"


# -- the turn, top to bottom ----------------------------------------------------------------
def call_model(rt: Any, ctx: RunContext, tools: list | None, stream: bool, turn: dict):
    """One model call bounded by the time left; returns (reply, text). A cancel abandons it
    at once: its reply is discarded and nothing is appended."""
    timeout = ctx.remaining() if rt.config.step_timeout is None else \
        min(ctx.remaining(), rt.config.step_timeout)
    _check_context(rt)
    msgs = rt.messages.get_messages()
    sent = functools.cache(lambda: prompt_tokens_sent(rt, msgs, tools))  # counted if needed
    yield from event(rt, ctx, "llm_start", turn=ctx.turns, messages=len(msgs))
    t = time.monotonic()
    try:
        if stream:
            resp, content = yield from stream_reply(rt, ctx, msgs, tools, timeout)
        else:
            resp = call_unless_cancelled(lambda: rt.llm.chat(
                msgs, tools=tools, temperature=rt.config.temperature, timeout=timeout), ctx.cancel)
            content = resp.content or ""
    except Interrupted:  # the provider bills what was sent
        charge_prompt(ctx, turn, sent())
        raise Stop(RunState.CANCELLED, "cancelled") from None
    except AgentError as exc:
        if ctx.remaining() <= 0:  # the call ran into the run's deadline
            yield from record(rt, ctx, exc)
            raise timeout_stop(ctx, rt.config.max_total_time) from None
        raise Stop(RunState.ERROR, f"exception: {type(exc).__name__}", exc) from None
    usage = _account(rt, ctx, turn, resp, content, time.monotonic() - t, sent)
    yield from event(rt, ctx, "llm_end", turn=ctx.turns, finish_reason=ctx.finish_reason,
                     tool_calls=len(resp.tool_calls), usage=usage, duration_ms=turn["llm_ms"])
    yield from _stop_if_refused(rt, ctx, resp, content, turn)
    return resp, content


def stream_reply(rt: Any, ctx: RunContext, msgs: list, tools: list | None, timeout: float):
    """Stream one reply, firing a ``text`` event per delta; returns (reply, text). A worker
    reads the stream (``iterate_unless_cancelled``) and closes it however this ends."""
    chunks = iterate_unless_cancelled(rt.llm.stream(
        msgs, tools=tools, temperature=rt.config.temperature, timeout=timeout), ctx.cancel)
    parts: list[str] = []
    final: ModelReply | None = None
    try:
        for chunk in chunks:
            if chunk.content:
                parts.append(chunk.content)
                yield from event(rt, ctx, "text", turn=ctx.turns, content=chunk.content)
            elif chunk.content is None:
                final = chunk  # the final response: tool calls, usage, finish
            if ctx.cancel.is_set():  # nothing appended yet: safe to stop here
                raise Stop(RunState.CANCELLED, "cancelled")
    finally:
        chunks.close()
    content = "".join(parts)
    return (final if final is not None else _BrokenStream(content or None)), content


def gate_tools(rt: Any, ctx: RunContext, calls: list, asst: dict, turn: dict):
    """Ask the gates about the turn's calls before any runs: a ``Stop`` answers every call
    "not executed" and ends the run; a ``Pause`` holds the turn (``ctx.held_turn``)."""
    gate, verdict = ask(rt.gates, "before_tools", ctx, calls)
    if isinstance(verdict, Pause):
        hold(ctx, gate, verdict, {"message": asst, "pending": list(verdict.pending)})
        yield from end_turn(rt, ctx, turn, tool_calls=0)
        raise Stop(RunState.PAUSED, verdict.reason)
    if isinstance(verdict, Stop):
        rt.messages.extend([asst, *_to_messages(rt, not_run(
            calls, "not_executed", f"not executed ({verdict.reason})"))])
        raise verdict


def run_tools(rt: Any, ctx: RunContext, calls: list, asst: dict, turn: dict):
    """Run the turn's calls (parallel or serial) as ``ToolBatch``es bounded by the run's
    deadline and cancel, then append the assistant message and one result per call."""
    t, results = time.monotonic(), []
    try:
        if rt.config.parallel_tool_calls and len(calls) > 1:
            for c in calls:
                yield from event(rt, ctx, "tool_start", turn=ctx.turns, id=c.id, name=c.name,
                                 arguments=c.arguments)
            results = _execute(rt, ctx, calls, parallel=True)
            for r in results:
                yield from _tool_end(rt, ctx, r)
        else:
            for c in calls:  # serial: cancel and the deadline are checked between tools
                if ctx.cancel.is_set() or ctx.remaining() <= 0:
                    break
                yield from event(rt, ctx, "tool_start", turn=ctx.turns, id=c.id, name=c.name,
                                 arguments=c.arguments)
                results.extend(_execute(rt, ctx, [c], parallel=False))
                yield from _tool_end(rt, ctx, results[-1])
    finally:  # however the batch ended (a cancel, a closed stream), every call is answered
        why = "the run's time budget ran out" if ctx.remaining() <= 0 else "the run was cancelled"
        results = [*results, *not_run(calls[len(results):], "not_executed", f"not executed: {why}")]
        ctx.tool_calls_made.extend(_call_record(ctx, c, r) for c, r in zip(calls, results))
        rt.messages.extend([asst, *_to_messages(rt, results)])
        turn.update(tool_calls=len(calls), tools_ms=(time.monotonic() - t) * 1000)
    return results


def finish_held_turn(rt: Any, ctx: RunContext):
    """Finish the turn a resumed run was paused in: the gates are asked again (one may pause
    it again), then its calls run as any turn's."""
    asst = ctx.held_turn["message"]  # type: ignore[index]
    calls = []
    for tc in asst.get("tool_calls") or []:  # parsed as the model client parses them
        raw = tc["function"].get("arguments") or ""
        arguments, error = parse_arguments(raw)
        calls.append(ToolCall(tc["id"], tc["function"]["name"], arguments, raw, error))
    turn = new_turn(ctx, held=True)
    yield from gate_tools(rt, ctx, calls, asst, turn)
    ctx.held_turn = None
    results = yield from run_tools(rt, ctx, calls, asst, turn)
    yield from end_turn(rt, ctx, turn, tool_calls=len(results))


def _execute(rt: Any, ctx: RunContext, calls: list, parallel: bool) -> list:
    batch = ToolBatch(tuple(calls), parallel=parallel, deadline=ctx.deadline, cancel=ctx.cancel,
                      key_prefix=idempotency_key(ctx.run_id, ""))  # unique across runs
    try:
        return run_batch(rt.executor, batch)
    except Exception as exc:  # the executor promises not to raise; stay valid if it does
        ctx.add_error(AgentError("tool_failed", f"executor raised {type(exc).__name__}: {exc}"))
        return not_run(calls, "not_executed", f"not executed: the executor failed ({exc})")


# -- the turn's edges -----------------------------------------------------------------------
def _account(rt: Any, ctx: RunContext, turn: dict, resp: ModelReply, content: str,
             took_s: float, sent: Callable[[], int]) -> dict:
    """Add a reply's tokens to the run and its turn (counted locally where the provider
    reported none: ``cost.charged_usage``); note its finish reason and text."""
    model = getattr(rt.llm, "model", "")
    usage, estimated = charged_usage(resp.usage, sent,
                                     lambda: completion_tokens_of(resp, content, model))
    for k in ctx.usage:
        ctx.usage[k] += int(usage.get(k) or 0)
    turn.update(llm_ms=took_s * 1000, prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"])
    if estimated:
        turn["usage_estimated"] = True
    ctx.finish_reason = resp.finish_reason or ""
    ctx.last_content = content or ctx.last_content
    return usage


def hold(ctx: RunContext, gate: Any, pause: Pause, held: dict | None) -> None:
    """Keep a pausing gate's state (and the held turn) in the context, for checkpoints."""
    if pause.state is not None:
        ctx.extensions[gate.name] = pause.state
    ctx.held_turn = held


def finish_text(rt: Any, ctx: RunContext, resp: ModelReply, content: str) -> Stop:
    """A reply without tool calls (or cut short) ends the run, cleanly only if the model
    stopped itself. Appends the answer; returns the ``Stop`` the loop raises after the turn."""
    rt.messages.append({"role": "assistant", "content": content})
    ctx.content = content
    ctx.turn_log[-1]["end_ms"] = ctx.elapsed_ms()
    if resp.finish_reason == "length":
        return Stop(RunState.EXHAUSTED, "length", AgentError(
            "output_truncated", "the answer was cut at the model's output limit "
            "(finish_reason 'length'); raise max_tokens or ask for a shorter answer"))
    if resp.finish_reason == "content_filter":
        return Stop(RunState.ERROR, "content_filter", AgentError(
            "content_filtered", "the provider withheld the answer (content filter)"))
    if resp.finish_reason == "incomplete":
        return Stop(RunState.ERROR, "exception: ProviderError", AgentError(
            "stream_incomplete", "the stream broke before the answer was complete",
            retryable=True))
    return Stop(RunState.FINISHED, "completed")


def stop_if_incomplete(resp: ModelReply) -> None:
    if resp.finish_reason == "incomplete":  # a stream broke after text was shown
        raise Stop(RunState.ERROR, "exception: ProviderError", AgentError(
            "stream_incomplete", "the stream broke after text was shown; its tool calls "
            "were not run", retryable=True))


def _stop_if_refused(rt: Any, ctx: RunContext, resp: ModelReply, content: str, turn: dict):
    """A refusal is not an answer: ERROR ``refused``, the refusal kept in the history."""
    refusal = getattr(resp, "refusal", None)
    if not refusal:
        return
    rt.messages.append(assistant_message(rt, resp, content))
    ctx.content = refusal
    yield from event(rt, ctx, "refusal", turn=ctx.turns, refusal=refusal)
    yield from end_turn(rt, ctx, turn, tool_calls=0, ended=True)
    raise Stop(RunState.ERROR, "refused", AgentError(
        "refused", f"the model declined: {refusal}", details={"refusal": refusal}))


def _check_context(rt: Any) -> None:
    """Stop before a request that cannot fit the model's context (``context_overflow``),
    but only once a compression could not make it fit."""
    check_budget = getattr(rt.messages, "check_budget", None)
    if check_budget is None:
        return
    bound = getattr(rt.messages, "upper_bound", None)  # cheap: counts nothing (chapter 04)
    if bound is not None and bound() <= rt.messages.max_tokens:
        return
    try:
        check_budget()
    except AgentError as exc:
        compress = getattr(rt.messages, "compress", None)
        try:
            if compress is None or compress() is None:
                raise exc
            check_budget()
        except AgentError as still:
            raise Stop(RunState.ERROR, "context_overflow", still) from None


def new_turn(ctx: RunContext, **extra: Any) -> dict:
    """Open the turn's ``turn_log`` entry (``held=True`` for a held turn finished later)."""
    turn = {"turn": ctx.turns, "start_ms": ctx.elapsed_ms(), "tool_calls": 0,
            "prompt_tokens": 0, "completion_tokens": 0, **extra}
    ctx.turn_log.append(turn)
    return turn


def end_turn(rt: Any, ctx: RunContext, turn: dict, tool_calls: int, ended: bool = False):
    now = ctx.elapsed_ms()
    if tool_calls or ended:  # a text turn ends when its answer is appended (finish_text)
        turn["end_ms"] = now
    yield from event(rt, ctx, "turn_end", turn=ctx.turns, tool_calls=tool_calls,
                     duration_ms=now - turn["start_ms"])


# -- messages, records, events --------------------------------------------------------------
def assistant_message(rt: Any, resp: ModelReply, content: str) -> dict:
    to_msg = getattr(type(rt.llm), "to_assistant_message", None)
    if to_msg is not None:
        return to_msg(resp, content or None)
    return {"role": "assistant", "content": content or None, "tool_calls": [
        {"id": tc.id, "type": "function", "function": {
            "name": tc.name,
            "arguments": getattr(tc, "raw_arguments", "") or json.dumps(tc.arguments)}}
        for tc in resp.tool_calls]}


def _to_messages(rt: Any, results: list) -> list[dict]:
    """One ``tool`` message per result (the executor's rendering, chapter 03)."""
    to_messages = getattr(rt.executor, "results_to_messages", ToolExecutor.results_to_messages)
    return to_messages(results)


def _call_record(ctx: RunContext, call: Any, r: Any) -> dict:
    """The ``tool_calls_made`` entry of one call (``timeout_s``: the limit enforced)."""
    entry = {"turn": ctx.turns, "id": call.id, "name": call.name, "arguments": call.arguments,
             "success": r.success, "duration_ms": r.duration_ms, "error_code": r.error_code}
    if getattr(r, "timeout_s", None) is not None:
        entry["timeout_s"] = r.timeout_s
    return entry


def _tool_end(rt: Any, ctx: RunContext, r: Any) -> Iterator[dict]:
    yield from event(rt, ctx, "tool_end", turn=ctx.turns, id=r.tool_call_id, name=r.name,
                     ok=r.success, duration_ms=r.duration_ms, error_code=r.error_code,
                     result=r.result[:200], replayed=bool(getattr(r, "replayed", False)))


def event(rt: Any, ctx: RunContext, kind: str, **payload: Any) -> Iterator[dict]:
    """Fire hooks for ``kind`` and yield the event if ``run_stream`` shows that type."""
    evt = {"type": kind, **payload}
    rt.hooks.fire(ctx, evt)
    if kind in STREAM_EVENTS:
        yield evt


def record(rt: Any, ctx: RunContext, error: AgentError) -> Iterator[dict]:
    ctx.add_error(error)
    yield from event(rt, ctx, "error", turn=ctx.turns, code=error.code, message=error.message,
                     retryable=error.retryable)

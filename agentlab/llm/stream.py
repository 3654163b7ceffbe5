"""Assembling a streamed chat completion from its chunks (notebooks 01 and 07).

A stream is a list of ``chat.completion.chunk`` objects: text deltas, tool-call fragments keyed by
``index``, refusal fragments, a last choice chunk with ``finish_reason``, an optional usage chunk
with ``choices: []``, then ``data: [DONE]``. ``StreamAssembler`` turns them into one
``LLMResponse`` and decides whether the stream was *complete*:

* a ``finish_reason`` arrived -> complete;
* no finish reason, but the server ended the stream properly (``[DONE]``, or the usage chunk
  that only comes at the end) -> complete; several OpenAI-compatible servers never send a
  finish reason, so it is inferred (``tool_calls`` when there are calls, else ``stop``);
* the connection just closed: complete only if there are tool calls and every one has whole
  JSON arguments; text, or arguments cut mid-way, stay incomplete (retry, or ``incomplete``).

``ChunkStream`` is the SDK's own SSE stream class with one addition: it notes whether the
``data: [DONE]`` line arrived (the SDK consumes that line silently). ``not_a_stream`` reads a 200
that is not an event stream at all: a login page or a JSON error object fails with the
server's words rather than as an empty stream, and a whole (non-stream) completion is the
answer, as real clients take it.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from .retry import ErrorInBody
from .responses import (LEGACY_FINISH, LLMResponse, ToolCall, arguments_text, parse_arguments,
                        usage_dict)

__all__ = ["ChunkStream", "StreamAssembler", "not_a_stream", "as_stream"]


class ChunkStream(openai.Stream[ChatCompletionChunk]):
    """``openai.Stream`` of chunks that records whether the server sent ``data: [DONE]``."""

    saw_done: bool = False

    def _iter_events(self) -> Iterator[Any]:
        for event in super()._iter_events():
            if event.data.startswith("[DONE]"):
                self.saw_done = True
            yield event


def not_a_stream(response: Any) -> ErrorInBody | ChatCompletion | None:
    """What a 200 answer to a streamed request is when it is no event stream: the error (its
    JSON ``error`` object, or the first bytes of its text), or a whole chat completion (a
    server that ignores ``"stream": true``; the SDK's own parser and real clients take it as
    the answer); None for an event stream. An event stream sent under another content type
    is read whole first, then as a stream."""
    kind = response.headers.get("content-type", "")
    if "text/event-stream" in kind or not kind:
        return None
    raw = response.read()  # kept: the SSE reader sees it too
    text = raw[:4096].decode("utf-8", "replace")
    if text.lstrip().startswith(("data:", "event:", ":", "id:", "retry:")):
        return None  # an event stream under another content type: read it as one
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return ErrorInBody(text)
    if isinstance(data, dict) and isinstance(data.get("choices"), list) and data["choices"]:
        return ChatCompletion.construct(**data)  # a whole completion: parse_completion reads it
    error = data.get("error") if isinstance(data, dict) else None
    return ErrorInBody(error if isinstance(error, dict) else {"message": str(error)}) \
        if error is not None else None


def as_stream(response: LLMResponse) -> list[LLMResponse]:
    """A whole completion as ``LLMClient.stream()`` yields an answer: its text as one delta
    (if any), then the final response (``content=None``, the calls, usage, finish reason)."""
    text = [LLMResponse(content=response.content)] if response.content else []
    return [*text, LLMResponse(None, response.tool_calls, response.usage,
                               response.finish_reason, response.refusal)]


def _whole_json(raw: str) -> bool:
    if not raw.strip():
        return False  # a call header with no arguments yet
    try:
        return isinstance(json.loads(raw), dict)
    except (ValueError, RecursionError):
        return False


class StreamAssembler:
    """Builds the final streamed response from chunks.

    Robust to what real providers send: a tool-call delta without ``function``, the id and name
    only on the first fragment (or repeated on every one), interleaved indices of parallel calls,
    a missing index (even with one id reused by parallel calls), arguments sent as a JSON
    object, the legacy ``delta.function_call``, an empty ``refusal: ""`` on every chunk, a
    usage chunk with no choices, no finish reason at all.
    """

    def __init__(self) -> None:
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.usage: dict = {}
        self.refusal: list[str] = []
        self.saw_choice = False   # any choice chunk at all (none: an empty response)
        self.saw_usage = False    # the usage chunk, which a server sends only at the very end

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; return its text delta (if any)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage_dict(usage)
            self.saw_usage = True
        text = None
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # we ask for one choice; ignore any other
            self.saw_choice = True
            delta = getattr(choice, "delta", None)
            if delta is not None:
                text = getattr(delta, "content", None) or text
                refusal = getattr(delta, "refusal", None)
                if refusal:
                    self.refusal.append(refusal)
                for tc in getattr(delta, "tool_calls", None) or []:
                    self._add_fragment(getattr(tc, "index", None), getattr(tc, "id", None),
                                       getattr(tc, "function", None))
                legacy = getattr(delta, "function_call", None)  # the pre-``tools`` API
                if getattr(legacy, "name", None) or getattr(legacy, "arguments", None):
                    self._add_fragment(0, None, legacy)  # one call, no id (some send it empty)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason
        return text

    def _add_fragment(self, idx: Any, tc_id: Any, fn: Any) -> None:
        name = getattr(fn, "name", None)
        if idx is None:
            # Some providers omit the index: a known id continues its latest call, a new id
            # opens a new one, no id continues the latest call. A header (a name) with new
            # arguments, or another name, for a call whose arguments are already whole opens
            # the next call: parallel calls may reuse one id.
            by_id = {self.calls[i]["id"]: i for i in sorted(self.calls) if self.calls[i]["id"]}
            if tc_id in by_id:
                idx = by_id[tc_id]
            elif tc_id or not self.calls:
                idx = max(self.calls, default=-1) + 1
            else:
                idx = max(self.calls)
            slot = self.calls.get(idx)
            if (name and slot is not None and _whole_json("".join(slot["args"]))
                    and (name != slot["name"] or getattr(fn, "arguments", None))):
                idx = max(self.calls) + 1
        slot = self.calls.setdefault(idx, {"id": "", "name": "", "args": []})
        if tc_id and not slot["id"]:
            slot["id"] = tc_id
        if fn is None:
            return
        if name and name != slot["name"]:
            slot["name"] += name  # set once, or a name sent in pieces
        args = getattr(fn, "arguments", None)
        if args:  # text, or a JSON object some servers send whole
            slot["args"].append(arguments_text(args))

    def complete(self, saw_done: bool) -> bool:
        """Whether the stream carried a whole answer (see the module docstring)."""
        if self.finish_reason or saw_done or self.saw_usage:
            return True
        return bool(self.calls) and all(_whole_json("".join(s["args"]))
                                        for s in self.calls.values())

    def final(self, complete: bool) -> LLMResponse:
        """The assembled response; ``finish_reason`` is inferred when the server sent none.

        Tool-call ids are the provider's (possibly empty); ``LLMClient`` makes them unique.
        """
        calls = []
        for idx in sorted(self.calls):
            s = self.calls[idx]
            raw = "".join(s["args"])
            args, err = parse_arguments(raw)
            calls.append(ToolCall(s["id"], s["name"], args, raw, err))
        finish = self.finish_reason or (
            ("tool_calls" if calls else "stop") if complete else "incomplete")
        finish = LEGACY_FINISH.get(finish, finish)
        return LLMResponse(None, calls, self.usage, finish, "".join(self.refusal) or None)

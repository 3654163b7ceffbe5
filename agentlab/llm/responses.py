"""What a model call returns: ``ToolCall`` and ``LLMResponse`` (notebook 01).

The runtime sees one result type whatever the endpoint and whether the answer was streamed.
Real providers differ in small ways that this module irons out once:

* **Refusals.** A model that declines answers with ``message.refusal`` (streamed:
  ``delta.refusal`` fragments) and no content. ``LLMResponse.refusal`` keeps that text; an
  empty string (some gateways send ``"refusal": ""`` on every chunk) means no refusal.
* **Cut-short answers.** ``finish_reason`` ``length`` or ``content_filter`` (or ``incomplete``
  for a stream that broke) means the model did not finish: its tool calls may be partial and
  must not be run. ``LLMResponse.truncated`` says so in one place.
* **Arguments that are not JSON.** ``parse_arguments`` never raises: a ``ToolCall`` keeps the raw
  text and a ``parse_error`` that the executor sends back to the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = ["ToolCall", "LLMResponse", "parse_arguments", "collect_stream", "usage_dict",
           "assistant_message", "CUT_SHORT"]

#: Finish reasons that mean the model did not finish its turn (tool calls may be partial).
CUT_SHORT = frozenset({"length", "content_filter", "incomplete"})


@dataclass
class ToolCall:
    """One function call requested by the model.

    ``arguments`` is always a dict. When the model sent text that is not a JSON object,
    ``arguments`` is ``{}``, ``raw_arguments`` keeps the text and ``parse_error`` says what was
    wrong (the executor turns that into an ``invalid_arguments`` result instead of running the tool).
    """

    id: str
    name: str
    arguments: dict
    raw_arguments: str = ""
    parse_error: str | None = None


@dataclass
class LLMResponse:
    """What a model call returned: text and/or tool calls, token usage, why it stopped.

    ``refusal`` is the model's refusal text when it declined (then ``content`` is usually None);
    it is not an answer, and the runtime does not treat it as one.
    """

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    finish_reason: str = ""
    refusal: str | None = None

    @property
    def has_tool_calls(self) -> bool:
        return len(self.tool_calls) > 0

    @property
    def truncated(self) -> bool:
        """True when the model was cut short (``length``, ``content_filter``, a broken stream):
        run none of its tool calls."""
        return self.finish_reason in CUT_SHORT


def parse_arguments(raw: str | None) -> tuple[dict, str | None]:
    """Parse tool-call arguments: ``(dict, None)`` or ``({}, why it failed)``; never raises."""
    if raw is None or not raw.strip():
        return {}, None  # a call without arguments
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        where = f" (char {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        return {}, f"arguments are not valid JSON: {getattr(exc, 'msg', exc)}{where}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def collect_stream(chunks: Iterable[LLMResponse]) -> LLMResponse:
    """Join what ``LLMClient.stream()`` yielded into one response, as ``chat()`` returns it."""
    parts: list[str] = []
    final = LLMResponse()
    for item in chunks:
        if item.content is not None:
            parts.append(item.content)
        else:
            final = item
    return LLMResponse("".join(parts) if parts else None, final.tool_calls, final.usage,
                       final.finish_reason, final.refusal)


def usage_dict(usage: Any) -> dict:
    """``{prompt_tokens, completion_tokens, total_tokens}`` from an SDK usage object (or ``{}``)."""
    if usage is None:
        return {}
    return {k: getattr(usage, k, 0) or 0
            for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def assistant_message(response: LLMResponse, content: str | None = None) -> dict:
    """The assistant message to append to the history after ``response``.

    Arguments go back exactly as the model sent them (``raw_arguments``), so a call whose
    arguments did not parse is still answered by its tool message. ``content`` overrides the
    response's text (a streamed final response has ``content=None``; pass the joined deltas).
    A refusal is kept in the message's ``refusal`` field, as the API itself returns it.
    """
    text = content if content is not None else response.content
    if text is None and not response.tool_calls:
        text = ""  # the API wants a content string when there are no tool calls
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    if response.refusal:
        msg["refusal"] = response.refusal
    if response.tool_calls:
        msg["tool_calls"] = [
            {"id": tc.id, "type": "function",
             "function": {"name": tc.name,
                          "arguments": tc.raw_arguments or
                          json.dumps(tc.arguments, ensure_ascii=False)}}
            for tc in response.tool_calls]
    return msg

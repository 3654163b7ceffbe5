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
  text and a ``parse_error`` that the executor sends back to the model. Some servers (older
  vLLM and Ollama builds) send ``arguments`` as a JSON *object*; the SDK keeps it as given, and
  so do we: it becomes the dict, and ``arguments_text`` its canonical JSON string.
* **The legacy answer.** ``finish_reason: "function_call"`` with ``message.function_call`` (the
  API before ``tools``, still sent by some compatible servers) is one tool call, as the SDK's
  own tool runners treat it; ``parse_completion`` turns it into a ``ToolCall`` without an id
  (``LLMClient`` gives it one) and reports ``finish_reason="tool_calls"``.
* **Not a completion at all.** A 200 whose body is an ``{"error": ...}`` object (gateways
  such as OpenRouter report errors after the model started this way) or not JSON (a proxy's
  login page) raises ``ErrorInBody``, which ``LLMClient`` turns into a typed ``ProviderError``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from .retry import EmptyResponse, ErrorInBody

__all__ = ["ToolCall", "LLMResponse", "parse_arguments", "arguments_text", "collect_stream",
           "usage_dict", "assistant_message", "parse_completion", "LEGACY_FINISH", "CUT_SHORT"]

#: Finish reasons that mean the model did not finish its turn (tool calls may be partial).
CUT_SHORT = frozenset({"length", "content_filter", "incomplete"})
#: Finish reasons that mean "run the tool calls" (``function_call`` is the pre-``tools`` API).
LEGACY_FINISH = {"function_call": "tool_calls"}


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


def parse_arguments(raw: Any) -> tuple[dict, str | None]:
    """Parse tool-call arguments: ``(dict, None)`` or ``({}, why it failed)``; never raises.

    ``raw`` is the JSON text the API specifies, or the JSON value some servers send instead
    (an object is taken as it is; anything else is not an object).
    """
    if isinstance(raw, dict):
        return raw, None
    if raw is not None and not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}"
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


def arguments_text(raw: Any) -> str:
    """The arguments as JSON text: a string as sent, a JSON value sent instead as its
    canonical JSON (``ensure_ascii=False``), ``None`` as ``""``."""
    if raw is None or isinstance(raw, str):
        return raw or ""
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(raw)


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
    out = {k: getattr(usage, k, 0) or 0
           for k in ("prompt_tokens", "completion_tokens", "total_tokens")}
    if not out["total_tokens"]:  # some servers send prompt_tokens alone, or total 0
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    return out


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


def _call(tc: Any, call_id: Any = "") -> ToolCall:
    fn = getattr(tc, "function", tc)  # a tool call, or a legacy ``function_call``
    raw = getattr(fn, "arguments", None)
    args, err = parse_arguments(raw)
    return ToolCall(call_id or "", getattr(fn, "name", None) or "", args, arguments_text(raw), err)


def parse_completion(raw: Any) -> LLMResponse:
    """An SDK ``ChatCompletion`` as an ``LLMResponse``.

    Raises ``ErrorInBody`` for an error object or a non-JSON body (the SDK hands back the
    text), ``EmptyResponse`` for a 200 with no choice or no message.
    """
    if isinstance(raw, (str, bytes)):
        raise ErrorInBody(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
    choices = getattr(raw, "choices", None)
    error = getattr(raw, "error", None)
    if error is not None and not choices:
        raise ErrorInBody(error if isinstance(error, dict) else {"message": str(error)})
    if not hasattr(raw, "choices"):  # JSON, but a list or a number
        raise ErrorInBody(str(raw))
    choice = choices[0] if choices else None
    msg = getattr(choice, "message", None)
    if msg is None:
        raise EmptyResponse("the response has no choice (choices: [])" if choice is None
                            else "the response's choice has no message")
    calls = [_call(tc, getattr(tc, "id", None)) for tc in getattr(msg, "tool_calls", None) or []]
    legacy = getattr(msg, "function_call", None)
    if getattr(legacy, "name", None) and not calls:  # gateways send {"name": ""} on every answer
        calls.append(_call(legacy))
    # some providers send finish_reason "" or null: infer it from what came back
    finish = choice.finish_reason or ("tool_calls" if calls else "stop")
    usage = usage_dict(getattr(raw, "usage", None))
    return LLMResponse(getattr(msg, "content", None), calls, usage,
                       LEGACY_FINISH.get(finish, finish), getattr(msg, "refusal", None) or None)

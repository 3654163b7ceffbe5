"""Strict request validation: reject what the real Chat Completions API rejects (notebook 04).

History-trimming bugs (a ``tool`` message whose assistant ``tool_calls`` message was cut away,
or an assistant ``tool_calls`` message missing some of its results) only show up against the
real API as a 400. ``check_request`` reproduces those 400s offline, with the real API's status,
error shape and message texts, so the bug surfaces in a notebook instead of in production.

``check_request(body)`` returns ``None`` for a valid body and raises ``SimulatorHTTPError``
otherwise; the simulator's strict mode (the default) calls it on every request. It is O(n) in
the number of messages (one pass for structure, one for tool-call pairing). It also checks the
parameters' types and ranges (``model: 42``, ``temperature: "hot"`` or ``5``, ``stream: "yes"``,
``max_tokens: -1``, ``content: 5``) with the real API's codes and texts.

``check_model`` (404 ``model_not_found`` for a model missing from ``agentlab.models``) and
``check_window`` (400 ``context_length_exceeded`` when the prompt plus ``max_tokens`` does not
fit) use the model table; ``sanitize`` is what the lenient mode does instead: it drops what it
cannot use, so a malformed request still gets an answer, never a crash.
"""
from __future__ import annotations

import re
from typing import Any

from ..models import ModelInfo, model_info

__all__ = ["SimulatorHTTPError", "api_error", "check_request", "check_model", "check_window",
           "sanitize", "ROLES"]

#: Roles the real API accepts.
ROLES = ("system", "assistant", "user", "function", "tool", "developer")

_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]+$")
_TOOL_CHOICES = ("none", "auto", "required")


class SimulatorHTTPError(Exception):
    """An HTTP error the simulator answers with: ``.status`` and ``.body`` (``{"error": {...}}``).

    Also raised by ``check_request`` so code can validate a message list without HTTP.
    ``.message``, ``.param`` and ``.code`` repeat the fields of ``body["error"]``.
    """

    def __init__(self, status: int, body: dict, headers: dict | None = None):
        self.status = status
        self.body = body
        self.headers = dict(headers or {})
        err = body.get("error") or {}
        self.message = err.get("message", "")
        self.param = err.get("param")
        self.code = err.get("code")
        super().__init__(f"{status}: {self.message}")


def api_error(message: str, *, type: str = "invalid_request_error", param: str | None = None,
              code: str | None = None) -> dict:
    """An OpenAI-shaped error body: ``{"error": {"message", "type", "param", "code"}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def _bad(message: str, param: str | None = None, code: str | None = None) -> SimulatorHTTPError:
    return SimulatorHTTPError(400, api_error(message, param=param, code=code))


def _missing(param: str) -> SimulatorHTTPError:
    return _bad(f"Missing required parameter: '{param}'.", param, "missing_required_parameter")


def _type_name(value: Any) -> str:
    return {str: "a string", int: "an integer", float: "a decimal", bool: "a boolean",
            list: "an array", dict: "an object", type(None): "null"}.get(type(value), "a value")


def _wrong_type(param: str, expected: str, value: Any) -> SimulatorHTTPError:
    return _bad(f"Invalid type for '{param}': expected {expected}, but got {_type_name(value)} "
                "instead.", param, "invalid_type")


def _supported(value: Any, options: tuple[str, ...], param: str) -> SimulatorHTTPError:
    listed = ", ".join(f"'{o}'" for o in options[:-1]) + f", and '{options[-1]}'"
    if len(options) == 2:
        listed = f"'{options[0]}' and '{options[1]}'"
    return _bad(f"Invalid value: '{value}'. Supported values are: {listed}.", param,
                "invalid_value")


# ---------------------------------------------------------------- parameters

#: name -> (kind, minimum, maximum); kind "decimal" accepts int and float, "integer" only int.
_NUMBERS: dict[str, tuple[str, float, float | None]] = {
    "temperature": ("decimal", 0, 2), "top_p": ("decimal", 0, 1),
    "presence_penalty": ("decimal", -2, 2), "frequency_penalty": ("decimal", -2, 2),
    "max_tokens": ("integer", 1, None), "max_completion_tokens": ("integer", 1, None),
    "n": ("integer", 1, 128),
}
_BOOLEANS = ("stream", "parallel_tool_calls", "logprobs", "store")


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _check_params(body: dict) -> None:
    """Types and ranges of the scalar parameters, as the real API words them."""
    if not isinstance(body["model"], str):
        raise _wrong_type("model", "a string", body["model"])
    for name, (kind, low, high) in _NUMBERS.items():
        value = body.get(name)
        if value is None:
            continue
        ok = isinstance(value, int) if kind == "integer" else isinstance(value, (int, float))
        if not ok or isinstance(value, bool):
            raise _wrong_type(name, "a decimal" if kind == "decimal" else "an integer", value)
        if value < low:
            raise _bad(f"Invalid '{name}': {kind} below minimum value. Expected a value >= "
                       f"{_shown(low)}, but got {_shown(value)} instead.", name,
                       f"{kind}_below_min_value")
        if high is not None and value > high:
            raise _bad(f"Invalid '{name}': {kind} above maximum value. Expected a value <= "
                       f"{_shown(high)}, but got {_shown(value)} instead.", name,
                       f"{kind}_above_max_value")
    for name in _BOOLEANS:
        if body.get(name) is not None and not isinstance(body[name], bool):
            raise _wrong_type(name, "a boolean", body[name])


# ---------------------------------------------------------------- tools

def _check_tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _wrong_type("tools", "an array", tools)
    if not tools:
        raise _bad("Invalid 'tools': empty array. Expected an array with minimum length 1, "
                   "but got an empty array instead.", "tools", "empty_array")
    for i, tool in enumerate(tools):
        where = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _wrong_type(where, "an object", tool)
        if "type" not in tool:
            raise _missing(f"{where}.type")
        if tool["type"] != "function":
            raise _supported(tool["type"], ("function", "custom"), f"{where}.type")
        fn = tool.get("function")
        if fn is None:
            raise _missing(f"{where}.function")
        if not isinstance(fn, dict):
            raise _wrong_type(f"{where}.function", "an object", fn)
        name = fn.get("name")
        if name is None:
            raise _missing(f"{where}.function.name")
        if not isinstance(name, str):
            raise _wrong_type(f"{where}.function.name", "a string", name)
        if len(name) > 64:
            raise _bad(f"Invalid '{where}.function.name': string too long. Expected a string "
                       f"with maximum length 64, but got a string with length {len(name)} "
                       "instead.", f"{where}.function.name", "string_above_max_length")
        if not _NAME_RE.match(name):
            raise _bad(f"Invalid '{where}.function.name': string does not match pattern. "
                       "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                       f"{where}.function.name", "invalid_value")
        _check_parameters(name, fn.get("parameters", {}), f"{where}.function.parameters")


def _check_parameters(name: str, params: Any, param: str) -> None:
    if not isinstance(params, dict):
        shown = repr(params).replace("'", '"') if not isinstance(params, str) else f"'{params}'"
        raise _bad(f"Invalid schema for function '{name}': {shown} is not of type 'object', "
                   "'boolean'.", param, "invalid_function_parameters")
    if params and params.get("type") != "object":
        raise _bad(f"Invalid schema for function '{name}': schema must be a JSON Schema of "
                   f"'type: \"object\"', got 'type: \"{params.get('type')}\"'.", param,
                   "invalid_function_parameters")
    props = params.get("properties")
    if props is not None and not isinstance(props, dict):
        raise _bad(f"Invalid schema for function '{name}': In context=(), 'properties' must be "
                   "an object.", param, "invalid_function_parameters")


# ---------------------------------------------------------------- messages

def _check_message(i: int, m: Any) -> None:
    """Structure of one message: a known role and the fields that role requires."""
    where = f"messages[{i}]"
    if not isinstance(m, dict):
        raise _wrong_type(where, "an object", m)
    if "role" not in m:
        raise _missing(f"{where}.role")
    role = m["role"]
    if role not in ROLES:
        raise _supported(role, ROLES, f"{where}.role")
    if role == "assistant":
        calls = m.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise _wrong_type(f"{where}.tool_calls", "an array", calls)
            for j, tc in enumerate(calls):
                tw = f"{where}.tool_calls[{j}]"
                if not isinstance(tc, dict):
                    raise _wrong_type(tw, "an object", tc)
                for key in ("id", "type", "function"):
                    if key not in tc:
                        raise _missing(f"{tw}.{key}")
                fn = tc["function"]
                if not isinstance(fn, dict):
                    raise _wrong_type(f"{tw}.function", "an object", fn)
                for key in ("name", "arguments"):
                    if key not in fn:
                        raise _missing(f"{tw}.function.{key}")
                if not isinstance(fn["arguments"], str):
                    raise _wrong_type(f"{tw}.function.arguments", "a string", fn["arguments"])
        if m.get("content") is None and not calls and not m.get("function_call") \
                and not m.get("refusal"):
            raise _bad("Invalid value for 'content': expected a string, got null.",
                       f"messages.[{i}].content")
        if m.get("content") is not None:
            _check_content(where, m["content"])
        return
    if "content" not in m:
        raise _missing(f"{where}.content")
    if m["content"] is None:
        raise _bad("Invalid value for 'content': expected a string, got null.",
                   f"messages.[{i}].content")
    _check_content(where, m["content"])
    if role == "tool" and "tool_call_id" not in m:
        raise _missing(f"{where}.tool_call_id")


def _check_content(where: str, content: Any) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list) or not all(isinstance(p, dict) for p in content):
        raise _bad(f"Invalid type for '{where}.content': expected one of a string or array of "
                   f"objects, but got {_type_name(content)} instead.", f"{where}.content",
                   "invalid_type")


def _unanswered(i: int, ids: list[str]) -> SimulatorHTTPError:
    return _bad("An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(ids)}", f"messages.[{i}].role")


def _check_pairing(messages: list[dict]) -> None:
    """Every tool message answers the assistant tool_calls block right before it, and every
    call of that block is answered before the next non-tool message. One pass, O(n)."""
    open_at = -1                 # index of the assistant message whose results we are reading
    order: list[str] = []        # its call ids, in order (to list the missing ones)
    block: set[str] = set()      # the same ids as a set (O(1) membership)
    pending: set[str] = set()    # ids not answered yet
    for i, m in enumerate(messages):
        role = m["role"]
        if role == "tool":
            tid = m.get("tool_call_id")
            if open_at < 0 or tid not in block:
                raise _bad("Invalid parameter: messages with role 'tool' must be a response to a "
                           "preceeding message with 'tool_calls'.", f"messages.[{i}].role")
            pending.discard(tid)
            continue
        if pending:
            raise _unanswered(open_at, [t for t in order if t in pending])
        open_at, order, block, pending = -1, [], set(), set()
        if role == "assistant" and m.get("tool_calls"):
            open_at = i
            order = [tc["id"] for tc in m["tool_calls"]]
            block = set(order)
            pending = set(order)
    if pending:
        raise _unanswered(open_at, [t for t in order if t in pending])


def check_request(body: Any) -> None:
    """Validate a chat-completions request body the way the real API does.

    Returns ``None`` when the body is acceptable; raises ``SimulatorHTTPError`` (status 400,
    an OpenAI-shaped ``{"error": ...}`` body with the real API's message text) for a missing
    ``model``/``messages``, an empty message list, an unknown role, a malformed tool schema, a
    ``tool`` message that answers no preceding ``tool_calls``, or ``tool_calls`` left without
    results. Taught in notebook 04 (message management).
    """
    if not isinstance(body, dict):
        raise _bad("We could not parse the JSON body of your request. The OpenAI API expects a "
                   "JSON object.")
    if body.get("model") is None or body.get("model") == "":
        raise _bad("you must provide a model parameter")
    if "messages" not in body:
        raise _missing("messages")
    messages = body["messages"]
    if not isinstance(messages, list):
        raise _wrong_type("messages", "an array", messages)
    if not messages:
        raise _bad("Invalid 'messages': empty array. Expected an array with minimum length 1, "
                   "but got an empty array instead.", "messages", "empty_array")
    if body.get("tools") is not None:
        _check_tools(body["tools"])
    choice = body.get("tool_choice")
    if choice is not None:
        if not body.get("tools"):
            raise _bad("Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                       "'tools' are specified.", "tool_choice")
        if isinstance(choice, str) and choice not in _TOOL_CHOICES:
            raise _supported(choice, _TOOL_CHOICES, "tool_choice")
    _check_params(body)
    if body.get("stream_options") is not None and not body.get("stream"):
        raise _bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                   "stream_options")
    for i, m in enumerate(messages):
        _check_message(i, m)
    _check_pairing(messages)


# ---------------------------------------------------------------- the model table

def check_model(name: str) -> ModelInfo:
    """The table's entry for ``name``, or the real API's 404 ``model_not_found``."""
    info = model_info(name)
    if info is None:
        raise SimulatorHTTPError(404, api_error(
            f"The model `{name}` does not exist or you do not have access to it.",
            code="model_not_found"))
    return info


def check_window(info: ModelInfo, body: dict, prompt_tokens: int, tools_tokens: int) -> None:
    """400 when the reply cannot fit: ``max_tokens`` over the model's output limit, or the
    prompt (plus ``max_tokens``) over its context window, in the real API's words."""
    param = "max_completion_tokens" if body.get("max_completion_tokens") else "max_tokens"
    limit = body.get(param)
    if isinstance(limit, int) and limit > info.max_output_tokens:
        raise _bad(f"{param} is too large: {limit}. This model supports at most "
                   f"{info.max_output_tokens} completion tokens, whereas you provided {limit}.",
                   param, "invalid_value")
    window = info.context_window
    head = f"This model's maximum context length is {window} tokens. However, "
    if isinstance(limit, int) and prompt_tokens + limit > window:
        raise _bad(head + f"you requested {prompt_tokens + limit} tokens ({prompt_tokens} in the "
                   f"messages, {limit} in the completion). Please reduce the length of the "
                   "messages or completion.", "messages", "context_length_exceeded")
    if prompt_tokens > info.input_limit:
        if tools_tokens:
            raise _bad(head + f"your messages resulted in {prompt_tokens} tokens "
                       f"({prompt_tokens - tools_tokens} in the messages, {tools_tokens} in the "
                       "functions). Please reduce the length of the messages or functions.",
                       "messages", "context_length_exceeded")
        raise _bad(head + f"your messages resulted in {prompt_tokens} tokens. Please reduce the "
                   "length of the messages.", "messages", "context_length_exceeded")


# ---------------------------------------------------------------- lenient mode

def _usable_tool(tool: Any) -> bool:
    fn = tool.get("function") if isinstance(tool, dict) else None
    params = fn.get("parameters", {}) if isinstance(fn, dict) else None
    return (isinstance(fn, dict) and isinstance(fn.get("name"), str) and isinstance(params, dict)
            and isinstance(params.get("properties", {}), dict))


def sanitize(body: dict) -> tuple[list[dict], list[dict]]:
    """``(messages, tools)`` a policy can work with, from any JSON object: messages that are
    objects with a string role, tools that are function schemas. Used when ``strict=False``."""
    messages = body.get("messages")
    tools = body.get("tools")
    messages = [m for m in messages if isinstance(m, dict) and isinstance(m.get("role"), str)] \
        if isinstance(messages, list) else []
    tools = [t for t in tools if _usable_tool(t)] if isinstance(tools, list) else []
    return messages, tools

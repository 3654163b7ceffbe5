"""Strict request validation: reject what the real Chat Completions API rejects (notebook 04).

History-trimming bugs (a ``tool`` message whose assistant ``tool_calls`` message was cut away,
or an assistant ``tool_calls`` message missing some of its results) only show up against the
real API as a 400. ``check_request`` reproduces those 400s offline, with the real API's status,
error shape and message texts, so the bug surfaces in a notebook instead of in production.

``check_request(body)`` returns ``None`` for a valid body and raises ``SimulatorHTTPError``
otherwise; the simulator's strict mode (the default) calls it on every request. It is O(n) in
the number of messages (one pass for structure, one for tool-call pairing).
"""
from __future__ import annotations

import re
from typing import Any

__all__ = ["SimulatorHTTPError", "api_error", "check_request", "ROLES"]

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
    return {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
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
        if m.get("content") is None and not calls and not m.get("function_call"):
            raise _bad("Invalid value for 'content': expected a string, got null.",
                       f"messages.[{i}].content")
        return
    if "content" not in m:
        raise _missing(f"{where}.content")
    if m["content"] is None:
        raise _bad("Invalid value for 'content': expected a string, got null.",
                   f"messages.[{i}].content")
    if role == "tool" and "tool_call_id" not in m:
        raise _missing(f"{where}.tool_call_id")


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
    if not body.get("model"):
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
    if body.get("stream_options") is not None and not body.get("stream"):
        raise _bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                   "stream_options")
    for i, m in enumerate(messages):
        _check_message(i, m)
    _check_pairing(messages)

"""Building a chat-completions request body, and refusing a malformed one before any network.

What would come back from the provider as a 400 anyway (no messages, a message that is not an
object, an unknown role, a tool that is not a function schema) is refused here with a
``ProviderError`` (code ``bad_request``, ``details["param"]`` naming the field), without
spending a request or a retry. The checks are O(n) dict lookups with no copies, so a 600-message
history costs microseconds (``benchmarks/bench_llm.py``).

Text that cannot be encoded as UTF-8 (a lone surrogate from ``os.fsdecode`` or a split emoji)
is found only when the SDK encodes the body; ``unencodable`` turns that into the same
``bad_request`` naming the message, so the happy path pays nothing for the check.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import ProviderError

__all__ = ["ROLES", "build_body", "unencodable"]

#: Message roles the chat-completions API accepts.
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _bad(message: str, param: str) -> ProviderError:
    return ProviderError("bad_request", f"invalid request: {message}; not sent",
                         details={"status": None, "attempts": 0, "param": param})


def build_body(model: str, messages: Any, tools: Any, tool_choice: Any, temperature: float,
               params: dict) -> dict:
    """The JSON body for ``POST /chat/completions`` (``params`` are added as given)."""
    if not isinstance(messages, list) or not messages:
        raise _bad("messages must be a non-empty list of dicts", "messages")
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise _bad(f"messages[{i}] is a {type(m).__name__}, not a dict", f"messages[{i}]")
        if m.get("role") not in ROLES:
            raise _bad(f"messages[{i}] has unknown role {m.get('role')!r} "
                       f"(expected one of {sorted(ROLES)})", f"messages[{i}].role")
    body: dict[str, Any] = {"model": model, "messages": messages, "temperature": temperature}
    if tools:
        if not isinstance(tools, list):
            raise _bad("tools must be a list of function schemas", "tools")
        for i, t in enumerate(tools):
            fn = t.get("function") if isinstance(t, dict) else None
            if (not isinstance(t, dict) or t.get("type") != "function"
                    or not isinstance(fn, dict) or not isinstance(fn.get("name"), str)
                    or not fn["name"]):
                raise _bad(f"tools[{i}] is not a function schema "
                           "({'type': 'function', 'function': {'name': ...}})", f"tools[{i}]")
        body["tools"] = tools
        body["tool_choice"] = tool_choice
    body.update(params)
    return body


def unencodable(messages: list, exc: UnicodeEncodeError) -> ProviderError:
    """The ``bad_request`` for a body the SDK could not encode as UTF-8, naming the first
    message that holds the bad text (``"tools"`` when no message does)."""
    param = "tools"
    for i, m in enumerate(messages):
        try:
            json.dumps(m, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            param = f"messages[{i}]"
            break
        except (TypeError, ValueError, RecursionError):
            continue
    bad = exc.object[exc.start:exc.end]
    return _bad(f"{param} holds text that is not valid UTF-8 ({bad!r}: {exc.reason}; a lone "
                "surrogate, e.g. from os.fsdecode or a split emoji)", param)

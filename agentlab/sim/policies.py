"""What the simulated model decides to say (taught in notebooks 00 and 01).

A *policy* looks at one chat-completions request (its ``messages`` and ``tools``) and returns
the reply: a ``Text``, one ``Call`` or a list of ``Call`` (parallel tool calls). Policies derive
their answer from the request alone, never from hidden state, so a retried request gets exactly
the same answer; that is what makes retries and runs reproducible.

Shipped policies:

- ``Script(turns)``: replies in order, one per assistant turn since the last user message.
- ``Function(fn)``: ``fn(messages, tools)`` decides.
- ``ToolUser()`` (the default): calls every offered tool once with arguments synthesised from
  its JSON schema, then answers with a text citing what the tools returned.
- ``Researcher()`` lives in ``agentlab/sim/researcher.py`` (the article's research trace).

Besides text and calls, a reply may be a ``refuse("...")`` (the model declines: ``refusal`` set,
no content, as the real API answers) or ``filtered(...)`` (``finish_reason`` ``content_filter``:
the provider withheld the rest of the answer, as Azure's filter does).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, Union

__all__ = [
    "Text", "Call", "Refusal", "Filtered", "Reply", "ReplyParts", "text", "call", "refuse",
    "filtered", "Policy", "Script", "Function", "ToolUser", "synthesize_arguments",
    "normalize_reply", "reply_parts", "SCRIPT_ENDED",
]

#: The text a ``Script`` answers with once it has run out of turns.
SCRIPT_ENDED = "[agentlab.sim] The script has ended: there are no more scripted turns."


@dataclass(frozen=True)
class Text:
    """A plain assistant answer (``finish_reason`` ``stop``)."""
    content: str


@dataclass(frozen=True)
class Call:
    """One tool call the model makes; ``arguments`` is sent as a JSON string."""
    name: str
    arguments: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Refusal:
    """The model declines: ``message.refusal`` is this text, ``content`` is null."""
    text: str


@dataclass(frozen=True)
class Filtered:
    """The provider's content filter stopped the answer: ``finish_reason`` ``content_filter``,
    with whatever ``reply`` held before the cut (text and/or calls; may be None)."""
    reply: Any = None


#: What a policy may return: a Text, a Call, a list of Calls (parallel), a plain str, a
#: Refusal or a Filtered.
Reply = Union[Text, Call, Refusal, Filtered, Sequence[Union[Text, Call, str]], str]


@dataclass(frozen=True)
class ReplyParts:
    """A policy's reply taken apart: what goes into the completion message."""
    content: str | None
    calls: list
    refusal: str | None = None
    finish_reason: str | None = None  # None: decided by the reply (stop / tool_calls / length)


def text(s: str) -> Text:
    """Shorthand for ``Text(s)``: a scripted plain answer."""
    return Text(str(s))


def call(name: str, args: dict | None = None) -> Call:
    """Shorthand for ``Call(name, args or {})``: a scripted tool call."""
    return Call(name, dict(args or {}))


def refuse(s: str = "I'm sorry, I can't help with that.") -> Refusal:
    """Shorthand for ``Refusal(s)``: the model declines to answer."""
    return Refusal(str(s))


def filtered(reply: Any = None) -> Filtered:
    """Shorthand for ``Filtered(reply)``: the answer is cut by a content filter."""
    return Filtered(reply)


def reply_parts(item: Any) -> ReplyParts:
    """``ReplyParts`` of anything a policy may return (see ``normalize_reply``)."""
    if isinstance(item, Refusal):
        return ReplyParts(None, [], item.text)
    if isinstance(item, Filtered):
        inner = reply_parts(item.reply) if item.reply is not None else ReplyParts(None, [])
        return ReplyParts(inner.content, inner.calls, inner.refusal, "content_filter")
    content, calls = normalize_reply(item)
    return ReplyParts(content, calls)


def normalize_reply(item: Any) -> tuple[str | None, list[Call]]:
    """Turn whatever a policy returned into ``(content, calls)``.

    A ``str`` is a ``Text``; a list may mix ``Text``/``str`` (joined into the content) and
    ``Call`` items (sent as parallel tool calls, in order).
    """
    if isinstance(item, str):
        return item, []
    if isinstance(item, Text):
        return item.content, []
    if isinstance(item, Call):
        return None, [item]
    if isinstance(item, (list, tuple)):
        texts: list[str] = []
        calls: list[Call] = []
        for part in item:
            content, more = normalize_reply(part)
            if content is not None:
                texts.append(content)
            calls.extend(more)
        if not calls:
            return "".join(texts), []
        return ("".join(texts) if texts else None), calls
    if isinstance(item, (Refusal, Filtered)):
        parts = reply_parts(item)
        return parts.content, parts.calls
    raise TypeError(f"a policy must return Text, Call, a list of Call or a str, not {item!r}; "
                    "use agentlab.sim.text(...) / agentlab.sim.call(name, args)")


class Policy:
    """Base class: override ``respond``. Derive the answer from the request alone."""

    def respond(self, messages: list[dict], tools: list[dict]) -> Reply:
        """Return the assistant's reply to ``messages`` given the offered ``tools``."""
        raise NotImplementedError("subclasses of Policy implement respond(messages, tools)")


# ---------------------------------------------------------------- helpers over a request

def _last_user_index(messages: list[dict]) -> int:
    """Index of the last ``user`` message, or -1 when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], dict) and messages[i].get("role") == "user":
            return i
    return -1


def _content_text(content: Any) -> str:
    """The text of a message content (a str, or a list of ``{"type": "text"}`` parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _tool_name(tool: dict) -> str:
    fn = tool.get("function", tool) if isinstance(tool, dict) else {}
    return fn.get("name", "") if isinstance(fn, dict) else ""


# ---------------------------------------------------------------- Script / Function

class Script(Policy):
    """Scripted replies: reply *i* is ``turns[i]`` where *i* counts assistant messages since
    the last user message (so a retried request gets the same reply).

    Items are ``text(...)``, ``call(...)``, a list of ``call(...)`` (parallel calls), a plain
    ``str``, or a callable ``(messages, tools) -> item``. Past the end it answers
    ``SCRIPT_ENDED`` so a runaway loop still terminates.
    """

    def __init__(self, turns: Sequence[Any]):
        self.turns = list(turns)

    def respond(self, messages: list[dict], tools: list[dict]) -> Reply:
        start = _last_user_index(messages) + 1
        i = sum(1 for m in messages[start:] if isinstance(m, dict) and m.get("role") == "assistant")
        if i >= len(self.turns):
            return Text(SCRIPT_ENDED)
        item = self.turns[i]
        return item(messages, tools) if callable(item) else item

    def __repr__(self) -> str:
        return f"Script({len(self.turns)} turns)"


class Function(Policy):
    """A policy given by a function ``fn(messages, tools) -> reply`` (a str means Text)."""

    def __init__(self, fn: Callable[[list[dict], list[dict]], Reply]):
        self.fn = fn

    def respond(self, messages: list[dict], tools: list[dict]) -> Reply:
        return self.fn(messages, tools)

    def __repr__(self) -> str:
        return f"Function({getattr(self.fn, '__name__', self.fn)!r})"


# ---------------------------------------------------------------- ToolUser

def synthesize_arguments(schema: Any, *, _depth: int = 0) -> Any:
    """A plausible value for a JSON schema: required fields only, strings ``"example"``,
    integers ``1``, numbers ``1.5``, booleans ``True``, the first enum value, nested objects
    and one-item arrays. ``{"type": "object"}`` without required fields gives ``{}``."""
    if not isinstance(schema, dict) or _depth > 8:
        return "example"
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema and _depth > 0:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if isinstance(o, dict)
                   and o.get("type") != "null"]
        if options:
            return synthesize_arguments(options[0], _depth=_depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]: take the first non-null type
        kind = next((k for k in kind if k != "null"), "string")
    if kind is None:
        kind = "object" if "properties" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {name: synthesize_arguments(props.get(name, {}), _depth=_depth + 1)
                for name in schema.get("required") or []}
    if kind == "array":
        return [synthesize_arguments(schema.get("items") or {"type": "string"}, _depth=_depth + 1)]
    return {"string": "example", "integer": 1, "number": 1.5, "boolean": True,
            "null": None}.get(kind, "example")


def _snippet(s: str, n: int = 80) -> str:
    s = re.sub(r"\s+", " ", s).strip()
    return s if len(s) <= n else s[: n - 3] + "..."


class ToolUser(Policy):
    """The default model: first call every offered tool once, in parallel, with arguments
    synthesised from each schema; once the results are in, answer with a text that cites the
    first ~80 characters of each result. Without tools it answers the user directly."""

    def respond(self, messages: list[dict], tools: list[dict]) -> Reply:
        start = _last_user_index(messages) + 1
        tail = [m for m in messages[start:] if isinstance(m, dict)]
        called = [m for m in tail if m.get("role") == "assistant" and m.get("tool_calls")]
        if tools and not called:
            return [Call(_tool_name(t), synthesize_arguments(
                (t.get("function", t) if isinstance(t, dict) else {}).get("parameters")
                or {"type": "object"})) for t in tools]
        names = {tc.get("id"): (tc.get("function") or {}).get("name", "?")
                 for m in called for tc in m["tool_calls"] if isinstance(tc, dict)}
        results = [m for m in tail if m.get("role") == "tool"]
        if results:
            lines = [f"- {names.get(m.get('tool_call_id'), 'tool')}: "
                     f"{_snippet(_content_text(m.get('content')))}" for m in results]
            return Text(f"I used {len(results)} tool result(s):\n" + "\n".join(lines))
        question = _content_text(messages[start - 1].get("content")) if start else ""
        return Text(f"Simulated answer to: {_snippet(question)}" if question
                    else "Hello from the agentlab simulator.")

    def __repr__(self) -> str:
        return "ToolUser()"

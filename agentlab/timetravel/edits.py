"""The change a fork applies to a revision: a message edited or appended, a tool result
replaced, another model or configuration (chapter 16, ``notebooks/16_time_travel.ipynb``).

An edit is a small record with ``apply(messages, overrides)`` (it changes a private copy of the
revision's messages, or the overrides a fork is continued with) and ``describe()`` (the words
saved in the fork's metadata and shown by ``history``). Message edits keep the conversation
valid (a tool message stays paired with its call: ``agentlab.checkpoints.safe_point``); model
and configuration edits change nothing in the messages: they are recorded as the fork's
``overrides``, which the runtime that continues the fork must match
(``agentlab.timetravel.compat``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterable

from ..errors import ConfigError
from ..runtime.types import RuntimeConfig

__all__ = ["Edit", "EditMessage", "AppendMessage", "ReplaceToolResult", "SetModel", "SetConfig",
           "apply_edits"]


class Edit:
    """What every edit offers (see the module doc)."""

    def apply(self, messages: list[dict], overrides: dict) -> None:  # pragma: no cover
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover
        raise NotImplementedError


@dataclass(frozen=True)
class EditMessage(Edit):
    """Replace the text of ``messages[index]`` (a system, user or assistant text message)."""

    index: int
    content: str

    def apply(self, messages: list[dict], overrides: dict) -> None:
        try:
            msg = messages[self.index]
        except IndexError:
            raise ConfigError("invalid_edit", f"EditMessage: no message {self.index} (the "
                              f"revision has {len(messages)})") from None
        if msg.get("role") == "tool" or msg.get("tool_calls"):
            raise ConfigError("invalid_edit", f"EditMessage: message {self.index} is a "
                              f"{'tool result' if msg.get('role') == 'tool' else 'tool call'}; "
                              "use ReplaceToolResult for a result")
        messages[self.index] = {**msg, "content": self.content}

    def describe(self) -> str:
        return f"message {self.index} edited"


@dataclass(frozen=True)
class AppendMessage(Edit):
    """Append a message (a user's follow-up, by default) after the revision's history."""

    content: str
    role: str = "user"

    def apply(self, messages: list[dict], overrides: dict) -> None:
        if self.role not in ("user", "system", "developer"):
            raise ConfigError("invalid_edit", f"AppendMessage: role {self.role!r} cannot be "
                              "appended (user, system or developer)")
        messages.append({"role": self.role, "content": self.content})

    def describe(self) -> str:
        return f"{self.role} message appended"


@dataclass(frozen=True)
class ReplaceToolResult(Edit):
    """Give the call ``tool_call_id`` another result (or the ``nth`` result of ``tool``)."""

    result: str
    tool_call_id: str | None = None
    tool: str | None = None
    nth: int = 0

    def _index(self, messages: list[dict]) -> int:
        names = {tc["id"]: tc["function"]["name"] for m in messages
                 for tc in m.get("tool_calls") or []}
        found = [i for i, m in enumerate(messages) if m.get("role") == "tool"
                 and (m.get("tool_call_id") == self.tool_call_id if self.tool_call_id
                      else names.get(m.get("tool_call_id")) == self.tool)]
        if not found or not -len(found) <= self.nth < len(found):
            what = self.tool_call_id or f"{self.tool} (result {self.nth})"
            raise ConfigError("invalid_edit", f"ReplaceToolResult: no tool result for {what} in "
                              f"this revision ({len(found)} found)")
        return found[self.nth]

    def apply(self, messages: list[dict], overrides: dict) -> None:
        if not (self.tool_call_id or self.tool):
            raise ConfigError("invalid_edit", "ReplaceToolResult needs tool_call_id= or tool=")
        i = self._index(messages)
        messages[i] = {**messages[i], "content": self.result}

    def describe(self) -> str:
        return f"tool result {self.tool_call_id or f'{self.tool}[{self.nth}]'} replaced"


@dataclass(frozen=True)
class SetModel(Edit):
    """Continue the fork with another model."""

    model: str

    def apply(self, messages: list[dict], overrides: dict) -> None:
        overrides["model"] = self.model

    def describe(self) -> str:
        return f"model -> {self.model}"


@dataclass(frozen=True)
class SetConfig(Edit):
    """Continue the fork with other ``RuntimeConfig`` values (budgets, timeout policy, ...)."""

    fields: dict[str, Any] = field(default_factory=dict)

    def __init__(self, **fields: Any) -> None:
        known = {f.name for f in dataclasses.fields(RuntimeConfig)}
        unknown = sorted(set(fields) - known)
        if unknown:
            raise ConfigError("invalid_edit", f"SetConfig: {', '.join(unknown)} not a "
                              f"RuntimeConfig field ({', '.join(sorted(known))})")
        RuntimeConfig(**fields)  # refuses a bad value now, not when the fork runs
        object.__setattr__(self, "fields", dict(fields))

    def apply(self, messages: list[dict], overrides: dict) -> None:
        overrides.setdefault("config", {}).update(self.fields)

    def describe(self) -> str:
        return "config " + ", ".join(f"{k}={v!r}" for k, v in sorted(self.fields.items()))


def apply_edits(edit: Edit | Iterable[Edit] | None, messages: list[dict]
                ) -> tuple[list[dict], dict, str]:
    """``(edited copy of messages, overrides, description)`` for one edit, several, or None."""
    edits = [] if edit is None else [edit] if isinstance(edit, Edit) else list(edit)
    out, overrides = [dict(m) for m in messages], {}
    for e in edits:
        if not isinstance(e, Edit):
            raise ConfigError("invalid_edit", f"edit must be an agentlab.timetravel Edit "
                              f"(EditMessage, ReplaceToolResult, ...), not {type(e).__name__}")
        e.apply(out, overrides)
    return out, overrides, "; ".join(e.describe() for e in edits) or "no edit"

"""What the message manager records and writes (chapter 04, ``notebooks/04_message_manager``):
compression records, the note that stands for removed messages, and message copies.

Where the note goes: the article puts it right after the system prompt, as a system message.
Chat Completions accepts a system message anywhere but leaves its meaning mid-conversation to
the model ("it is up to you to figure out how the AI is informed by that", OpenAI community
forum, "Multiple system messages?"), and many OpenAI-compatible servers (the chat templates of
open models) refuse a system message that is not first. So ``MessageManager`` folds the note
into the first system message by default: one leading system message, the note where the
article has it. ``note_role="user"`` makes it a user message after the task instead, for when a
model-written summary should not speak with the system prompt's authority.
"""
from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import AgentError, ConfigError
from ..tokens import count_message_tokens, encoding_for

__all__ = ["CompressionRecord", "copy_message", "note_text", "NOTE_RE", "SUMMARY_PROMPT",
           "summary_request", "truncate_message", "summarize", "split_note", "overflow_error"]

# Matches the notes written by note_text (used by restore() to recognise one).
NOTE_RE = re.compile(r"^\[(?:Summary of the )?(\d+) earlier messages (?:were )?removed to fit "
                     r"the context window")

# A note folded into a system message whose prompt part is not the current one.
_FOLDED_NOTE_RE = re.compile("(?m)" + NOTE_RE.pattern)

SUMMARY_PROMPT = (
    "You compress the history of an AI agent's conversation so it fits its context window. "
    "Summarise the messages you are given in at most {words} words: the facts learned, tool "
    "results that matter, decisions made, and what is still open. Invent nothing.")


def note_text(removed: int, summary: str | None) -> str:
    """The note standing for ``removed`` messages (with the summary, when there is one)."""
    if summary:
        return (f"[Summary of the {removed} earlier messages removed to fit the context "
                f"window]\n{summary}")
    return (f"[{removed} earlier messages were removed to fit the context window; the task and "
            "the most recent messages are kept.]")


@dataclass
class CompressionRecord:
    """One compression (or one truncation of an oversized message).

    Attributes:
        when: wall-clock time (``time.time()``) of the compression.
        tokens_before / tokens_after: prompt tokens (``count_tokens()``) around it.
        messages_removed: messages dropped from the history.
        strategy: what was actually done: ``sliding_window``, ``summarize`` or ``truncate``.
        note: the note or summary now standing for the removed messages, or what was truncated.
        fallback: why ``summarize`` fell back to the sliding window (the exception), else None.
        truncated: messages shortened with a truncation marker.
        over_budget: True when even this could not bring the history under the target
            (``MessageManager.over_budget`` says whether it still fits ``max_tokens``).
    """

    when: float
    tokens_before: int
    tokens_after: int
    messages_removed: int
    strategy: str
    note: str = ""
    fallback: str | None = None
    truncated: int = 0
    over_budget: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def copy_message(msg: Any) -> dict:
    """A private copy of an incoming message: nested lists/dicts (``tool_calls``) are copied too,
    so a caller mutating its own dict later cannot change what we counted."""
    if not isinstance(msg, dict):
        raise ConfigError("invalid_message", "a message must be a dict like {'role': 'user', "
                          f"'content': '...'}}, got {type(msg).__name__}")
    if "role" not in msg:
        raise ConfigError("invalid_message", f"a message needs a 'role': {msg!r:.80}")
    return {k: (copy.deepcopy(v) if isinstance(v, (dict, list)) else v) for k, v in msg.items()}


def truncate_message(msg: dict, tokens: int, limit: int, model: str) -> dict:
    """``msg`` with its text content cut to cost about ``limit`` tokens, with a marker."""
    enc = encoding_for(model)
    ids = enc.encode(msg["content"], disallowed_special=())
    keep = max(0, len(ids) - (tokens - limit) - 24)  # 24: room for the marker itself
    marker = (f"\n[... truncated by MessageManager: {len(ids) - keep} of {len(ids)} tokens "
              "removed to fit the context window ...]")
    return {**msg, "content": enc.decode(ids[:keep]) + marker}


def summary_request(removed: list[dict], previous: str | None, words: int) -> list[dict]:
    """The messages asking a model to summarise ``removed`` (folding in the previous summary)."""
    lines = [f"Earlier summary: {previous}"] if previous else []
    for m in removed:
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        calls = ", ".join(f"{c.get('function', {}).get('name')}"
                          f"({c.get('function', {}).get('arguments', '')})"
                          for c in m.get("tool_calls") or [])
        lines.append(f"{m.get('role')}: {text[:2000]}" + (f" [calls: {calls[:500]}]"
                                                         if calls else ""))
    return [{"role": "system", "content": SUMMARY_PROMPT.format(words=words)},
            {"role": "user", "content": "\n".join(lines)}]


def summarize(llm: Any, request: list[dict], max_tokens: int, model: str) -> str:
    """The model's summary for ``request``, cut to ``max_tokens``; raises if it is empty."""
    summary = (getattr(llm.chat(request), "content", None) or "").strip()
    if not summary:
        raise ValueError("the model returned an empty summary")
    n = count_message_tokens({"role": "user", "content": summary}, model)
    if n > max_tokens:
        summary = truncate_message({"role": "user", "content": summary}, n, max_tokens,
                                   model)["content"]
    return summary


def split_note(msgs: list[dict], system_prompt: str) -> tuple[str | None, list[dict]]:
    """``(note text or None, the messages without system prompt and note)`` of a history saved
    from ``get_messages()``: the note folded into the system message, or one after the task
    (the layout of ``note_role="user"`` and of older checkpoints). A leading system message
    with another prompt than ``system_prompt`` is dropped too (the current prompt replaces it),
    unless ``system_prompt`` is empty."""
    note = None
    if msgs and msgs[0].get("role") == "system":
        content = str(msgs[0].get("content") or "")
        rest = content[len(system_prompt):].lstrip("\n")
        if content.startswith(system_prompt) and (rest == "" or NOTE_RE.match(rest)):
            note, msgs = (rest or None), msgs[1:]
        elif system_prompt:  # a changed system prompt replaces the saved one (keeping its note)
            folded = _FOLDED_NOTE_RE.search(content)
            note, msgs = (content[folded.start():] if folded else None), msgs[1:]
    pos = 1 if msgs and msgs[0].get("role") == "user" else 0
    if note is None and len(msgs) > pos and msgs[pos].get("role") in ("system", "user") \
            and NOTE_RE.match(str(msgs[pos].get("content"))):
        note, msgs = msgs[pos]["content"], msgs[:pos] + msgs[pos + 1:]
    return note, msgs


def overflow_error(tokens: int, max_tokens: int, tools: int, system: int,
                   largest: int) -> AgentError:
    """The ``context_overflow`` error, saying where the tokens go."""
    return AgentError("context_overflow", f"the request needs {tokens} tokens but the budget is "
                      f"{max_tokens}: tool schemas take {tools}, the system prompt {system}, the "
                      f"largest remaining message {largest}, and nothing more can be removed. "
                      "Offer fewer tools, shorten the system prompt, or use a model with a "
                      "larger context window.",
                      details={"tokens": tokens, "max_tokens": max_tokens, "tools_tokens": tools,
                               "system_tokens": system, "largest_message_tokens": largest})

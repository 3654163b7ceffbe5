"""Pair-safe removal: the history walked in groups (chapter 04, ``notebooks/04_message_manager``).

A group is one message, except that an assistant message with ``tool_calls`` and all the
``tool`` results after it form one group: the API answers 400 to a tool result whose call is
gone, and to a call without all its results. ``drop_groups`` removes the oldest whole groups
(never the pinned task) until enough tokens are freed; its work is proportional to what it
removes: one pointer walks forward, tokens come from the cache, and the list is cut once.
"""
from __future__ import annotations

from ..tokens import count_message_tokens
from .records import truncate_message

__all__ = ["drop_groups", "group_end", "protected_start", "starts_group_with_results", "squeeze"]


def starts_group_with_results(msg: dict) -> bool:
    return msg.get("role") == "tool" or (msg.get("role") == "assistant"
                                         and bool(msg.get("tool_calls")))


def group_end(msgs: list[dict], i: int) -> int:
    """Index just past the group starting at ``i`` (a call and all its results)."""
    j = i + 1
    if starts_group_with_results(msgs[i]):
        while j < len(msgs) and msgs[j].get("role") == "tool":
            j += 1
    return j


def protected_start(msgs: list[dict], keep: int) -> int:
    """Start of the group holding the ``keep``-th newest message; nothing from here on goes."""
    j = max(0, len(msgs) - keep)
    while j > 0 and msgs[j].get("role") == "tool":
        j -= 1  # a result belongs to the call before it: protect the whole group
    return j


def drop_groups(msgs: list[dict], toks: list[int], task: int | None, need: int,
                keep: int) -> tuple[list[dict], int, int | None]:
    """Remove (in place) the oldest whole groups before the last ``keep`` messages, never the
    task at index ``task``, until ``need`` tokens are freed.

    Returns ``(removed messages, tokens freed, the task's new index)``."""
    if need <= 0 or not msgs:
        return [], 0, task
    limit = protected_start(msgs, keep)
    i = freed = 0
    while i < limit and freed < need:
        if i == task:
            i += 1
            continue
        j = group_end(msgs, i)
        freed += sum(toks[i:j])
        i = j
    if i == 0 or (i == 1 and task == 0):
        return [], 0, task
    if task is not None and task < i:  # keep the task, cut around it
        removed = msgs[:task] + msgs[task + 1:i]
        del msgs[task + 1:i], toks[task + 1:i]
        del msgs[:task], toks[:task]
        return removed, freed, 0
    removed = msgs[:i]
    del msgs[:i], toks[:i]
    return removed, freed, (None if task is None else task - i)


def squeeze(msgs: list[dict], toks: list[int], over: int, model: str) -> tuple[int, int]:
    """Truncate (in place) the largest text messages until ``over`` tokens are freed.

    Tool-call arguments and list content are never cut (a cut would corrupt them), so this
    may free less. Returns ``(messages truncated, tokens freed)``."""
    count = freed = 0
    for i in sorted(range(len(msgs)), key=toks.__getitem__, reverse=True):
        m, n = msgs[i], toks[i]
        if over - freed <= 0 or n <= 96:
            break
        if not isinstance(m.get("content"), str):
            continue
        m = truncate_message(m, n, max(64, n - (over - freed)), model)
        new = count_message_tokens(m, model)
        msgs[i], toks[i] = m, new
        freed += n - new
        count += 1
    return count, freed

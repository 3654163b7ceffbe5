"""Safe points: where a conversation can be saved and sent to the API again (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``. The rule is the one the real API enforces: an
assistant message with ``tool_calls`` is followed by one ``tool`` message per call id, and a
``tool`` message only answers such a call. A history that keeps the rule is at a safe point;
``CheckpointManager.save`` refuses any other, and a durable run cuts an unfinished tool batch
off before its last checkpoint.

``conversation_problem`` is the stricter check ``CheckpointManager.load`` applies to what it
returns: every message a dict with a known role, contents of the right type, tool calls with
an id and a function name, and the pairing rule above.
"""
from __future__ import annotations

__all__ = ["unsafe_index", "is_safe_point", "pending_tool_calls", "conversation_problem"]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


def _tool_call_ids(msg: dict) -> list[str]:
    return [tc["id"] if isinstance(tc, dict) else tc.id for tc in msg.get("tool_calls") or []]


def unsafe_index(messages: list[dict]) -> tuple[int, list[str]] | None:
    """Index of the first message that breaks the pairing rule, with the missing call ids.

    The rule (what the real API enforces): an assistant message with ``tool_calls`` is followed
    by one ``tool`` message per call id, and a ``tool`` message only answers such a call.
    Returns ``None`` when the history is at a safe point.
    """
    i, n = 0, len(messages)
    while i < n:
        msg = messages[i]
        if msg.get("role") == "tool":  # a result with no call right before it
            return i, [msg.get("tool_call_id", "?")]
        ids = _tool_call_ids(msg) if msg.get("role") == "assistant" else []
        j = i + 1
        answered = set()
        while j < n and messages[j].get("role") == "tool":
            answered.add(messages[j].get("tool_call_id"))
            j += 1
        if ids:
            missing = [c for c in ids if c not in answered]
            if missing or answered - set(ids):
                return i, missing or sorted(answered - set(ids))
            i = j
        else:
            i += 1
    return None


def is_safe_point(messages: list[dict]) -> bool:
    """True when every assistant ``tool_calls`` message has all its results (resumable)."""
    return unsafe_index(messages) is None


def pending_tool_calls(messages: list[dict]) -> list[dict]:
    """The calls of the last assistant ``tool_calls`` message that have no result yet."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            done = {m.get("tool_call_id") for m in messages[i + 1:] if m.get("role") == "tool"}
            return [tc for tc in msg["tool_calls"]
                    if (tc["id"] if isinstance(tc, dict) else tc.id) not in done]
    return []


def _message_problem(i: int, msg: object) -> str | None:
    if not isinstance(msg, dict):
        return f"messages[{i}] is a {type(msg).__name__}, not a message object"
    role = msg.get("role")
    if role not in ROLES:
        return f"messages[{i}] has role {role!r} (one of {', '.join(sorted(ROLES))} expected)"
    content = msg.get("content")
    if content is not None and not isinstance(content, (str, list)):
        return f"messages[{i}] content is a {type(content).__name__} (text, parts or null)"
    if role == "tool" and not isinstance(msg.get("tool_call_id"), str):
        return f"messages[{i}] is a tool result without a tool_call_id"
    calls = msg.get("tool_calls")
    if calls is not None:
        if role != "assistant" or not isinstance(calls, list):
            return f"messages[{i}] has tool_calls but is not an assistant message with a list"
        for tc in calls:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if not (isinstance(tc, dict) and isinstance(tc.get("id"), str) and isinstance(fn, dict)
                    and isinstance(fn.get("name"), str)
                    and isinstance(fn.get("arguments", ""), str)):
                return f"messages[{i}] has a tool call without an id, a function name or text arguments"
    return None


def conversation_problem(messages: object) -> str | None:
    """Why ``messages`` is not a conversation the API would accept, or None when it is."""
    if not isinstance(messages, list):
        return f"messages is a {type(messages).__name__}, not a list"
    for i, msg in enumerate(messages):
        problem = _message_problem(i, msg)
        if problem:
            return problem
    bad = unsafe_index(messages)
    if bad is not None:
        return (f"messages[{bad[0]}] breaks the tool-call pairing (unanswered or orphaned call "
                f"ids: {', '.join(map(str, bad[1]))})")
    return None

"""Checks for exercise 04, pair-safe trimming (``notebooks/exercises/04_pair_safe_trimming.ipynb``).

The student writes ``trim_history(messages, max_tokens)``: ``messages`` starts with the system
prompt and the task (the first user message). Return a new list that keeps both first, then
the longest tail of the remaining messages that fits ``max_tokens`` (measured with
``agentlab.tokens.count_messages_tokens``) and starts on a group boundary: an assistant message
with ``tool_calls`` and all its ``tool`` results are kept or dropped together.
"""
from __future__ import annotations

import copy
import random
from typing import Callable

from ..tokens import count_message_tokens, count_messages_tokens
from .cases import Case, run_cases

__all__ = ["check_trim", "reference_trim", "summarize_roles"]


def reference_trim(messages: list[dict], max_tokens: int) -> list[dict]:
    """The reference answer: drop the fewest oldest whole groups after the task."""
    head, rest = messages[:2], messages[2:]
    budget = max_tokens - count_messages_tokens(head)
    starts = [i for i, m in enumerate(rest) if m["role"] != "tool"] + [len(rest)]
    suffix = [0] * (len(rest) + 1)
    for i in range(len(rest) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + count_message_tokens(rest[i])
    for i in starts:
        if suffix[i] <= budget:
            return head + rest[i:]
    return head  # unreachable: the empty tail always fits when head does


def summarize_roles(messages: list[dict]) -> list[str]:
    """A compact view of a history: ``['system', 'user', 'assistant->c1,c2', 'tool:c1', ...]``."""
    out = []
    for m in messages:
        if m.get("tool_calls"):
            out.append("assistant->" + ",".join(c["id"] for c in m["tool_calls"]))
        elif m.get("role") == "tool":
            out.append(f"tool:{m.get('tool_call_id')}")
        else:
            out.append(str(m.get("role")))
    return out


def _history(turns: int, seed: int, max_parallel: int = 3) -> list[dict]:
    from ..messages import synthetic_history  # lazy: heavy
    return ([{"role": "system", "content": "You are a researcher."}]
            + synthetic_history(turns, seed=seed, max_parallel=max_parallel, result_words=(10, 80)))


def _strict(messages: list[dict]) -> str:
    from ..sim import SimulatorHTTPError, check_request  # lazy: heavy
    try:
        check_request({"model": "gpt-4o", "messages": messages})
    except SimulatorHTTPError as exc:
        return f"400: {exc.message}"
    return "accepted"


def check_trim(fn: Callable[[list[dict], int], list[dict]]) -> str:
    """Check ``fn(messages, max_tokens) -> list[dict]`` against the pair-safe rules."""
    small = _history(3, seed=1)
    big = _history(30, seed=2)
    par = _history(30, seed=3, max_parallel=4)
    full = count_messages_tokens(big)
    # a budget that would cut right after an assistant tool_calls message if trimmed per message
    cut = next(b for b in range(full // 3, full) if
               summarize_roles(big[:2] + big[len(big) - len(reference_trim(big, b)) + 2:]) !=
               summarize_roles(big[:2] + _per_message(big, b)))
    untouched = copy.deepcopy(big)
    rng = random.Random(4)
    randoms = [(_history(rng.randint(5, 40), seed=s, max_parallel=4), None) for s in range(10)]
    randoms = [(h, rng.randint(count_messages_tokens(h[:2]) + 50, count_messages_tokens(h)))
               for h, _ in randoms]

    def view(history, budget):
        return summarize_roles(fn(copy.deepcopy(history), budget))

    return run_cases("pair-safe trimming", [
        Case("a history that fits is returned unchanged", lambda: view(small, 10_000),
             summarize_roles(small), hint="only drop messages when the total is over max_tokens."),
        Case("system prompt and task stay first", lambda: view(big, full // 3)[:2],
             ["system", "user"], hint="keep messages[0] and messages[1], then add the tail."),
        Case("the result fits max_tokens", lambda: count_messages_tokens(fn(copy.deepcopy(big), full // 2))
             <= full // 2, True, hint="measure with count_messages_tokens(result)."),
        Case("a call and its results leave together (strict simulator)",
             lambda: _strict(fn(copy.deepcopy(big), cut)), "accepted",
             hint="the kept tail must not start with a 'tool' message: move the cut to the "
                  "next message that is not a tool result."),
        Case("parallel calls (up to 4 results per call)",
             lambda: [_strict(fn(copy.deepcopy(par), b)) for b in (900, 1500, 2500)],
             ["accepted"] * 3, hint="all the tool results after one assistant message belong to it."),
        Case("keeps as much as possible (drops only the oldest groups needed)",
             lambda: view(big, cut), summarize_roles(reference_trim(big, cut)),
             hint="walk from the newest message backwards, or drop from the front one group at "
                  "a time and stop as soon as it fits."),
        Case("the input list is not changed", lambda: (fn(big, full // 3), big)[1] == untouched,
             True, hint="build a new list (head + tail) instead of deleting from messages."),
        Case("10 random histories and budgets", lambda: [view(h, b) for h, b in randoms],
             [summarize_roles(reference_trim(h, b)) for h, b in randoms],
             hint="compare your answer with the rules above on one failing history."),
    ])


def _per_message(messages: list[dict], max_tokens: int) -> list[dict]:
    """Trimming one message at a time (the pitfall): may start the tail on a tool result."""
    head, rest = messages[:2], list(messages[2:])
    while rest and count_messages_tokens(head + rest) > max_tokens:
        rest.pop(0)
    return rest

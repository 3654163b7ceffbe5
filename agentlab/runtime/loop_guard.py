"""Loop detection for the runtime: stop a model that keeps making the same tool calls.

Taught in ``notebooks/06_runtime_loop.ipynb`` (section 4 of the article) and its exercise.

The article keeps a sliding window of call signatures and counts them, so that a model
alternating between two tools (A -> B -> A -> B) is caught as well as one repeating A -> A -> A.
With its own defaults (window 4, threshold 3) the count alone never catches alternation: four
turns of A B A B hold each signature twice. ``LoopDetector`` therefore checks two things over
the window of the last ``window`` turns:

1. **repetition** (frequency count, as in the article): one turn signature appears
   ``threshold`` times;
2. **cycling**: the last ``p`` turns exactly repeat the ``p`` turns before them, for a cycle of
   ``2 <= p <= window // 2`` (A B A B with window 4; A B C A B C needs window 6).

A *turn signature* is the sorted list of the turn's call signatures (name + arguments as
canonical JSON), so the order of parallel calls does not matter: ``[read(a), read(b)]`` and
``[read(b), read(a)]`` are the same turn.
"""
from __future__ import annotations

import json
from collections import Counter, deque
from typing import Any, Iterable

from ..errors import ConfigError

__all__ = ["call_signature", "turn_signature", "LoopDetector"]


def call_signature(name: str, arguments: Any) -> str:
    """``name`` + arguments as canonical JSON (sorted keys, no spaces): equal calls, equal text."""
    return name + json.dumps(arguments, sort_keys=True, separators=(",", ":"),
                             ensure_ascii=False, default=str)


def turn_signature(calls: Iterable[Any]) -> str:
    """One signature for a whole turn, independent of the order of its (parallel) calls.

    ``calls`` are ``ToolCall``-like objects (``.name``, ``.arguments``; a call whose arguments
    did not parse is keyed by its raw text: the same malformed call repeated is a loop like any
    other, ~21k tokens until ``max_turns`` otherwise) or ``(name, arguments)`` pairs.
    """
    sigs = []
    for c in calls:
        if isinstance(c, tuple):
            name, args = c
        else:
            name = c.name
            # garbled arguments have no parsed value: compare their text (a model retrying a
            # glitch with other text is no loop; one repeating the same bad text is)
            args = c.arguments if not getattr(c, "parse_error", None) else \
                {"<unparsed>": getattr(c, "raw_arguments", "") or c.id}
        sigs.append(call_signature(name, args))
    return "\n".join(sorted(sigs))


class LoopDetector:
    """Sliding window over turn signatures: catches repetition and cycles (A B A B).

    Args:
        window: number of recent turns looked at.
        threshold: a turn signature seen this many times in the window is a loop.
    """

    def __init__(self, window: int = 4, threshold: int = 3) -> None:
        if window < 2 or threshold < 2:
            raise ConfigError("invalid_config", "loop detection needs window >= 2 and "
                              f"threshold >= 2, got window={window!r}, threshold={threshold!r}")
        self.window = window
        self.threshold = threshold
        self.history: deque[str] = deque(maxlen=window)
        self._names: dict[str, str] = {}  # signature -> "read_url+read_url", for messages

    def reset(self) -> None:
        """Forget the turns seen so far (a new run starts)."""
        self.history.clear()
        self._names.clear()

    def observe(self, calls: Iterable[Any]) -> str | None:
        """Record one turn's calls; return why it is a loop, or None."""
        calls = list(calls)
        sig = turn_signature(calls)
        if sig not in self._names:
            self._names[sig] = "+".join(sorted(c[0] if isinstance(c, tuple) else c.name
                                               for c in calls))
        self.history.append(sig)
        return self.check()

    def check(self) -> str | None:
        """Is the window a loop? Returns a short reason (for the error message) or None."""
        h = list(self.history)
        sig, count = Counter(h).most_common(1)[0] if h else ("", 0)
        if count >= self.threshold:
            name = self._names.get(sig, "?")
            return f"the same tool call(s) ({name}) {count} times in the last {len(h)} turns"
        for p in range(2, len(h) // 2 + 1):
            if h[-p:] == h[-2 * p:-p] and len(set(h[-p:])) > 1:
                return f"a cycle of {p} different turns repeated (e.g. A->B->A->B)"
        return None

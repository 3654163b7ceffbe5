"""When ``MessageManager`` counts tokens: lazily, from a free upper bound (notebook 04).

Every token of a byte-level BPE stands for at least one UTF-8 byte, so a message's byte count
(``agentlab.tokens.message_tokens_bound``) bounds its tokens from above at no cost. A message
arrives with that bound only; the manager counts exactly -- building the tokenizer, 0.5 s and
75 MB for o200k_base -- when the bound of the whole request passes the compression threshold,
when a message could be too large on its own, or when someone asks (``count_tokens()``).

Functions over one manager (``mm``), called under its lock. Invariant: the messages not counted
yet are the newest ``mm._uncounted`` ones (``None`` in ``mm._tokens``), and
``mm._pending_bound`` is the sum of their bounds; ``count_pending`` counts them all at once.
"""
from __future__ import annotations

import time

from ..tokens import count_message_tokens, message_tokens_bound
from .records import CompressionRecord, copy_message, truncate_message

__all__ = ["add_message", "count_pending"]


def count_pending(mm) -> None:
    """Count the messages not counted yet; afterwards every count in ``mm._tokens`` is exact."""
    if mm._uncounted:
        for i in range(len(mm._messages) - mm._uncounted, len(mm._messages)):
            n = mm._tokens[i] = count_message_tokens(mm._messages[i], mm.model)
            mm._total += n
        mm._uncounted, mm._pending_bound = 0, 0


def add_message(mm, msg: dict) -> None:
    """Append a copy of ``msg`` with its bound; one that could exceed ``max_message_tokens`` is
    counted now (with everything before it) and truncated with a visible marker if it does."""
    m = copy_message(msg)
    bound, n = message_tokens_bound(m), None
    if bound > mm.max_message_tokens:
        count_pending(mm)  # keeps the uncounted ones the newest
        n = count_message_tokens(m, mm.model)
        if n > mm.max_message_tokens and isinstance(m.get("content"), str):
            before = mm.count_tokens()
            m = truncate_message(m, n, mm.max_message_tokens, mm.model)
            n_new = count_message_tokens(m, mm.model)
            mm.compressions.append(CompressionRecord(
                when=time.time(), tokens_before=before + n, tokens_after=before + n_new,
                messages_removed=0, strategy="truncate", truncated=1,
                note=f"a {m['role']} message of {n} tokens was truncated to {n_new}"))
            n = n_new
    if mm._task_index is None and m.get("role") == "user":
        mm._task_index = len(mm._messages)
    mm._messages.append(m)
    mm._tokens.append(n)
    if n is None:
        mm._uncounted += 1
        mm._pending_bound += bound
    else:
        mm._total += n

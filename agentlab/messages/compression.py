"""How ``MessageManager`` compresses its history: whole groups from the front (notebook 04).

The steps of a compression, as functions over one ``MessageManager`` (``mm``): they work on its
history (``_messages`` with their cached counts ``_tokens`` and running ``_total``, the pinned
``_task_index``) and its note (``_removed``/``_summary``/``_note``/``_note_tokens``), under the
manager's lock, and read its settings (``threshold_tokens``, ``target_tokens``, ``strategy``,
``keep_recent``, ``llm``). The manager calls them; nothing else should:

1. drop whole groups from the front (``groups.drop_groups``: an assistant ``tool_calls``
   message leaves with all its results), protecting the last ``keep_recent`` messages;
2. if that is not enough, protect only the newest group;
3. if the protected messages alone are over the target, truncate the largest
   (``groups.squeeze``).

What was removed is replaced by a note (or, with ``strategy="summarize"``, a summary written by
the manager's ``llm``; a failed summary falls back to the note, and the record says why). Each
compression is recorded as a ``CompressionRecord`` in ``.compressions``.
"""
from __future__ import annotations

import logging
import time

from ..tokens import count_message_tokens
from .groups import drop_groups, squeeze
from .records import CompressionRecord, note_text, summarize, summary_request

__all__ = ["compress", "maybe_compress", "set_note", "note_position"]

logger = logging.getLogger(__name__)


def note_position(mm) -> int:
    """Where the note goes in ``mm._messages``: after the pinned task when the task is at the
    front, else at the very start of the history."""
    return 1 if mm._task_index == 0 else 0


def maybe_compress(mm) -> None:
    """After messages arrive: compress if over the threshold, then report (or raise) an overflow.

    The cheap bound decides first (``mm.upper_bound()``): far under the threshold, nothing is
    counted, so the tokenizer is built only when the budget could matter."""
    if mm.upper_bound() <= mm.threshold_tokens:
        mm._over = False
        return
    if mm.count_tokens() > mm.threshold_tokens:
        compress(mm)
    over = mm.over_budget
    if over and not mm._over:
        logger.warning("history over budget: %d > %d tokens and nothing more can be removed",
                       mm.count_tokens(), mm.max_tokens)
    mm._over = over
    if over and mm.on_overflow == "raise":
        mm.check_budget()


def compress(mm) -> CompressionRecord | None:
    """Compress ``mm`` now (the steps above); the record, or None if nothing changed."""
    with mm._lock:
        before = mm.count_tokens()  # counts every message not counted yet
        target = mm.target_tokens
        summarizing = mm.strategy == "summarize"
        # Room for the summary that will replace the removed messages.
        reserve = max(0, (mm.summary_max_tokens + 20 if summarizing else 40) - mm._note_tokens)
        # 1. Drop whole groups from the front, protecting the last keep_recent messages;
        #    2. if that is not enough, protect only the newest group.
        removed = _drop_groups(mm, before + reserve - target, mm.keep_recent)
        if mm.count_tokens() + reserve > target:
            removed += _drop_groups(mm, mm.count_tokens() + reserve - target, 1)
        fallback = None
        if removed:
            mm._removed += len(removed)
            if summarizing:
                try:
                    mm._summary = summarize(mm.llm, summary_request(removed, mm._summary, max(
                        20, mm.summary_max_tokens * 2 // 3)), mm.summary_max_tokens, mm.model)
                except Exception as exc:  # noqa: BLE001 - any failure falls back, recorded
                    fallback = f"{type(exc).__name__}: {exc}"
                    logger.warning("summary failed, falling back to sliding window: %s", fallback)
            set_note(mm)
        # 3. Still over: the remaining messages are too large; truncate the largest.
        count, freed = squeeze(mm._messages, mm._tokens, mm.count_tokens() - target, mm.model)
        mm._total -= freed
        if not removed and not count:
            return None
        after = mm.count_tokens()
        record = CompressionRecord(
            when=time.time(), tokens_before=before, tokens_after=after,
            messages_removed=len(removed),
            strategy="summarize" if summarizing and fallback is None and removed else
                     ("sliding_window" if removed else "truncate"),
            note=mm._note or "", fallback=fallback,
            truncated=count, over_budget=after > target)
        mm.compressions.append(record)
        logger.info("compressed: %d -> %d tokens, %d messages removed",
                    before, after, len(removed))
        return record


def _drop_groups(mm, need: int, keep: int) -> list[dict]:
    removed, freed, mm._task_index = drop_groups(mm._messages, mm._tokens, mm._task_index,
                                                 need, keep)
    mm._total -= freed
    return removed


def set_note(mm) -> None:
    """Rewrite the note from ``mm._removed`` and ``mm._summary``, and count what it adds."""
    mm._note = note_text(mm._removed, mm._summary)
    if mm.note_role == "user":
        mm._note_tokens = count_message_tokens({"role": "user", "content": mm._note}, mm.model)
    else:  # folded into the system message: count the difference it makes there
        text = "\n\n".join(t for t in (mm._system_prompt, mm._note) if t)
        mm._note_tokens = count_message_tokens({"role": "system", "content": text},
                                               mm.model) - mm._system_tokens

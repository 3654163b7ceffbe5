"""How ``MessageManager`` compresses its history: whole groups from the front (notebook 04).

The steps of a compression, as methods that ``MessageManager`` inherits (this mixin works on
the manager's own history: ``_messages`` with their cached counts ``_tokens`` and running
``_total``, the pinned ``_task_index``, the note's ``_removed``/``_summary``/``_note``):

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

__all__ = ["Compression"]

logger = logging.getLogger(__name__)


class Compression:
    """The compression steps of ``MessageManager`` (see the module docstring)."""

    def _note_position(self) -> int:
        # The note follows the pinned task when the task is at the front, else opens the history.
        return 1 if self._task_index == 0 else 0

    def _maybe_compress(self) -> None:
        if self.count_tokens() > self.threshold_tokens:
            self.compress()
        over = self.over_budget
        if over and not self._over:
            logger.warning("history over budget: %d > %d tokens and nothing more can be removed",
                           self.count_tokens(), self.max_tokens)
        self._over = over
        if over and self.on_overflow == "raise":
            self.check_budget()

    def compress(self) -> CompressionRecord | None:
        """Compress now (normally automatic). Returns the record, or None if nothing changed."""
        with self._lock:
            before = self.count_tokens()
            target = self.target_tokens
            summarize = self.strategy == "summarize"
            # Room for the summary that will replace the removed messages.
            reserve = max(0, (self.summary_max_tokens + 20 if summarize else 40) - self._note_tokens)
            # 1. Drop whole groups from the front, protecting the last keep_recent messages;
            #    2. if that is not enough, protect only the newest group.
            removed = self._drop_groups(before + reserve - target, self.keep_recent)
            if self.count_tokens() + reserve > target:
                removed += self._drop_groups(self.count_tokens() + reserve - target, 1)
            fallback = None
            if removed:
                self._removed += len(removed)
                if summarize:
                    try:
                        self._summary = self._summarize(removed)
                    except Exception as exc:  # noqa: BLE001 - any failure falls back, recorded
                        fallback = f"{type(exc).__name__}: {exc}"
                        logger.warning("summary failed, falling back to sliding window: %s", fallback)
                self._set_note()
            # 3. Still over: the remaining messages are too large; truncate the largest.
            truncated = self._squeeze(target)
            if not removed and not truncated:
                return None
            after = self.count_tokens()
            record = CompressionRecord(
                when=time.time(), tokens_before=before, tokens_after=after,
                messages_removed=len(removed),
                strategy="summarize" if summarize and fallback is None and removed else
                         ("sliding_window" if removed else "truncate"),
                note=self._note or "", fallback=fallback,
                truncated=truncated, over_budget=after > target)
            self.compressions.append(record)
            logger.info("compressed: %d -> %d tokens, %d messages removed",
                        before, after, len(removed))
            return record

    def _drop_groups(self, need: int, keep: int) -> list[dict]:
        removed, freed, self._task_index = drop_groups(self._messages, self._tokens,
                                                       self._task_index, need, keep)
        self._total -= freed
        return removed

    def _set_note(self) -> None:
        self._note = note_text(self._removed, self._summary)
        if self.note_role == "user":
            self._note_tokens = count_message_tokens({"role": "user", "content": self._note},
                                                     self.model)
        else:  # folded into the system message: count the difference it makes there
            text = "\n\n".join(t for t in (self._system_prompt, self._note) if t)
            self._note_tokens = count_message_tokens({"role": "system", "content": text},
                                                     self.model) - self._system_tokens

    def _summarize(self, removed: list[dict]) -> str:
        """Ask the LLM for a summary of the previous summary plus the removed messages."""
        return summarize(self.llm, summary_request(removed, self._summary, max(
            20, self.summary_max_tokens * 2 // 3)), self.summary_max_tokens, self.model)

    def _squeeze(self, target: int) -> int:
        """Truncate the largest text messages until the prompt fits ``target``; returns how many
        (rare: only when the protected messages alone exceed the budget)."""
        count, freed = squeeze(self._messages, self._tokens, self.count_tokens() - target,
                               self.model)
        self._total -= freed
        return count

"""Conversation history with a token budget and pair-safe compression (notebook 04).

``MessageManager`` holds the messages of one agent run and keeps them under a token budget.
Three things make it different from the article's version:

1. **Counts are cached.** Each message is counted once, when it arrives, and the total is a
   running sum, so appending costs the same at message 900 as at message 10 (the article
   re-encodes the whole history on every append: quadratic over a run).
2. **Compression walks whole groups from the front.** A group is one message, except that an
   assistant message with ``tool_calls`` and all its ``tool`` results form one group: the API
   answers 400 to a tool result whose call is gone, and to a call without its results. The walk
   stops as soon as enough tokens are freed, so its work is proportional to what it removes.
3. **What must survive, survives.** The system prompt stays first; the first user message (the
   task) is pinned; a short note says what was removed (or, with ``strategy="summarize"``, an
   LLM-written summary of it); a single message too large for the budget is truncated with a
   visible marker instead of flushing the whole conversation. Every compression is recorded in
   ``.compressions``.

Layout of what ``get_messages()`` returns::

    [system prompt]  [task]  [note or summary]  recent messages ...   (note only after a compression)
"""
from __future__ import annotations

import copy
import logging
import random
import re
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from .errors import ConfigError
from .models import DEFAULT_MODEL
from .tokens import (REPLY_PRIMING, count_message_tokens, count_messages_tokens, count_tools_tokens,
                     encoding_for)

__all__ = ["MessageManager", "CompressionRecord", "STRATEGIES", "synthetic_history"]

logger = logging.getLogger(__name__)

#: Compression strategies ``MessageManager`` understands.
STRATEGIES = ("sliding_window", "summarize")

# Matches the notes written by _set_note (used by restore() to recognise one).
_NOTE_RE = re.compile(r"^\[(?:Summary of the )?(\d+) earlier messages (?:were )?removed to fit the context window")

_SUMMARY_PROMPT = (
    "You compress the history of an AI agent's conversation so it fits its context window. "
    "Summarise the messages you are given in at most {words} words: the facts learned, tool "
    "results that matter, decisions made, and what is still open. Invent nothing.")


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
        over_budget: True when even this could not bring the history under the target.
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


def _copy_message(msg: Any) -> dict:
    """A private copy of an incoming message: nested lists/dicts (``tool_calls``) are copied too,
    so a caller mutating its own dict later cannot change what we counted."""
    if not isinstance(msg, dict):
        raise TypeError(f"a message must be a dict like {{'role': 'user', 'content': '...'}}, "
                        f"got {type(msg).__name__}")
    if "role" not in msg:
        raise ValueError(f"a message needs a 'role': {msg!r:.80}")
    return {k: (copy.deepcopy(v) if isinstance(v, (dict, list)) else v) for k, v in msg.items()}


def _starts_group_with_results(msg: dict) -> bool:
    return msg.get("role") == "tool" or (msg.get("role") == "assistant" and bool(msg.get("tool_calls")))


class MessageManager:
    """The message history of one run, kept under ``max_tokens * compression_threshold``.

    Args:
        system_prompt: sent first in every request ("" sends none).
        model: decides the tokenizer (``agentlab.tokens.encoding_for``).
        max_tokens: the context budget in prompt tokens.
        compression_threshold: compress when the prompt exceeds this fraction of ``max_tokens``.
        strategy: ``"sliding_window"`` (drop the oldest groups, leave a note) or ``"summarize"``
            (replace them with a summary written by ``llm``; on any failure, fall back to the
            sliding window and record why).
        llm: an ``agentlab.llm.LLMClient`` (needed for ``"summarize"``).
        keep_recent: the last ``keep_recent`` messages (rounded out to whole groups) are removed
            only if removing everything older is not enough.
        compress_to: after a compression the prompt is at most ``compress_to * max_tokens``
            (default ``0.8 * compression_threshold``; the gap keeps compressions, and summary
            calls, from happening on every append).
        max_message_tokens: a message larger than this is truncated on arrival, with a visible
            marker (default: half the post-compression budget).
        summary_max_tokens: the longest summary kept (longer ones are truncated).

    ``get_messages()`` returns fresh dicts each call (cheap shallow copies): replacing a key in
    them is safe, but do not mutate nested values such as ``tool_calls`` in place.
    Taught in ``notebooks/04_message_manager.ipynb``.
    """

    def __init__(self, system_prompt: str = "", model: str = DEFAULT_MODEL, max_tokens: int = 120000,
                 compression_threshold: float = 0.75, strategy: str = "sliding_window", *,
                 llm: Any = None, keep_recent: int = 6, compress_to: float | None = None,
                 max_message_tokens: int | None = None, summary_max_tokens: int = 400,
                 note_role: str = "system") -> None:
        if strategy not in STRATEGIES:
            raise ConfigError("invalid_config", f"unknown strategy {strategy!r}; use one of {STRATEGIES}")
        if strategy == "summarize" and llm is None:
            raise ConfigError("invalid_config", "strategy='summarize' needs llm=LLMClient(...) to write summaries")
        if max_tokens <= 0 or not 0 < compression_threshold <= 1:
            raise ConfigError("invalid_config", "need max_tokens > 0 and 0 < compression_threshold <= 1")
        self.model = model
        self.max_tokens = int(max_tokens)
        self.compression_threshold = compression_threshold
        self.strategy = strategy
        self.llm = llm
        self.keep_recent = max(1, int(keep_recent))  # the newest group is never dropped
        self.compress_to = min(compress_to if compress_to is not None
                               else 0.8 * compression_threshold, compression_threshold)
        self.max_message_tokens = (int(max_message_tokens) if max_message_tokens is not None
                                   else max(64, int(self.max_tokens * self.compress_to) // 2))
        self.summary_max_tokens = summary_max_tokens
        self.note_role = note_role
        self.compressions: list[CompressionRecord] = []
        self._lock = threading.RLock()
        self._system_prompt = ""
        self._system_tokens = 0
        self.system_prompt = system_prompt
        self.reset()

    # -- state -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the history, the task, the note and the compression records."""
        with self._lock:
            self._messages: list[dict] = []   # history after the system prompt, note excluded
            self._tokens: list[int] = []      # cached count of each message in _messages
            self._total = 0                   # sum(self._tokens), kept as a running total
            self._task_index: int | None = None  # index of the pinned first user message
            self._removed = 0                 # messages removed so far (for the note)
            self._summary: str | None = None  # latest summary text, if any
            self._note: dict | None = None
            self._note_tokens = 0
            self.compressions = []

    clear = reset

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str) -> None:
        with self._lock:
            self._system_prompt = text or ""
            self._system_tokens = (count_message_tokens({"role": "system", "content": self._system_prompt},
                                                        self.model) if self._system_prompt else 0)

    @property
    def threshold_tokens(self) -> int:
        """Compression starts when ``count_tokens()`` exceeds this."""
        return int(self.max_tokens * self.compression_threshold)

    @property
    def target_tokens(self) -> int:
        """A compression brings ``count_tokens()`` down to at most this (when it can)."""
        return int(self.max_tokens * self.compress_to)

    @property
    def task(self) -> dict | None:
        """The pinned task (first user message), or None before one arrives."""
        with self._lock:
            return None if self._task_index is None else dict(self._messages[self._task_index])

    # -- adding messages -----------------------------------------------------------------
    def append(self, msg: dict) -> None:
        """Add one message (copied), then compress if over the threshold. O(1) in history length."""
        with self._lock:
            self._add(msg)
            self._maybe_compress()

    def extend(self, msgs: Iterable[dict]) -> None:
        """Add several messages, then compress once (so tool results join their call first)."""
        with self._lock:
            for m in msgs:
                self._add(m)
            self._maybe_compress()

    def restore(self, messages: Iterable[dict]) -> None:
        """Replace the history with ``messages`` (e.g. from a checkpoint of ``get_messages()``).

        A leading system message equal to the system prompt is dropped (it is added back), and
        a compression note in its usual place becomes the note again (with its count and
        summary), so later compressions keep counting from it."""
        msgs = list(messages)
        with self._lock:
            self.reset()
            if msgs and msgs[0].get("role") == "system" and msgs[0].get("content") == self._system_prompt:
                msgs = msgs[1:]
            pos = 1 if msgs and msgs[0].get("role") == "user" else 0
            note = _NOTE_RE.match(str(msgs[pos].get("content"))) if len(msgs) > pos else None
            if note and msgs[pos].get("role") == self.note_role:
                self._removed = int(note.group(1))
                self._summary = msgs[pos]["content"].partition("\n")[2] or None
                msgs = msgs[:pos] + msgs[pos + 1:]
            for m in msgs:
                self._add(m)
            if self._removed:
                self._set_note()
            self._maybe_compress()

    def _add(self, msg: dict) -> None:
        m = _copy_message(msg)
        n = count_message_tokens(m, self.model)
        if n > self.max_message_tokens and isinstance(m.get("content"), str):
            before = self.count_tokens()
            m = self._truncate(m, n, self.max_message_tokens)
            n_new = count_message_tokens(m, self.model)
            self.compressions.append(CompressionRecord(
                when=time.time(), tokens_before=before + n, tokens_after=before + n_new,
                messages_removed=0, strategy="truncate", truncated=1,
                note=f"a {m['role']} message of {n} tokens was truncated to {n_new}"))
            n = n_new
        if self._task_index is None and m.get("role") == "user":
            self._task_index = len(self._messages)
        self._messages.append(m)
        self._tokens.append(n)
        self._total += n

    def _truncate(self, msg: dict, tokens: int, limit: int) -> dict:
        """Shorten ``msg['content']`` so the message costs about ``limit`` tokens, with a marker."""
        enc = encoding_for(self.model)
        ids = enc.encode(msg["content"], disallowed_special=())
        keep = max(0, len(ids) - (tokens - limit) - 24)  # 24: room for the marker itself
        marker = (f"\n[... truncated by MessageManager: {len(ids) - keep} of {len(ids)} tokens "
                  "removed to fit the context window ...]")
        return {**msg, "content": enc.decode(ids[:keep]) + marker}

    # -- reading -------------------------------------------------------------------------
    def get_messages(self) -> list[dict]:
        """The request history: system prompt first, then task, note, and the rest (copies)."""
        with self._lock:
            out: list[dict] = []
            if self._system_prompt:
                out.append({"role": "system", "content": self._system_prompt})
            pos = self._note_position()
            out.extend([dict(m) for m in self._messages[:pos]])
            if self._note is not None:
                out.append(dict(self._note))
            out.extend([dict(m) for m in self._messages[pos:]])
            return out

    def count_tokens(self, msgs: list[dict] | None = None, tools: list[dict] | None = None) -> int:
        """Prompt tokens of ``msgs``, or of the current history when ``msgs`` is None.

        The history's count is a cached sum (O(1)); ``count_tokens([])`` counts the empty
        list (3 priming tokens), not the history."""
        if msgs is not None:
            return count_messages_tokens(msgs, self.model, tools)
        with self._lock:
            return (self._system_tokens + self._note_tokens + self._total + REPLY_PRIMING
                    + count_tools_tokens(tools, self.model))

    def __len__(self) -> int:
        """Number of messages ``get_messages()`` returns (system prompt and note included)."""
        with self._lock:
            return len(self._messages) + bool(self._system_prompt) + (self._note is not None)

    def __repr__(self) -> str:
        return (f"MessageManager(messages={len(self)}, tokens={self.count_tokens()}, "
                f"max_tokens={self.max_tokens}, compressions={len(self.compressions)})")

    # -- compression ---------------------------------------------------------------------
    def _note_position(self) -> int:
        # The note follows the pinned task when the task is at the front, else opens the history.
        return 1 if self._task_index == 0 else 0

    def _maybe_compress(self) -> None:
        if self.count_tokens() > self.threshold_tokens:
            self.compress()

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
                note=self._note["content"] if self._note else "", fallback=fallback,
                truncated=truncated, over_budget=after > target)
            self.compressions.append(record)
            logger.info("compressed: %d -> %d tokens, %d messages removed",
                        before, after, len(removed))
            return record

    def _group_end(self, i: int) -> int:
        """Index just past the group starting at ``i`` (a call and all its results)."""
        msgs, j = self._messages, i + 1
        if _starts_group_with_results(msgs[i]):
            while j < len(msgs) and msgs[j].get("role") == "tool":
                j += 1
        return j

    def _protected_start(self, keep: int) -> int:
        """Start of the group holding the ``keep``-th newest message; nothing from here on goes."""
        j = max(0, len(self._messages) - keep)
        while j > 0 and self._messages[j].get("role") == "tool":
            j -= 1  # a result belongs to the call before it: protect the whole group
        return j

    def _drop_groups(self, need: int, keep: int) -> list[dict]:
        """Remove the oldest whole groups (never the task) until ``need`` tokens are freed.

        Work is proportional to the groups removed: one pointer walks forward, tokens come
        from the cache, and the list is cut once."""
        if need <= 0 or not self._messages:
            return []
        limit, task = self._protected_start(keep), self._task_index
        i = freed = 0
        while i < limit and freed < need:
            if i == task:
                i += 1
                continue
            j = self._group_end(i)
            freed += sum(self._tokens[i:j])
            i = j
        if i == 0 or (i == 1 and task == 0):
            return []
        msgs, toks = self._messages, self._tokens
        if task is not None and task < i:  # keep the task, cut around it
            removed = msgs[:task] + msgs[task + 1:i]
            del msgs[task + 1:i], toks[task + 1:i]
            del msgs[:task], toks[:task]
            self._task_index = 0
        else:
            removed = msgs[:i]
            del msgs[:i], toks[:i]
            if task is not None:
                self._task_index = task - i
        self._total -= freed
        return removed

    def _set_note(self) -> None:
        if self._summary:
            text = (f"[Summary of the {self._removed} earlier messages removed to fit the "
                    f"context window]\n{self._summary}")
        else:
            text = (f"[{self._removed} earlier messages were removed to fit the context window. "
                    "The task is kept above; the most recent messages follow.]")
        self._note = {"role": self.note_role, "content": text}
        self._note_tokens = count_message_tokens(self._note, self.model)

    def _summarize(self, removed: list[dict]) -> str:
        """Ask the LLM for a summary of the previous summary plus the removed messages."""
        lines = [f"Earlier summary: {self._summary}"] if self._summary else []
        for m in removed:
            text = m.get("content") if isinstance(m.get("content"), str) else ""
            calls = ", ".join(f"{c.get('function', {}).get('name')}({c.get('function', {}).get('arguments', '')})"
                              for c in m.get("tool_calls") or [])
            lines.append(f"{m.get('role')}: {text[:2000]}" + (f" [calls: {calls[:500]}]" if calls else ""))
        reply = self.llm.chat([
            {"role": "system", "content": _SUMMARY_PROMPT.format(words=max(20, self.summary_max_tokens * 2 // 3))},
            {"role": "user", "content": "\n".join(lines)},
        ])
        summary = (getattr(reply, "content", None) or "").strip()
        if not summary:
            raise ValueError("the model returned an empty summary")
        n = count_message_tokens({"role": "user", "content": summary}, self.model)
        if n > self.summary_max_tokens:
            summary = self._truncate({"role": "user", "content": summary}, n, self.summary_max_tokens)["content"]
        return summary

    def _squeeze(self, target: int) -> int:
        """Truncate the largest text messages until the prompt fits ``target``; returns how many.

        Rare path (only when the protected messages alone exceed the budget)."""
        over, count = self.count_tokens() - target, 0
        if over <= 0:
            return 0
        for i in sorted(range(len(self._messages)), key=self._tokens.__getitem__, reverse=True):
            m, n = self._messages[i], self._tokens[i]
            if over <= 0 or n <= 96:
                break
            if not isinstance(m.get("content"), str):
                continue
            m = self._truncate(m, n, max(64, n - over))
            new = count_message_tokens(m, self.model)
            self._messages[i], self._tokens[i] = m, new
            self._total += new - n
            over -= n - new
            count += 1
        return count


_WORDS = ("agent tool result search page read write answer model context token budget message "
          "history window summary task step plan check data file query source note python "
          "async loop event thread timeout retry error state store").split()


def synthetic_history(turns: int, *, seed: int = 0, max_parallel: int = 3,
                      result_words: tuple[int, int] = (20, 300),
                      task: str = "Research asyncio and write a short report.") -> list[dict]:
    """A deterministic agent conversation for notebooks, tests and benchmarks (no system prompt).

    The task comes first; then each turn is either a tool turn (an assistant message with 1 to
    ``max_parallel`` parallel ``tool_calls`` and one ``tool`` result per call, each result
    ``result_words`` long) or, one time in four, an assistant text and a follow-up user message.
    """
    rng = random.Random(seed)
    words = lambda lo, hi: " ".join(rng.choices(_WORDS, k=rng.randint(lo, hi)))  # noqa: E731
    out: list[dict] = [{"role": "user", "content": task}]
    for t in range(turns):
        if rng.random() < 0.25:
            out.append({"role": "assistant", "content": words(10, 60)})
            out.append({"role": "user", "content": "Next: " + words(5, 20)})
            continue
        calls = [{"id": f"call_{t}_{j}", "type": "function",
                  "function": {"name": rng.choice(("web_search", "read_url", "write_file")),
                               "arguments": f'{{"query": "{words(1, 4)}"}}'}}
                 for j in range(rng.randint(1, max_parallel))]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out.extend({"role": "tool", "tool_call_id": c["id"], "content": words(*result_words)}
                   for c in calls)
    return out

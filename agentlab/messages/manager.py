"""Conversation history with a token budget and pair-safe compression (notebook 04).

``MessageManager`` holds the messages of one agent run and keeps them under a token budget.
Four things make it different from the article's version:

1. **Counts are cached, and made only when they can matter.** A message arrives with a free
   upper bound on its tokens (its UTF-8 bytes: ``agentlab.tokens.message_tokens_bound``); it
   is counted exactly, once, only when the bound of the whole request nears the threshold or
   someone asks (``count_tokens()``). A short chat never builds the tokenizer (0.5 s, 75 MB
   for o200k_base), and appending costs the same at message 900 as at message 10 (the
   article re-encodes the whole history on every append: quadratic over a run).
2. **Compression walks whole groups from the front.** A group is one message, except that an
   assistant message with ``tool_calls`` and all its ``tool`` results form one group: the API
   answers 400 to a tool result whose call is gone, and to a call without its results.
3. **What must survive, survives.** The system prompt stays first; the first user message (the
   task) is pinned; a note says what was removed (or, with ``strategy="summarize"``, an
   LLM-written summary of it); a single message too large for the budget is truncated with a
   visible marker. Every compression is recorded in ``.compressions``.
4. **The budget counts everything sent.** The tool schemas of the request (``tools=`` or
   ``set_tools``) are counted with the messages; the default budget is the model's context
   window minus its output limit (``agentlab.models``); when nothing more can be removed the
   manager says so (``over_budget``, ``check_budget()`` raising ``context_overflow``).

How a compression runs is in ``compression.py`` (functions over the manager, which calls them).

Where the note goes (see ``records.py`` for why): folded into the first system message by
default, or a user message after the task with ``note_role="user"``::

    [system prompt + note]  [task]  recent messages ...        (note_role="system", default)
    [system prompt]  [task]  [note]  recent messages ...       (note_role="user")

Overflow: ``append``/``extend`` never drop a message to report one. ``on_overflow="report"``
(default) sets ``over_budget`` and logs; ``check_budget()`` raises ``context_overflow`` before a
request. ``on_overflow="raise"`` makes ``append``/``extend`` raise it after adding the message.
"""
from __future__ import annotations

import threading
import warnings
from typing import Any, Iterable

from ..errors import ConfigError
from ..knobs import fraction, positive_int
from ..models import DEFAULT_MODEL, model_family, model_info
from ..tokens import (REPLY_PRIMING, count_message_tokens, count_messages_tokens,
                      count_tools_tokens, message_tokens_bound, tools_tokens_bound)
from .compression import compress, maybe_compress, note_position, set_note
from .counts import add_message, count_pending
from .records import NOTE_RE, CompressionRecord, overflow_error, split_note

__all__ = ["MessageManager", "STRATEGIES", "DEFAULT_MAX_TOKENS", "default_budget"]

#: Compression strategies ``MessageManager`` understands.
STRATEGIES = ("sliding_window", "summarize")
#: The budget for a model neither the table nor its family rule knows: an 8,192-token window
#: (the original gpt-4's, the smallest a chat model commonly serves) less 1,024 for the reply.
#: Conservative on purpose: too small compresses early; too large (the article's 120,000) ends
#: in the provider's 400 for an 8k model.
DEFAULT_MAX_TOKENS = 8192 - 1024


def default_budget(model: str) -> int:
    """Prompt tokens a request to ``model`` may use: its context window minus its output limit
    (room for the reply), from ``agentlab.models`` -- the model's own entry, else its family's
    (``agentlab.models.model_family``: ``gpt-4o-2099-01-01`` is a ``gpt-4o``). For any other
    model ``DEFAULT_MAX_TOKENS``, with a warning saying how to give the real window."""
    family = model_family(model)
    info = model_info(family) if family is not None else None
    if info is None:
        warnings.warn(f"model {model!r} is not in agentlab.models and extends no model there: "
                      f"its budget is a conservative {DEFAULT_MAX_TOKENS:,} tokens; pass "
                      "max_tokens=..., or call agentlab.models.register_model(name, "
                      "context_window=..., max_output_tokens=...)", UserWarning, stacklevel=3)
        return DEFAULT_MAX_TOKENS
    return max(1, info.context_window - info.max_output_tokens)


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
        note_role: ``"system"`` (the note joins the system message) or ``"user"``.
        tools: the tool schemas sent with each request, counted in the budget (``set_tools``).
        on_overflow: ``"report"`` (``over_budget``, ``check_budget()``) or ``"raise"``.

    ``max_tokens=None`` (default) takes ``default_budget(model)``: the model's context window
    minus its output limit (111,616 for gpt-4o), its family's for a dated or suffixed name,
    else a warned, conservative ``DEFAULT_MAX_TOKENS`` (7,168).

    ``get_messages()`` returns fresh dicts each call (cheap shallow copies): replacing a key in
    them is safe, but do not mutate nested values such as ``tool_calls`` in place.
    Taught in ``notebooks/04_message_manager.ipynb``.
    """

    def __init__(self, system_prompt: str = "", model: str = DEFAULT_MODEL,
                 max_tokens: int | None = None, compression_threshold: float = 0.75,
                 strategy: str = "sliding_window", *, llm: Any = None, keep_recent: int = 6,
                 compress_to: float | None = None, max_message_tokens: int | None = None,
                 summary_max_tokens: int = 400, note_role: str = "system",
                 tools: list[dict] | None = None, on_overflow: str = "report") -> None:
        if strategy not in STRATEGIES:
            raise ConfigError("invalid_config", f"unknown strategy {strategy!r}; use one of {STRATEGIES}")
        if strategy == "summarize" and llm is None:
            raise ConfigError("invalid_config", "strategy='summarize' needs llm=LLMClient(...) to write summaries")
        if note_role not in ("system", "user") or on_overflow not in ("report", "raise"):
            raise ConfigError("invalid_config", "need note_role 'system' or 'user' and "
                              f"on_overflow 'report' or 'raise', got {note_role!r}, {on_overflow!r}")
        self.model = model
        self.max_tokens = (default_budget(model) if max_tokens is None
                           else positive_int("max_tokens", max_tokens))
        self.compression_threshold = fraction("compression_threshold", compression_threshold)
        self.strategy = strategy
        self.llm = llm
        self.keep_recent = positive_int("keep_recent", keep_recent)  # the newest group stays
        self.compress_to = min(fraction("compress_to", compress_to) if compress_to is not None
                               else 0.8 * self.compression_threshold, self.compression_threshold)
        self.max_message_tokens = positive_int("max_message_tokens", max_message_tokens,
                                               allow_none=True) or \
            max(64, int(self.max_tokens * self.compress_to) // 2)
        self.summary_max_tokens = positive_int("summary_max_tokens", summary_max_tokens)
        self.note_role = note_role
        self.on_overflow = on_overflow
        self.compressions: list[CompressionRecord] = []
        self._lock = threading.RLock()
        self._system_prompt = ""
        self._system_exact: int | None = 0   # None until counted (``_system_bound`` till then)
        self._system_bound = 0
        self._tools: list[dict] = []
        self._tools_exact: int | None = 0    # None until counted (``_tools_bound`` till then)
        self._tools_bound = 0
        self.system_prompt = system_prompt
        self.reset()
        self.set_tools(tools)

    # -- state -------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget the history, the task, the note and the compression records."""
        with self._lock:
            self._messages: list[dict] = []   # history after the system prompt, note excluded
            # Invariant: the messages not counted yet are the newest ``_uncounted`` ones
            # (``_tokens`` holds None for them); ``_exact()`` counts them all at once.
            self._tokens: list[int | None] = []  # cached count of each message in _messages
            self._total = 0                   # sum of the counted ones, a running total
            self._uncounted = 0               # how many at the end are not counted yet
            self._pending_bound = 0           # the sum of their upper bounds
            self._task_index: int | None = None  # index of the pinned first user message
            self._removed = 0                 # messages removed so far (for the note)
            self._summary: str | None = None  # latest summary text, if any
            self._note: str | None = None     # the note's text, once something was removed
            self._note_tokens = 0
            self._over = False                # over max_tokens at the last check
            self.compressions = []

    clear = reset

    @property
    def system_prompt(self) -> str:
        return self._system_prompt

    @system_prompt.setter
    def system_prompt(self, text: str) -> None:
        with self._lock:
            self._system_prompt = text or ""
            msg = {"role": "system", "content": self._system_prompt}
            self._system_bound = message_tokens_bound(msg) if text else 0
            self._system_exact = None if text else 0

    @property
    def _system_tokens(self) -> int:
        """Tokens of the system prompt alone (counted on first use)."""
        if self._system_exact is None:
            self._system_exact = count_message_tokens(
                {"role": "system", "content": self._system_prompt}, self.model)
        return self._system_exact

    @property
    def _tools_tokens(self) -> int:
        if self._tools_exact is None:
            self._tools_exact = count_tools_tokens(self._tools, self.model)
        return self._tools_exact

    def _exact(self) -> None:
        """Count whatever is not counted yet (this is what builds the tokenizer)."""
        count_pending(self)

    def upper_bound(self) -> int:
        """A cheap upper bound on ``count_tokens()``: exact counts where made, UTF-8 bytes for
        the rest (``agentlab.tokens.message_tokens_bound``). Never builds the tokenizer."""
        with self._lock:
            system = self._system_bound if self._system_exact is None else self._system_exact
            tools = self._tools_bound if self._tools_exact is None else self._tools_exact
            return (system + self._note_tokens + self._total + self._pending_bound
                    + REPLY_PRIMING + tools)

    def set_tools(self, tools: Iterable[dict] | None) -> None:
        """The tool schemas sent with every request (``registry.get_all_schemas()``): they are
        counted in the budget (40 tools can take 2,000 tokens). The runtime calls this before
        the first request of every run. A history the schemas push over the threshold is
        compressed here, as if a message had arrived (a restored chat plus 40 tools)."""
        with self._lock:
            self._tools = [dict(t) for t in tools or []]
            self._tools_bound = tools_tokens_bound(self._tools)
            self._tools_exact = None if self._tools else 0
            maybe_compress(self)

    tools_tokens = property(lambda self: self._tools_tokens,
                            doc="Tokens the tool schemas add to every request.")

    @property
    def over_budget(self) -> bool:
        """True when the request (messages and tool schemas) exceeds ``max_tokens``."""
        return self.upper_bound() > self.max_tokens and self.count_tokens() > self.max_tokens

    def check_budget(self) -> int:
        """The prompt size; raises ``AgentError("context_overflow")`` if over ``max_tokens``.

        Call it before a request: sending it would only earn the provider's 400."""
        with self._lock:
            n = self.count_tokens()
            if n > self.max_tokens:
                raise overflow_error(n, self.max_tokens, self._tools_tokens,
                                     self._system_tokens, max(self._tokens, default=0))
            return n

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
            maybe_compress(self)

    def extend(self, msgs: Iterable[dict]) -> None:
        """Add several messages, then compress once (so tool results join their call first)."""
        with self._lock:
            for m in msgs:
                self._add(m)
            maybe_compress(self)

    def restore(self, messages: Iterable[dict]) -> None:
        """Replace the history with ``messages`` (e.g. from a checkpoint of ``get_messages()``).

        A leading system message holding the system prompt is dropped (it is added back), and
        a compression note -- folded into it, or in a message of its own after the task --
        becomes the note again (with its count and summary), so later compressions keep
        counting from it."""
        with self._lock:
            self.reset()
            note, msgs = split_note([dict(m) for m in messages], self._system_prompt)
            if note:
                self._removed = int(NOTE_RE.match(note).group(1))
                self._summary = note.partition("\n")[2] or None
            for m in msgs:
                self._add(m)
            if self._removed:
                set_note(self)
            maybe_compress(self)

    def _add(self, msg: dict) -> None:
        add_message(self, msg)

    def compress(self) -> CompressionRecord | None:
        """Compress now (normally automatic). Returns the record, or None if nothing changed."""
        return compress(self)

    # -- reading -------------------------------------------------------------------------
    def get_messages(self) -> list[dict]:
        """The request history: system prompt (and note) first, then the task and the rest."""
        with self._lock:
            out: list[dict] = []
            folded = self._note is not None and self.note_role == "system"
            if self._system_prompt or folded:
                text = "\n\n".join(t for t in (self._system_prompt,
                                                 self._note if folded else "") if t)
                out.append({"role": "system", "content": text})
            pos = note_position(self)
            out.extend([dict(m) for m in self._messages[:pos]])
            if self._note is not None and not folded:
                out.append({"role": "user", "content": self._note})
            out.extend([dict(m) for m in self._messages[pos:]])
            return out

    def count_tokens(self, msgs: list[dict] | None = None, tools: list[dict] | None = None) -> int:
        """Prompt tokens of ``msgs``, or of the next request when ``msgs`` is None.

        The request's count is a cached sum (O(1)) of the history and the tool schemas
        (``tools`` replaces the manager's own for this count); ``count_tokens([])`` counts
        the empty list (3 priming tokens), not the history."""
        if msgs is not None:
            return count_messages_tokens(msgs, self.model, tools)
        with self._lock:
            self._exact()
            schemas = self._tools_tokens if tools is None else count_tools_tokens(tools, self.model)
            return self._system_tokens + self._note_tokens + self._total + REPLY_PRIMING + schemas

    def __len__(self) -> int:
        """Number of messages ``get_messages()`` returns (system prompt and note included)."""
        with self._lock:
            folded = self._note is not None and self.note_role == "system"
            return (len(self._messages) + bool(self._system_prompt or folded)
                    + (self._note is not None and not folded))

    def __repr__(self) -> str:
        return (f"MessageManager(messages={len(self)}, tokens={self.count_tokens()}, "
                f"max_tokens={self.max_tokens}, compressions={len(self.compressions)})")

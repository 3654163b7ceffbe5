"""Naive message manager in the article's style (for notebook 04 and the benchmark only).

Two habits of the article's ``MessageManager`` are kept on purpose:

- ``append`` re-encodes the whole history (after deep-copying it) to decide whether to
  compress, so the n-th append costs O(n) and a run of n messages costs O(n^2);
- trimming removes the oldest message one at a time, recounting everything after each removal,
  and knows nothing about tool-call groups, so it can cut an assistant ``tool_calls`` message
  and leave its ``tool`` results behind (the API answers 400). The first user message, the
  task, is dropped like any other.

``count_tokens(msgs)`` also keeps the ``msgs or ...`` slip: an empty list counts the history.
Do not use this in real code; use ``agentlab.messages.MessageManager``.
"""
from __future__ import annotations

import json
from copy import deepcopy

from ..tokens import encoding_for

__all__ = ["NaiveMessageManager"]


class NaiveMessageManager:
    def __init__(self, system_prompt="", model="gpt-4o", max_tokens=120000,
                 compression_threshold=0.75):
        self.system_prompt = system_prompt
        self.max_tokens = max_tokens
        self.compression_threshold = compression_threshold
        self.enc = encoding_for(model)
        self._messages: list[dict] = []

    def append(self, msg):
        self._messages.append(msg)
        self._maybe_compress()

    def extend(self, msgs):
        self._messages.extend(msgs)
        self._maybe_compress()

    def get_messages(self):
        out = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return out + deepcopy(self._messages)

    def count_tokens(self, msgs=None):
        msgs = msgs or self.get_messages()  # [] is falsy: counts the history instead
        total = 3
        for m in msgs:
            total += 3
            for v in m.values():
                if isinstance(v, str):
                    total += len(self.enc.encode(v))
                elif isinstance(v, list):
                    total += len(self.enc.encode(json.dumps(v)))
        return total

    def _maybe_compress(self):
        limit = int(self.max_tokens * self.compression_threshold)
        if self.count_tokens() > limit:  # re-encodes every message, every time
            removed = 0
            while self._messages and self.count_tokens() > limit:
                self._messages.pop(0)  # one message at a time, groups ignored
                removed += 1
            self._messages.insert(0, {"role": "system",
                                      "content": f"[{removed} earlier messages removed]"})

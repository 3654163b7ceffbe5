"""Chapter 04 — the message manager: a token budget that never breaks the conversation.

Taught in ``notebooks/04_message_manager.ipynb``. Six files:

- ``manager.py``: ``MessageManager`` (cached counts, the budget, adding and reading messages);
- ``counts.py``: when it counts (lazily, from a free upper bound: UTF-8 bytes >= tokens);
- ``compression.py``: its compression steps (whole groups from the front, the note, truncation);
- ``groups.py``: pair-safe removal, the history walked in groups (a call with its results);
- ``records.py``: ``CompressionRecord``, the note, truncation and the summary request;
- ``history.py``: ``synthetic_history``, a deterministic conversation for demos and tests.
"""
from ..tokens import count_message_tokens
from .history import synthetic_history
from .manager import DEFAULT_MAX_TOKENS, STRATEGIES, MessageManager, default_budget
from .records import CompressionRecord

__all__ = ["MessageManager", "CompressionRecord", "STRATEGIES", "synthetic_history",
           "DEFAULT_MAX_TOKENS", "default_budget", "count_message_tokens"]

"""``MemoryStateStore``: a dict behind a lock, for tests and notebooks.

Values are kept as JSON text, so the memory store makes the same checks as the others and every
``load`` is a fresh copy: what works here works in a folder or a database.
"""
from __future__ import annotations

import threading

from .base import BaseStateStore

__all__ = ["MemoryStateStore"]


class MemoryStateStore(BaseStateStore):
    """An in-process store with the same checks; values are kept as JSON text, so loads are copies."""

    def __init__(self) -> None:
        self._data: dict[str, str] = {}
        self._lock = threading.Lock()

    def _write(self, key: str, text: str) -> None:
        with self._lock:
            self._data[key] = text

    def _read(self, key: str) -> str | None:
        with self._lock:
            return self._data.get(key)

    def _delete(self, key: str) -> None:
        with self._lock:
            self._data.pop(key, None)

    def _delete_all(self) -> None:
        with self._lock:
            self._data.clear()

    def _keys(self) -> list[str]:
        with self._lock:
            return list(self._data)

    def __repr__(self) -> str:
        return f"MemoryStateStore(keys={len(self._data)})"

"""``BaseStateStore``: the interface every state store shares, and the checks it makes first.

``save``, ``load``, ``clear``, ``keys``, ``in`` and ``len`` are written once here, over five hooks
a backend implements (``_write _read _delete _delete_all _keys``, on JSON text): so every store
validates keys, refuses non-JSON values, masks secrets and returns fresh copies the same way.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import StateError
from .validation import to_json, validate_key

__all__ = ["BaseStateStore"]


class BaseStateStore:
    """The shared contract; subclasses implement ``_write _read _delete _delete_all _keys``."""

    #: Mask secrets before writing (``agentlab.redaction``); see ``agentlab.state``'s docstring.
    redacts = True

    def save(self, key: str, value: Any) -> None:
        """Store ``value`` (plain JSON, secrets masked) under ``key``, atomically."""
        validate_key(key)
        self._write(key, to_json(key, value, scrub=self.redacts))

    def load(self, key: str, default: Any = None) -> Any:
        """A fresh copy of the value under ``key``, or ``default`` when there is none."""
        validate_key(key)
        text = self._read(key)
        if text is None:
            return default
        try:
            return json.loads(text)
        except (ValueError, RecursionError) as exc:  # hostile text too: nested too deeply
            where = self._where(key)
            why = "nested too deeply to read" if isinstance(exc, RecursionError) else \
                f"not valid JSON ({exc})"
            raise StateError("state_corrupt", f"the stored value of {key!r} ({where}) is {why}; "
                             f"delete it with clear({key!r}) or restore it from a backup.",
                             details={"key": key, "where": where}) from None

    def clear(self, key: str | None = None) -> None:
        """Delete one key, or every key when ``key`` is None."""
        if key is None:
            self._delete_all()
        else:
            self._delete(validate_key(key))

    def keys(self) -> list[str]:
        """All stored keys, sorted."""
        return sorted(self._keys())

    def __contains__(self, key: object) -> bool:
        try:
            validate_key(key)
        except StateError:
            return False
        return self._read(key) is not None  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._keys())

    def _where(self, key: str) -> str:
        return f"key {key!r}"

    # subclass hooks
    def _write(self, key: str, text: str) -> None: raise NotImplementedError
    def _read(self, key: str) -> str | None: raise NotImplementedError
    def _delete(self, key: str) -> None: raise NotImplementedError
    def _delete_all(self) -> None: raise NotImplementedError
    def _keys(self) -> list[str]: raise NotImplementedError

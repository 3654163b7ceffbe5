"""``StateStore``: one JSON file per key in a folder, each written atomically.

Each value is written with ``agentlab.atomic.atomic_write``: a temporary file in the same
folder, flushed and fsynced, then ``os.replace``-d over the old file, and the folder fsynced. A
crash at any point leaves the old value or the new one, never half of each. Temporary files of
writers killed mid-write are swept when the store opens.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..atomic import atomic_write, sweep_orphans
from ..errors import StateError
from .base import BaseStateStore
from .validation import validate_key

__all__ = ["StateStore"]


class StateStore(BaseStateStore):
    """One JSON file per key in ``store_dir`` (created on the first write)."""

    def __init__(self, store_dir: str | os.PathLike = ".agent_state") -> None:
        self.dir = Path(store_dir)
        if self.dir.is_dir():  # temp files of writers killed mid-write (kill -9)
            sweep_orphans(self.dir)

    def path_for(self, key: str) -> Path:
        """The file that holds ``key`` (validated first: it is always inside ``self.dir``)."""
        return self.dir / f"{validate_key(key)}.json"

    def _where(self, key: str) -> str:
        return f"file {key}.json in the store directory"

    def _write(self, key: str, text: str) -> None:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateError("state_write_failed", f"cannot create the store directory "
                             f"{self.dir}: {exc}", details={"key": key}) from exc
        atomic_write(self.path_for(key), text.encode("utf-8"), StateError, "state_write_failed")

    def _read(self, key: str) -> str | None:
        try:
            return self.path_for(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UnicodeDecodeError as exc:
            raise StateError("state_corrupt", f"{self._where(key)} is not UTF-8 text: {exc}",
                             details={"key": key}) from exc

    def _delete(self, key: str) -> None:
        self.path_for(key).unlink(missing_ok=True)

    def _delete_all(self) -> None:
        if not self.dir.is_dir():
            return
        for key in self._keys():
            self._delete(key)
        for tmp in self.dir.glob(".*.tmp"):  # leftovers of writes that crashed
            tmp.unlink(missing_ok=True)

    def _keys(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        out = []
        for p in self.dir.glob("*.json"):
            try:
                out.append(validate_key(p.name[:-5]))
            except StateError:
                pass  # a file this store did not write
        return out

    def __repr__(self) -> str:
        return f"StateStore({str(self.dir)!r})"

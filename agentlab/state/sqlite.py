"""``SQLiteStateStore``: every key in one SQLite table (stdlib ``sqlite3``, WAL mode).

One statement per write, committed whole or not at all; one connection behind a lock, so
threads may share a store, and SQLite's own locking for processes ("database is locked" is
retried for up to ``timeout`` seconds, so several processes creating one new file at once
succeed). Every ``sqlite3`` failure becomes a ``StateError`` naming the database file.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import StateError
from .base import BaseStateStore

__all__ = ["SQLiteStateStore"]


class SQLiteStateStore(BaseStateStore):
    """Keys in one SQLite table (WAL mode); each save is one transaction.

    Safe to share between threads (one connection behind a lock) and between processes
    (SQLite's own locking). The database file is created by the first write."""

    def __init__(self, path: str | os.PathLike = ".agent_state.sqlite3", *, timeout: float = 30.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    def _connection(self, create: bool) -> sqlite3.Connection | None:
        if self._conn is None:
            if self.path != ":memory:" and not os.path.exists(self.path):
                if not create:
                    return None
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
            try:  # several processes setting up one new file: "locked" at once, busy timeout or not
                self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
                conn.execute("PRAGMA synchronous=FULL")
                self._retry(lambda: conn.execute(
                    "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, "
                    "value TEXT NOT NULL, updated_at REAL NOT NULL)"))
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _retry(self, step: Any) -> Any:
        """Run ``step()``, retrying "database is locked/busy" for up to ``timeout`` seconds."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return step()
            except sqlite3.OperationalError as exc:
                text = str(exc)
                if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _execute(self, sql: str, params: tuple = (), *, create: bool = False,
                 key: str | None = None) -> list | None:
        """One statement under the lock; ``None`` when the file does not exist (and not ``create``).

        Every ``sqlite3`` failure becomes a ``StateError`` (``state_write_failed`` for writes,
        ``state_corrupt`` for reads) naming the database file."""
        with self._lock:
            try:
                conn = self._connection(create=create)
                if conn is None:
                    return None
                return self._retry(lambda: conn.execute(sql, params).fetchall())
            except sqlite3.Error as exc:
                code = "state_write_failed" if create else "state_corrupt"
                raise StateError(code, f"the SQLite state store {self.path} failed: "
                                 f"{type(exc).__name__}: {exc}",
                                 details={"key": key, "file": self.path}) from exc

    def _write(self, key: str, text: str) -> None:
        # one statement in autocommit mode: committed whole, or not at all
        self._execute("INSERT INTO state (key, value, updated_at) VALUES (?, ?, ?) "
                      "ON CONFLICT(key) DO UPDATE SET value=excluded.value, "
                      "updated_at=excluded.updated_at", (key, text, time.time()), create=True,
                      key=key)

    def _read(self, key: str) -> str | None:
        rows = self._execute("SELECT value FROM state WHERE key = ?", (key,), key=key)
        return rows[0][0] if rows else None

    def _delete(self, key: str) -> None:
        self._execute("DELETE FROM state WHERE key = ?", (key,), key=key)

    def _delete_all(self) -> None:
        self._execute("DELETE FROM state")

    def _keys(self) -> list[str]:
        return [r[0] for r in self._execute("SELECT key FROM state") or ()]

    def _where(self, key: str) -> str:
        return f"row {key!r} of the SQLite store"

    def close(self) -> None:
        """Close the connection (it reopens on next use)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> "SQLiteStateStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteStateStore({os.path.basename(self.path)!r})"

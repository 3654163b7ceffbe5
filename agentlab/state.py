"""Key-value state that survives a crash: JSON files, SQLite, or memory (notebook 05).

Three stores with one interface — ``save(key, value)``, ``load(key, default=None)``,
``clear(key=None)``, ``keys()``, ``key in store``:

- ``StateStore(store_dir)``: one JSON file per key, written with ``atomic_write`` (defined in
  ``agentlab.atomic``, re-exported here): a temporary file in the same directory, flushed and
  fsynced, then ``os.replace``-d over the old file (atomic on POSIX and Windows), and the
  directory fsynced. A crash at any point leaves either the old value or the new one, never
  half of each. The directory is created by the first write. Chapter 11's checkpoint files are
  written by the same function.
- ``SQLiteStateStore(path)``: stdlib ``sqlite3`` in WAL mode, one transaction per write,
  thread-safe (one connection behind a lock). The file is created by the first write.
- ``MemoryStateStore()``: a dict, for tests and notebooks; same checks, same copies.

What every store refuses, with a ``StateError`` (the same rules on every store, so a key that
works in memory works in a folder on Windows too):

- keys that could escape the store or are not portable file names (``invalid_key``), the
  rules of ``agentlab.atomic.portable_name_problem``: empty; more than 200 bytes of UTF-8;
  a lone surrogate; a control character or one of ``/ \\ : * ? " < > |``; a leading ``.``;
  a trailing space or dot; a Windows device name (``CON``, ``PRN``, ``AUX``, ``NUL``,
  ``CONIN$``, ``CONOUT$``, ``COM0``-``COM9``, ``LPT0``-``LPT9``, with any extension);
- values that are not plain JSON (``not_serializable``): the error names the key, the path
  inside the value and its type. Nothing is silently turned into ``str()``. Tuples are stored
  as lists (JSON has no tuples). Also refused: values nested deeper than Python can walk, ints
  of more than 4,300 digits, text with lone surrogates (not encodable as UTF-8);
- a write the database refuses (``state_write_failed``), including ``database is locked``
  after the busy timeout: several processes creating one new SQLite store at once are
  retried, not failed.

Secrets never reach the store (``agentlab.redaction``): before a value is written, values
under credential-named keys, key-shaped tokens and registered secrets are masked. Set
``store.redacts = False`` for a store that must keep values verbatim.

A stored value that cannot be parsed any more raises ``StateError(code="state_corrupt")``
naming the file; a write the file system refuses raises ``StateError(code="state_write_failed")``
and leaves the old value. ``load`` always returns a fresh copy: mutating it never changes the
store.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .atomic import MAX_NAME_BYTES, atomic_write, fsync_dir, portable_name_problem, sweep_orphans
from .errors import StateError
from .redaction import redact

__all__ = ["StateStore", "SQLiteStateStore", "MemoryStateStore", "BaseStateStore",
           "validate_key", "to_json", "atomic_write", "fsync_dir", "MAX_KEY_LENGTH"]

#: Longest key, in bytes of UTF-8 (``agentlab.atomic.MAX_NAME_BYTES``).
MAX_KEY_LENGTH = MAX_NAME_BYTES


def validate_key(key: Any) -> str:
    """Return ``key`` if it is safe as a file name inside a store, else raise ``invalid_key``."""
    def bad(why: str) -> StateError:
        return StateError("invalid_key", f"state key {key!r} refused: {why}. Use letters, digits, "
                          "'-', '_' and inner dots, e.g. 'run_42.summary'.", details={"key": repr(key)})
    problem = portable_name_problem(key)
    if problem:
        raise bad(problem)
    return key


def _find_non_json(value: Any, path: str, active: set[int]) -> tuple[str, str] | None:
    """First place in ``value`` that is not plain JSON, as (path, reason), or None."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"float {value!r} (JSON has no NaN/Infinity)")
    if isinstance(value, (list, tuple, dict)):
        if id(value) in active:
            return (path, "a reference to itself (circular)")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        return (path, f"dict key {k!r} of type {type(k).__name__} (JSON keys are strings)")
                    found = _find_non_json(v, f"{path}[{k!r}]", active)
                    if found:
                        return found
            else:
                for i, v in enumerate(value):
                    found = _find_non_json(v, f"{path}[{i}]", active)
                    if found:
                        return found
        finally:
            active.discard(id(value))
        return None
    return (path, f"type {type(value).__name__}")


def to_json(key: str, value: Any, scrub: bool = False) -> str:
    """Serialise ``value`` for ``key`` (secrets masked when ``scrub``), or raise
    ``StateError(code="not_serializable")``."""
    def refuse(where: str, what: str) -> StateError:
        return StateError("not_serializable",
                          f"cannot save key {key!r}: {where} is {what}. Store plain JSON (dict, "
                          "list, str, int, float, bool, None); convert other objects first.",
                          details={"key": key, "path": where, "reason": what})
    try:
        found = _find_non_json(value, "value", set())
        if found:
            raise refuse(*found)
        text = json.dumps(redact(value) if scrub else value, ensure_ascii=False, indent=2, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate cannot be written as UTF-8
    except RecursionError:
        raise refuse("value", f"nested deeper than {sys.getrecursionlimit()} levels") from None
    except UnicodeEncodeError as exc:
        raise refuse("value", f"text with a lone surrogate ({exc.object[exc.start:exc.end]!r})") from None
    except ValueError as exc:  # an int beyond the 4,300-digit conversion limit
        raise refuse("value", f"not convertible to JSON ({exc})") from None
    return text


class BaseStateStore:
    """The shared contract; subclasses implement ``_write _read _delete _delete_all _keys``."""

    #: Mask secrets before writing (``agentlab.redaction``); see the module docstring.
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
        except ValueError as exc:
            where = self._where(key)
            raise StateError("state_corrupt", f"the stored value of {key!r} ({where}) is not valid "
                             f"JSON ({exc}); delete it with clear({key!r}) or restore it from a "
                             "backup.", details={"key": key, "where": where}) from exc

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

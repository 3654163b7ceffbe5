"""Where checkpoints live: the on-disk format and the two storage backends.

Part of chapter 11 (``notebooks/11_checkpoints.ipynb``); ``agentlab.checkpoints.CheckpointManager``
is the public face and picks a backend from its ``store=`` argument. Nothing here scrubs
secrets or checks safe points: the manager does that before a document reaches a backend.

- ``JSONBackend``: one file per checkpoint in a folder, written atomically (temp file + fsync +
  ``os.replace`` + directory fsync); ``tool_results/<run_id>.jsonl`` is the durable tool-result
  log (one line per call, appended and fsynced before the caller moves on); ``.lock`` serialises
  writers across processes (``flock``), so ids and revisions are allocated once.
- ``SQLiteBackend``: table ``checkpoints`` (the same document in ``body``) and table
  ``tool_results`` (primary key ``run_id, tool_call_id``) in one file, WAL, ``synchronous=FULL``.

The document (``_render``) is JSON whose first line holds the small header fields
(``format_version, id, run_id, revision, turn, created_at, saved_due_to, n_messages``), so
listing reads one line per file. ``_parse`` turns every failure into a ``CheckpointError``
naming the file: ``checkpoint_corrupt`` or ``checkpoint_incompatible`` (unknown version).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import sqlite3
import time
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from ..errors import CheckpointError, ConfigError

try:  # POSIX advisory locks; elsewhere the lock is per process only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["FORMAT_VERSION", "Checkpoint", "CheckpointBackend", "JSONBackend", "SQLiteBackend",
           "make_backend"]

logger = logging.getLogger("agentlab.checkpoints")

#: Version of the on-disk checkpoint format. Bump it when the layout changes, and add a
#: migration to ``_MIGRATIONS``; a file with a version not listed there is refused.
FORMAT_VERSION = 1
#: Older versions this code can upgrade: ``{version: function(doc) -> doc of version + 1}``.
_MIGRATIONS: dict[int, Callable[[dict], dict]] = {}

_ID_RE = re.compile(r"^(\d{8})-(\d{19})-([0-9a-f]{6})$")
_REQUIRED = {"format_version": int, "id": str, "run_id": str, "revision": int, "turn": int,
             "created_at": str, "messages": list, "state": dict, "tool_calls_made": list,
             "metadata": dict}


# ---------------------------------------------------------------- the record
@dataclass
class Checkpoint:
    """One saved snapshot of a run (see the module docstring for what each field means)."""

    id: str
    run_id: str
    revision: int
    turn: int
    messages: list[dict]
    state: dict[str, Any]
    tool_calls_made: list[dict]
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    format_version: int = FORMAT_VERSION

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _parse(text: bytes | str, where: str) -> Checkpoint:
    """Decode one checkpoint document; every failure is a ``CheckpointError`` naming ``where``."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError("checkpoint_corrupt",
                              f"checkpoint {where} is corrupt ({exc}); delete it or load an "
                              "older checkpoint", details={"file": where}) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("format_version"), int):
        raise CheckpointError("checkpoint_corrupt", f"checkpoint {where} has no integer "
                              "format_version; it was not written by agentlab",
                              details={"file": where})
    version = doc["format_version"]
    while version in _MIGRATIONS:
        doc = _MIGRATIONS[version](doc)
        version = doc["format_version"]
    if version != FORMAT_VERSION:
        raise CheckpointError(
            "checkpoint_incompatible",
            f"checkpoint {where} has format_version {version}; this agentlab reads version "
            f"{FORMAT_VERSION}{' (and migrates ' + str(sorted(_MIGRATIONS)) + ')' if _MIGRATIONS else ''}. "
            "Use the agentlab that wrote it, or start a new run.",
            details={"file": where, "format_version": version, "supported": FORMAT_VERSION})
    for key, typ in _REQUIRED.items():
        if not isinstance(doc.get(key), typ):
            raise CheckpointError("checkpoint_corrupt", f"checkpoint {where}: field {key!r} is "
                                  f"missing or not a {typ.__name__}", details={"file": where})
    return Checkpoint(**{k: doc[k] for k in _REQUIRED})


def _header_of(line: bytes) -> dict | None:
    """The header is the first line of a checkpoint text: ``{...scalars...,`` (see ``_render``)."""
    try:
        head = json.loads(line.rstrip().rstrip(b",") + b"}")
        return head if isinstance(head, dict) else None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _render(header: dict, body: dict[str, str]) -> str:
    """One JSON document whose first line holds the small header fields, so listing is cheap.

    JSON strings never contain a raw newline, so the first line ends exactly here.
    """
    parts = [json.dumps(header, ensure_ascii=False, separators=(",", ":"))[:-1] + ","]
    parts.append(",\n".join(f'"{k}":{v}' for k, v in body.items()))
    return "\n".join(parts) + "}\n"


# ---------------------------------------------------------------- backends
class CheckpointBackend(Protocol):
    """What a store must offer; ``JSONBackend`` and ``SQLiteBackend`` are the two built in."""

    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict: ...
    def read(self, checkpoint_id: str | None) -> Checkpoint | None: ...
    def headers(self) -> list[dict]: ...
    def delete(self, checkpoint_id: str) -> bool: ...
    def clear(self) -> int: ...
    def record_tool_result(self, record: dict) -> bool: ...
    def tool_results(self, run_id: str) -> dict[str, dict]: ...


class JSONBackend:
    """One JSON file per checkpoint, plus ``tool_results/<run_id>.jsonl`` (append + fsync)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.dir = Path(directory)
        self._tlock = threading.RLock()

    # -- locking and atomic files
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._tlock:
            self.dir.mkdir(parents=True, exist_ok=True)
            with open(self.dir / ".lock", "a+b") as fh:
                if fcntl is not None:
                    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    if fcntl is not None:
                        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)

    def _fsync_dir(self, path: Path) -> None:
        if os.name == "posix":
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _atomic_write(self, path: Path, data: bytes) -> None:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)  # atomic: readers see the old file or the new one, never half
        self._fsync_dir(path.parent)

    def _ids(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.stem for p in self.dir.glob("*.json") if _ID_RE.match(p.stem))

    def path(self, checkpoint_id: str) -> Path:
        return self.dir / f"{checkpoint_id}.json"

    def _header(self, checkpoint_id: str) -> dict:
        path = self.path(checkpoint_id)
        try:
            with open(path, "rb") as fh:
                head = _header_of(fh.readline())
            size = path.stat().st_size
        except FileNotFoundError:
            return {}
        if head is None:
            return {"id": checkpoint_id, "path": str(path), "size_bytes": size,
                    "error": "checkpoint_corrupt"}
        return {**head, "path": str(path), "size_bytes": size}

    # -- checkpoints
    def write(self, run_id, build, max_keep):
        with self._locked():
            for stale in self.dir.glob(".*.tmp"):  # left by a writer that crashed mid-write
                stale.unlink(missing_ok=True)
            ids = self._ids()
            seq = int(ids[-1][:8]) + 1 if ids else 1
            revision = 1 + max((h.get("revision", 0) for h in map(self._header, ids)
                                if h.get("run_id") == run_id), default=0)
            header, text = build(seq, revision)
            self._atomic_write(self.path(header["id"]), text.encode("utf-8"))
            ids.append(header["id"])
            if max_keep is not None:
                for old in ids[:-max_keep]:
                    self.path(old).unlink(missing_ok=True)
            return {**header, "size_bytes": len(text.encode("utf-8"))}

    def read(self, checkpoint_id):
        if checkpoint_id is None:
            ids = self._ids()
            if not ids:
                return None
            checkpoint_id = ids[-1]
        path = self.path(checkpoint_id)
        if not _ID_RE.match(checkpoint_id) or not path.is_file():
            raise CheckpointError("checkpoint_not_found", f"no checkpoint {checkpoint_id!r} in "
                                  f"{self.dir}; list_checkpoints() shows what exists",
                                  details={"id": checkpoint_id})
        return _parse(path.read_bytes(), str(path))

    def headers(self):
        return [h for h in map(self._header, self._ids()) if h]

    def delete(self, checkpoint_id):
        if not _ID_RE.match(checkpoint_id) or not self.dir.is_dir():
            return False
        with self._locked():
            path = self.path(checkpoint_id)
            existed = path.exists()
            path.unlink(missing_ok=True)
            return existed

    def clear(self):
        if not self.dir.is_dir():
            return 0
        with self._locked():
            ids = self._ids()
            for i in ids:
                self.path(i).unlink(missing_ok=True)
            logdir = self.dir / "tool_results"
            if logdir.is_dir():
                for p in logdir.glob("*.jsonl"):
                    p.unlink()
            return len(ids)

    # -- tool-result log
    def _log_path(self, run_id: str) -> Path:
        return self.dir / "tool_results" / f"{run_id}.jsonl"

    def _read_log(self, path: Path) -> tuple[dict[str, dict], bool]:
        out: dict[str, dict] = {}
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return out, True
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                # Only a crash mid-append makes such a line (each record is one write + fsync,
                # and the caller moves on only after it). That call never completed: skip it.
                logger.info("skipping a torn line in %s", path)
                continue
            out.setdefault(rec["tool_call_id"], rec)  # the first record of a call wins
        return out, data.endswith(b"\n") or not data

    def record_tool_result(self, record):
        with self._locked():
            path = self._log_path(record["run_id"])
            existing, clean_end = self._read_log(path)
            if record["tool_call_id"] in existing:
                return False
            path.parent.mkdir(exist_ok=True)
            created = not path.exists()
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (b"" if clean_end else b"\n") + line.encode("utf-8"))
                os.fsync(fd)  # durable before the caller moves on
            finally:
                os.close(fd)
            if created:
                self._fsync_dir(path.parent)
            return True

    def tool_results(self, run_id):
        return self._read_log(self._log_path(run_id))[0]


class SQLiteBackend:
    """Checkpoints and tool results in one SQLite file (WAL, ``synchronous=FULL``)."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS checkpoints (
        seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, run_id TEXT NOT NULL,
        revision INTEGER NOT NULL, turn INTEGER NOT NULL, created_at TEXT NOT NULL,
        format_version INTEGER NOT NULL, saved_due_to TEXT, n_messages INTEGER,
        size_bytes INTEGER NOT NULL, body TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints (run_id, revision);
    CREATE TABLE IF NOT EXISTS tool_results (
        run_id TEXT NOT NULL, tool_call_id TEXT NOT NULL, name TEXT NOT NULL,
        result TEXT NOT NULL, success INTEGER NOT NULL, error_code TEXT, arguments TEXT,
        turn INTEGER, recorded_at TEXT NOT NULL, PRIMARY KEY (run_id, tool_call_id));
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._local = threading.local()  # one connection per thread (sqlite3's rule)

    def _connection(self) -> sqlite3.Connection:
        # Kept open: closing the last connection checkpoints the WAL into the database,
        # which costs several fsyncs per save. A forked child opens its own.
        # A file deleted or replaced since (``rm -r`` of the folder) gets a new connection.
        try:
            ident = (os.getpid(), os.stat(self.path).st_ino)
        except FileNotFoundError:
            ident = None
        con = getattr(self._local, "con", None)
        if con is None or ident is None or getattr(self._local, "ident", None) != ident:
            if con is not None:
                con.close()
            con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            con.execute("PRAGMA synchronous=FULL")  # fsync the WAL at every commit
            # Switching to WAL and creating the schema can fail with "database is locked" at
            # once, busy timeout or not, when another process is setting up the same new file:
            # retry that for a bounded time instead of reporting a corrupt store.
            deadline = time.monotonic() + 30.0
            while True:
                try:
                    con.execute("PRAGMA journal_mode=WAL")
                    con.executescript(self._SCHEMA)
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            self._local.con = con
            self._local.ident = (os.getpid(), os.stat(self.path).st_ino)
        return con

    @contextlib.contextmanager
    def _connect(self, write: bool = False) -> Iterator[sqlite3.Connection | None]:
        if not write and not self.path.exists():
            yield None
            return
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            yield self._connection()
        except sqlite3.DatabaseError as exc:
            raise CheckpointError("checkpoint_corrupt", f"checkpoint database {self.path} cannot "
                                  f"be used: {exc}", details={"file": str(self.path)}) from None

    def close(self) -> None:
        """Close this thread's connection (the others close when their threads end)."""
        con = getattr(self._local, "con", None)
        if con is not None:
            con.close()
            self._local.con = None

    def where(self, checkpoint_id: str) -> str:
        return f"{self.path}#{checkpoint_id}"

    def write(self, run_id, build, max_keep):
        with self._connect(write=True) as con:
            con.execute("BEGIN IMMEDIATE")  # the write lock: seq and revision are ours alone
            try:
                row = con.execute("SELECT seq FROM sqlite_sequence WHERE name='checkpoints'").fetchone()
                seq = (row[0] if row else 0) + 1
                rev = con.execute("SELECT COALESCE(MAX(revision), 0) FROM checkpoints "
                                  "WHERE run_id=?", (run_id,)).fetchone()[0] + 1
                header, text = build(seq, rev)
                size = len(text.encode("utf-8"))
                con.execute("INSERT INTO checkpoints VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                            (seq, header["id"], run_id, rev, header["turn"], header["created_at"],
                             header["format_version"], header.get("saved_due_to"),
                             header.get("n_messages"), size, text))
                if max_keep is not None:
                    con.execute("DELETE FROM checkpoints WHERE seq NOT IN (SELECT seq FROM "
                                "checkpoints ORDER BY seq DESC LIMIT ?)", (max_keep,))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return {**header, "size_bytes": size}

    def read(self, checkpoint_id):
        with self._connect() as con:
            row = None
            if con is not None:
                if checkpoint_id is None:
                    row = con.execute("SELECT id, body FROM checkpoints ORDER BY seq DESC "
                                      "LIMIT 1").fetchone()
                    if row is None:
                        return None
                else:
                    row = con.execute("SELECT id, body FROM checkpoints WHERE id=?",
                                      (checkpoint_id,)).fetchone()
            if row is None:
                if checkpoint_id is None:
                    return None
                raise CheckpointError("checkpoint_not_found", f"no checkpoint {checkpoint_id!r} "
                                      f"in {self.path}; list_checkpoints() shows what exists",
                                      details={"id": checkpoint_id})
            return _parse(row[1], self.where(row[0]))

    def headers(self):
        with self._connect() as con:
            if con is None:
                return []
            rows = con.execute("SELECT id, run_id, revision, turn, created_at, format_version, "
                               "saved_due_to, n_messages, size_bytes FROM checkpoints "
                               "ORDER BY seq").fetchall()
        keys = ("id", "run_id", "revision", "turn", "created_at", "format_version",
                "saved_due_to", "n_messages", "size_bytes")
        return [{**dict(zip(keys, r)), "path": self.where(r[0])} for r in rows]

    def delete(self, checkpoint_id):
        with self._connect() as con:
            if con is None:
                return False
            return con.execute("DELETE FROM checkpoints WHERE id=?", (checkpoint_id,)).rowcount > 0

    def clear(self):
        with self._connect() as con:
            if con is None:
                return 0
            n = con.execute("DELETE FROM checkpoints").rowcount
            con.execute("DELETE FROM tool_results")
            return n

    def record_tool_result(self, record):
        with self._connect(write=True) as con:
            cur = con.execute(
                "INSERT OR IGNORE INTO tool_results VALUES (?,?,?,?,?,?,?,?,?)",
                (record["run_id"], record["tool_call_id"], record["name"], record["result"],
                 int(record["success"]), record["error_code"],
                 None if record["arguments"] is None else json.dumps(record["arguments"]),
                 record["turn"], record["recorded_at"]))
            return cur.rowcount > 0  # autocommit: committed (and fsynced) when execute returns

    def tool_results(self, run_id):
        with self._connect() as con:
            if con is None:
                return {}
            rows = con.execute("SELECT run_id, tool_call_id, name, result, success, error_code, "
                               "arguments, turn, recorded_at FROM tool_results WHERE run_id=? "
                               "ORDER BY rowid", (run_id,)).fetchall()
        keys = ("run_id", "tool_call_id", "name", "result", "success", "error_code", "arguments",
                "turn", "recorded_at")
        out = {}
        for r in rows:
            rec = dict(zip(keys, r))
            rec["success"] = bool(rec["success"])
            rec["arguments"] = None if rec["arguments"] is None else json.loads(rec["arguments"])
            out[rec["tool_call_id"]] = rec
        return out


def make_backend(store: Any, checkpoint_dir: str | os.PathLike) -> Any:
    """The backend for ``CheckpointManager(store=...)``."""
    if store is None or store == "json":
        return JSONBackend(checkpoint_dir)
    if store == "sqlite":
        return SQLiteBackend(Path(checkpoint_dir) / "checkpoints.db")
    if isinstance(store, (str, os.PathLike)) and str(store).endswith((".db", ".sqlite", ".sqlite3")):
        return SQLiteBackend(store)
    if all(hasattr(store, m) for m in ("write", "read", "headers", "record_tool_result")):
        return store
    raise ConfigError("invalid_store", f"store={store!r} is not understood: use None or 'json' "
                      "(JSON files), 'sqlite', a path ending in .db/.sqlite, or a backend object")

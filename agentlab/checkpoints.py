"""Checkpoints that survive a crash, and a durable log so finished tool calls never run twice.

Taught in ``notebooks/11_checkpoints.ipynb`` (article section 9; run identity, revisions,
format versions and idempotency keys from the book chapter on runtimes, sections 1.4-1.5).

A checkpoint is a snapshot of one run at a safe point: its messages, state, tool-call log and
turn counter. ``CheckpointManager`` writes them to one of two backends:

- JSON files in ``checkpoint_dir`` (the default): one file per checkpoint, written atomically
  (temp file + fsync + ``os.replace``), so a crash leaves either the old file or the new one.
- SQLite (``store="sqlite"`` or a path ending in ``.db``/``.sqlite``): two tables, WAL journal,
  ``synchronous=FULL``, stdlib ``sqlite3``; the embedded default for real use.

What the article's manager got wrong and this one does not:

- ids are ``<seq:08d>-<time_ns:019d>-<random>``: ``seq`` is allocated under a cross-process
  lock, so ids are unique and sort in creation order, even for saves in the same millisecond;
- ``load()`` with no id reads the newest checkpoint *on disk*, so it works in a new process;
- retention (``max_checkpoints``) counts what is on disk, across processes;
- every checkpoint records ``format_version``, ``run_id``, ``revision`` and a wall-clock
  ``created_at``; a corrupt file or an unknown version raises ``CheckpointError`` naming the file
  (codes ``checkpoint_corrupt`` / ``checkpoint_incompatible``), never a bare ``JSONDecodeError``;
- ``save`` refuses a history that is not at a safe point (an assistant ``tool_calls`` message
  whose results are missing): resuming from it would send the API an invalid conversation;
- secrets are not written: in ``state``, ``metadata`` and ``tool_calls_made`` a value whose key
  looks like a credential (``api_key``, ``authorization``, ``*_secret``, ``password``,
  ``*_token``/``token``, ``credentials``; but not ``total_tokens``/``max_tokens``) becomes
  ``"[REDACTED]"``, strings shaped like ``sk-...`` keys or ``Bearer ...`` headers are masked, and
  exact values registered with ``add_secret()`` are masked everywhere, messages included.
  Objects that are not plain data (clients, connections, locks) are refused, never ``repr``'d.
- no directory or database file is created until the first write.

On disk (JSON backend): ``<dir>/<id>.json`` is one JSON document whose first line holds the
header (``format_version, id, run_id, revision, turn, created_at, saved_due_to, n_messages``),
so ``list_checkpoints`` reads one line per file; ``<dir>/tool_results/<run_id>.jsonl`` is the
tool-result log; ``<dir>/.lock`` serialises writers (``flock``). SQLite: table ``checkpoints``
(the same document in ``body``) and table ``tool_results`` (primary key ``run_id, tool_call_id``).

Run identity (book 1.4): a run keeps its ``run_id`` when it resumes; ``revision`` is
1 + the highest revision of that run in the store, so the first checkpoint after a resume from
revision r has revision r + 1.

Integration contract for ``AgentRuntime`` (the runtime owns the wiring; this module owns storage):

1. ``rt.checkpoints.run_id = result_run_id`` (or pass ``run_id=`` to ``save``) once per run.
2. After a turn whose tool results are all appended: ``if cm.should_save(turn): cm.save(turn,
   messages, state_dict, tool_calls_made, metadata={"saved_due_to": "interval", ...})``.
3. In the run's ``except`` block: ``cm.save_on_exception(exc, turn, messages, ...)``. It never
   raises (a failure while saving must not hide the failure being saved): it returns the id or
   ``None`` and keeps the problem in ``cm.last_error``. An unfinished tool batch at the end of the
   history is cut off and kept in ``metadata["unsafe_tail"]``.
4. As each tool call completes: ``cm.record_tool_result(run_id, call.id, name, result, success,
   error_code)`` (durable before it returns). Before executing a call on resume:
   ``cm.get_tool_result(run_id, call.id)``; if it is not ``None``, reuse its result instead of
   running the tool. Side-effecting tools get ``idempotency_key(run_id, call.id)``.
5. ``run(task, resume_from="latest" | id)``: ``cp = cm.resume(resume_from)`` binds ``run_id`` and
   the turn counter; restore ``cp.messages``, ``cp.state``, ``cp.tool_calls_made``, ``cp.turn``.
   Budget accounting (tokens used, seconds spent, usage) goes in ``metadata`` (e.g.
   ``{"usage": {...}, "elapsed_s": 12.5}``); token counts are kept (only credential-like keys
   are redacted).
6. After a resume the model is asked again from the checkpoint's history. The simulator's call
   ids are digests of the request, so the same request gives the same ids and step 4 finds the
   finished calls; with a model whose ids change, re-append ``metadata["unsafe_tail"]`` (from
   ``save_on_exception``) or match name and ``arguments`` (recorded with
   ``record_tool_result(..., arguments=)``) in ``completed_tool_calls(run_id)``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from .errors import CheckpointError, ConfigError

try:  # POSIX advisory locks; elsewhere the lock is per process only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FORMAT_VERSION", "REDACTED", "Checkpoint", "CheckpointManager", "CheckpointBackend",
    "JSONBackend", "SQLiteBackend", "is_safe_point", "unsafe_index", "pending_tool_calls",
    "idempotency_key", "scrub_secrets", "new_run_id",
]

logger = logging.getLogger(__name__)

#: Version of the on-disk checkpoint format. Bump it when the layout changes, and add a
#: migration to ``_MIGRATIONS``; a file with a version not listed there is refused.
FORMAT_VERSION = 1
#: Older versions this code can upgrade: ``{version: function(doc) -> doc of version + 1}``.
_MIGRATIONS: dict[int, Callable[[dict], dict]] = {}
REDACTED = "[REDACTED]"

_ID_RE = re.compile(r"^(\d{8})-(\d{19})-([0-9a-f]{6})$")
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_REQUIRED = {"format_version": int, "id": str, "run_id": str, "revision": int, "turn": int,
             "created_at": str, "messages": list, "state": dict, "tool_calls_made": list,
             "metadata": dict}


def new_run_id() -> str:
    """A fresh run id (``run-<uuid4>``)."""
    return f"run-{uuid.uuid4()}"


def idempotency_key(run_id: str, tool_call_id: str) -> str:
    """The key a side-effecting tool gets: the same for a call and for its replay after a resume."""
    return f"{run_id}:{tool_call_id}"


# ---------------------------------------------------------------- safe points
def _tool_call_ids(msg: dict) -> list[str]:
    return [tc["id"] if isinstance(tc, dict) else tc.id for tc in msg.get("tool_calls") or []]


def unsafe_index(messages: list[dict]) -> tuple[int, list[str]] | None:
    """Index of the first message that breaks the pairing rule, with the missing call ids.

    The rule (what the real API enforces): an assistant message with ``tool_calls`` is followed
    by one ``tool`` message per call id, and a ``tool`` message only answers such a call.
    Returns ``None`` when the history is at a safe point.
    """
    i, n = 0, len(messages)
    while i < n:
        msg = messages[i]
        if msg.get("role") == "tool":  # a result with no call right before it
            return i, [msg.get("tool_call_id", "?")]
        ids = _tool_call_ids(msg) if msg.get("role") == "assistant" else []
        j = i + 1
        answered = set()
        while j < n and messages[j].get("role") == "tool":
            answered.add(messages[j].get("tool_call_id"))
            j += 1
        if ids:
            missing = [c for c in ids if c not in answered]
            if missing or answered - set(ids):
                return i, missing or sorted(answered - set(ids))
            i = j
        else:
            i += 1
    return None


def is_safe_point(messages: list[dict]) -> bool:
    """True when every assistant ``tool_calls`` message has all its results (resumable)."""
    return unsafe_index(messages) is None


def pending_tool_calls(messages: list[dict]) -> list[dict]:
    """The calls of the last assistant ``tool_calls`` message that have no result yet."""
    for i in range(len(messages) - 1, -1, -1):
        msg = messages[i]
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            done = {m.get("tool_call_id") for m in messages[i + 1:] if m.get("role") == "tool"}
            return [tc for tc in msg["tool_calls"]
                    if (tc["id"] if isinstance(tc, dict) else tc.id) not in done]
    return []


# ---------------------------------------------------------------- plain data and secrets
_SECRET_WORDS = {"secret", "password", "passwd", "credential", "credentials", "authorization",
                 "apikey", "cookie"}
_SECRET_VALUE_RE = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}")


def _is_secret_key(key: str) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", words) if w]
    if not words:
        return False
    pairs = set(zip(words, words[1:]))
    return (bool(_SECRET_WORDS.intersection(words)) or words[-1] in ("token", "auth")
            or bool(pairs & {("api", "key"), ("private", "key"), ("access", "key")}))


def _mask(text: str) -> str:
    return _SECRET_VALUE_RE.sub(lambda m: ("sk-" if m.group(0).startswith("sk-") else "Bearer ")
                                + REDACTED, text)


def _plain(obj: Any, where: str, scrub: bool) -> Any:
    """Convert to JSON data (dict/list/str/number/bool/None); scrub secrets when asked."""
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return _mask(obj) if scrub else obj
    if isinstance(obj, dict):
        return {str(k): (REDACTED if scrub and _is_secret_key(k) and v is not None
                         else _plain(v, f"{where}[{k!r}]", scrub)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{where}[{i}]", scrub) for i, v in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, where, scrub)
    if isinstance(obj, enum.Enum):
        return _plain(obj.value, where, scrub)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if callable(getattr(obj, "to_dict", None)):
        return _plain(obj.to_dict(), where, scrub)
    raise CheckpointError(
        "not_serializable",
        f"cannot save {where}: a {type(obj).__module__}.{type(obj).__qualname__} is not plain "
        "data. Checkpoints hold JSON data only; clients, connections, locks and functions are "
        "never written. Store the settings needed to rebuild it instead.",
        details={"where": where, "type": type(obj).__qualname__})


def scrub_secrets(obj: Any) -> Any:
    """A copy of ``obj`` as plain data with credential-like keys and key-shaped strings masked."""
    return _plain(obj, "value", scrub=True)


def _json_default(obj: Any) -> Any:
    return _plain(obj, "messages", scrub=False)


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
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(self._SCHEMA)
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


def _make_backend(store: Any, checkpoint_dir: str | os.PathLike) -> Any:
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


# ---------------------------------------------------------------- the manager
class CheckpointManager:
    """Save, list, load and prune checkpoints of agent runs; keep the durable tool-result log.

    Args:
        checkpoint_dir: folder of the JSON files (and of ``checkpoints.db`` with ``store="sqlite"``).
        auto_save_interval: ``should_save(turn)`` is true every this many turns.
        max_checkpoints: how many checkpoints the store keeps (oldest removed first, counted
            on disk across processes and runs); ``None`` keeps all.
        store: ``None``/``"json"``, ``"sqlite"``, a ``.db``/``.sqlite`` path, or a backend object.
        run_id: the run new checkpoints belong to (a fresh ``run-<uuid>`` when omitted).
        redact_values: exact secret strings (e.g. the API key a client was built with) that must
            never reach disk, masked everywhere including messages; see also ``add_secret``.
    """

    def __init__(self, checkpoint_dir: str | os.PathLike = ".agent_checkpoints",
                 auto_save_interval: int = 3, max_checkpoints: int | None = 10,
                 store: Any = None, *, run_id: str | None = None,
                 redact_values: tuple[str, ...] | list[str] = ()) -> None:
        if not isinstance(auto_save_interval, int) or auto_save_interval < 1:
            raise ConfigError("invalid_config", "auto_save_interval must be an integer >= 1")
        if max_checkpoints is not None and (not isinstance(max_checkpoints, int) or max_checkpoints < 1):
            raise ConfigError("invalid_config", "max_checkpoints must be an integer >= 1 or None")
        self.checkpoint_dir = Path(checkpoint_dir)
        self.auto_save_interval = auto_save_interval
        self.max_checkpoints = max_checkpoints
        self.backend = _make_backend(store, checkpoint_dir)
        self._run_id = self._check_run_id(run_id) if run_id is not None else new_run_id()
        self._secrets: list[str] = []
        for value in redact_values:
            self.add_secret(value)
        self._last_saved_turn = 0
        self.last_error: BaseException | None = None

    # -- identity
    @property
    def run_id(self) -> str:
        """The run that ``save`` writes to unless told otherwise."""
        return self._run_id

    @run_id.setter
    def run_id(self, value: str) -> None:
        self._run_id = self._check_run_id(value)

    @staticmethod
    def _check_run_id(run_id: str) -> str:
        if not isinstance(run_id, str) or not _RUN_ID_RE.match(run_id):
            raise CheckpointError("invalid_key", f"run_id {run_id!r} must be 1-128 characters of "
                                  "letters, digits, '_', '.', '-', starting with a letter or digit")
        return run_id

    def add_secret(self, value: str | None) -> None:
        """Never write this exact string (an API key, a token); masked even inside messages."""
        if not value:
            return
        if len(str(value)) < 6:
            raise ConfigError("invalid_config", "a secret to redact must be at least 6 characters "
                              "(a shorter one would mask ordinary text)")
        if str(value) not in self._secrets:
            self._secrets.append(str(value))

    # -- saving
    def should_save(self, current_turn: int) -> bool:
        """True when ``auto_save_interval`` turns have passed since the last save."""
        return current_turn - self._last_saved_turn >= self.auto_save_interval

    def save(self, turn: int, messages: list[dict], state: dict | None,
             tool_calls_made: list | None, metadata: dict | None = None, *,
             run_id: str | None = None) -> str:
        """Write a checkpoint at a safe point and return its id.

        Raises ``CheckpointError``: ``checkpoint_unsafe`` when an assistant ``tool_calls`` message
        lacks results, ``not_serializable`` for non-data values (clients, locks, ...).
        """
        bad = unsafe_index(messages)
        if bad is not None:
            i, ids = bad
            raise CheckpointError(
                "checkpoint_unsafe",
                f"messages[{i}] ({messages[i].get('role')}) breaks the tool-call pairing "
                f"(unanswered or orphaned call ids: {', '.join(map(str, ids))}); save after every "
                "tool result is appended, or use save_on_exception, which cuts the unfinished tail",
                details={"index": i, "tool_call_ids": ids})
        run = self._check_run_id(run_id) if run_id is not None else self._run_id
        meta = _plain(metadata or {}, "metadata", scrub=True)
        body = {  # the heavy parts are encoded outside the store lock
            "metadata": json.dumps(meta, ensure_ascii=False, separators=(",", ":")),
            "state": json.dumps(_plain(state or {}, "state", scrub=True), ensure_ascii=False,
                                separators=(",", ":")),
            "tool_calls_made": json.dumps(_plain(list(tool_calls_made or []), "tool_calls_made",
                                                 scrub=True), ensure_ascii=False, separators=(",", ":")),
            "messages": json.dumps(list(messages), ensure_ascii=False, separators=(",", ":"),
                                   default=_json_default),
        }
        for secret in self._secrets:
            enc = json.dumps(secret, ensure_ascii=False)[1:-1]
            body = {k: v.replace(enc, REDACTED) for k, v in body.items()}

        def build(seq: int, revision: int) -> tuple[dict, str]:
            header = {"format_version": FORMAT_VERSION,
                      "id": f"{seq:08d}-{time.time_ns():019d}-{secrets.token_hex(3)}",
                      "run_id": run, "revision": revision, "turn": int(turn),
                      "created_at": datetime.now(timezone.utc).isoformat(),
                      "saved_due_to": str(meta.get("saved_due_to", "save")),
                      "n_messages": len(messages)}
            return header, _render(header, body)

        header = self.backend.write(run, build, self.max_checkpoints)
        self._last_saved_turn = int(turn)
        logger.info("checkpoint %s saved (run %s, revision %s, turn %s, %d bytes)", header["id"],
                    run, header["revision"], turn, header["size_bytes"])
        return header["id"]

    def save_on_exception(self, exc: BaseException, turn: int, messages: list[dict],
                          state: dict | None, tool_calls_made: list | None,
                          metadata: dict | None = None, *, run_id: str | None = None) -> str | None:
        """Save what can be resumed after a failure; never raises (see ``last_error``).

        An unfinished tool batch at the end of ``messages`` is cut off (a checkpoint must be a
        valid conversation) and kept in ``metadata["unsafe_tail"]`` for diagnosis and for a
        resume that wants to re-append it and fill results from the tool-result log.
        """
        meta = dict(metadata or {})
        meta.update(saved_due_to="exception", exception_type=type(exc).__name__,
                    exception_message=str(exc))
        if hasattr(exc, "to_dict"):
            meta["error"] = exc.to_dict()
        msgs = list(messages)
        bad = unsafe_index(msgs)
        if bad is not None:
            meta["unsafe_tail"] = msgs[bad[0]:]
            msgs = msgs[:bad[0]]
        try:
            cid = self.save(turn, msgs, state, tool_calls_made, meta, run_id=run_id)
        except Exception as save_exc:  # keep the original failure visible
            self.last_error = save_exc
            logger.error("could not save a checkpoint after %s: %s", type(exc).__name__, save_exc)
            return None
        logger.info("checkpoint %s saved after %s", cid, type(exc).__name__)
        return cid

    # -- reading
    def load(self, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The checkpoint with this id, or the newest in the store (``None``/``"latest"``).

        Returns ``None`` only when no id was given and the store is empty; an unknown id raises
        ``checkpoint_not_found``; a corrupt or unknown-version one raises naming its file.
        """
        if checkpoint_id == "latest":
            checkpoint_id = None
        return self.backend.read(checkpoint_id)

    def resume(self, checkpoint_id: str | None = "latest") -> Checkpoint | None:
        """``load`` and continue that run here: binds ``run_id`` and the auto-save turn counter."""
        cp = self.load(checkpoint_id)
        if cp is not None:
            self.run_id = cp.run_id
            self._last_saved_turn = cp.turn
        return cp

    def list_checkpoints(self, run_id: str | None = None) -> list[dict]:
        """Oldest first: id, run_id, revision, turn, created_at, saved_due_to, size_bytes, path.

        A file whose header cannot be read is listed with ``"error": "checkpoint_corrupt"``.
        """
        rows = self.backend.headers()
        return [r for r in rows if run_id is None or r.get("run_id") == run_id]

    def delete_checkpoint(self, checkpoint_id: str) -> bool:
        """Remove one checkpoint; True if it existed."""
        return self.backend.delete(checkpoint_id)

    def clear_all(self) -> int:
        """Remove every checkpoint and tool result in the store; returns checkpoints removed."""
        self._last_saved_turn = 0
        return self.backend.clear()

    # -- durable tool-call log ("no re-execution")
    def record_tool_result(self, run_id: str, tool_call_id: str, name: str, result: str,
                           success: bool, error_code: str | None = None, *,
                           arguments: dict | None = None, turn: int | None = None) -> bool:
        """Durably record a finished tool call before the run goes on.

        The first record for ``(run_id, tool_call_id)`` wins: that is what the model was shown.
        Returns False when the call was already recorded.
        """
        record = {"run_id": self._check_run_id(run_id), "tool_call_id": str(tool_call_id),
                  "name": str(name), "result": str(result), "success": bool(success),
                  "error_code": error_code,
                  "arguments": None if arguments is None else _plain(arguments, "arguments", True),
                  "turn": turn, "recorded_at": datetime.now(timezone.utc).isoformat()}
        for secret in self._secrets:
            record["result"] = record["result"].replace(secret, REDACTED)
        return self.backend.record_tool_result(record)

    def get_tool_result(self, run_id: str, tool_call_id: str) -> dict | None:
        """The recorded outcome of this call, or None if it never completed."""
        return self.completed_tool_calls(run_id).get(str(tool_call_id))

    def completed_tool_calls(self, run_id: str) -> dict[str, dict]:
        """Every recorded call of a run: ``{tool_call_id: record}`` in completion order."""
        return self.backend.tool_results(self._check_run_id(run_id))

    def __repr__(self) -> str:
        return (f"CheckpointManager({str(self.checkpoint_dir)!r}, store={type(self.backend).__name__}, "
                f"run_id={self.run_id!r})")

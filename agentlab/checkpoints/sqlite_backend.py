"""Checkpoints and the tool-result log in one SQLite file (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``; picked by ``CheckpointManager(store="sqlite")`` or a
``.db``/``.sqlite`` path. Stdlib ``sqlite3``, the embedded default for real use:

- table ``checkpoints``: the document of ``agentlab.checkpoints.document`` in ``body``, plus its
  header fields as columns (listing reads no bodies);
- table ``tool_results`` (primary key ``run_id, tool_call_id``): the first record of a call
  wins (``INSERT OR IGNORE``), committed before the caller moves on; ``tool_results_since``
  reads only the rows after a rowid cursor (index ``tool_results_by_run``);
- retention is per run (a run never loses its latest checkpoint to another run's saves); a
  run's tool results are deleted with its last checkpoint (``delete``, ``delete_run``);
- WAL journal with ``synchronous=FULL`` (every commit is fsynced); ``BEGIN IMMEDIATE`` takes
  the write lock, so ``seq`` and ``revision`` are allocated once across processes.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CheckpointError
from .document import Checkpoint, parse_checkpoint

__all__ = ["SQLiteBackend"]


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
    CREATE INDEX IF NOT EXISTS tool_results_by_run ON tool_results (run_id);
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

    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict:
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
                if max_keep is not None:  # this run's oldest only: never another run's latest
                    con.execute("DELETE FROM checkpoints WHERE run_id=? AND seq NOT IN (SELECT "
                                "seq FROM checkpoints WHERE run_id=? ORDER BY seq DESC LIMIT ?)",
                                (run_id, run_id, max_keep))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return {**header, "size_bytes": size}

    def read(self, checkpoint_id: str | None) -> Checkpoint | None:
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
            return parse_checkpoint(row[1], self.where(row[0]))

    def headers(self) -> list[dict]:
        with self._connect() as con:
            if con is None:
                return []
            rows = con.execute("SELECT id, run_id, revision, turn, created_at, format_version, "
                               "saved_due_to, n_messages, size_bytes FROM checkpoints "
                               "ORDER BY seq").fetchall()
        keys = ("id", "run_id", "revision", "turn", "created_at", "format_version",
                "saved_due_to", "n_messages", "size_bytes")
        return [{**dict(zip(keys, r)), "path": self.where(r[0])} for r in rows]

    def delete(self, checkpoint_id: str) -> bool:
        """Remove one checkpoint; the run's tool-result log goes with its last checkpoint."""
        with self._connect() as con:
            if con is None:
                return False
            row = con.execute("SELECT run_id FROM checkpoints WHERE id=?", (checkpoint_id,)).fetchone()
            if row is None:
                return False
            with self._transaction(con):
                con.execute("DELETE FROM checkpoints WHERE id=?", (checkpoint_id,))
                con.execute("DELETE FROM tool_results WHERE run_id=? AND NOT EXISTS (SELECT 1 "
                            "FROM checkpoints WHERE run_id=?)", (row[0], row[0]))
            return True

    def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its tool-result log."""
        with self._connect() as con:
            if con is None:
                return 0
            with self._transaction(con):
                n = con.execute("DELETE FROM checkpoints WHERE run_id=?", (run_id,)).rowcount
                con.execute("DELETE FROM tool_results WHERE run_id=?", (run_id,))
            return n

    @staticmethod
    @contextlib.contextmanager
    def _transaction(con: sqlite3.Connection) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back if anything fails."""
        con.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def clear(self) -> int:
        with self._connect() as con:
            if con is None:
                return 0
            n = con.execute("DELETE FROM checkpoints").rowcount
            con.execute("DELETE FROM tool_results")
            return n

    def record_tool_result(self, record: dict) -> bool:
        with self._connect(write=True) as con:
            cur = con.execute(
                "INSERT OR IGNORE INTO tool_results VALUES (?,?,?,?,?,?,?,?,?)",
                (record["run_id"], record["tool_call_id"], record["name"], record["result"],
                 int(record["success"]), record["error_code"],
                 None if record["arguments"] is None else json.dumps(record["arguments"]),
                 record["turn"], record["recorded_at"]))
            return cur.rowcount > 0  # autocommit: committed (and fsynced) when execute returns

    _COLUMNS = ("run_id", "tool_call_id", "name", "result", "success", "error_code",
                "arguments", "turn", "recorded_at")

    def tool_results_since(self, run_id: str, cursor: int | None
                           ) -> tuple[list[dict] | None, int | None]:
        """Rows of ``run_id`` after rowid ``cursor`` (one indexed range read), and the new cursor;
        ``(None, None)`` when the row at ``cursor`` is gone (the log was cleared since)."""
        with self._connect() as con:
            if con is None:
                return ([], None) if cursor is None else (None, None)
            if cursor is not None and con.execute(
                    "SELECT 1 FROM tool_results WHERE rowid=? AND run_id=?",
                    (cursor, run_id)).fetchone() is None:
                return None, None
            rows = con.execute("SELECT rowid, " + ", ".join(self._COLUMNS) + " FROM tool_results "
                               "WHERE run_id=? AND rowid>? ORDER BY rowid",
                               (run_id, cursor or 0)).fetchall()
        out = []
        for r in rows:
            rec = dict(zip(self._COLUMNS, r[1:]))
            rec["success"] = bool(rec["success"]) if isinstance(rec["success"], int) else rec["success"]
            if rec["arguments"] is not None:
                try:
                    rec["arguments"] = json.loads(rec["arguments"])
                except (TypeError, ValueError, RecursionError):
                    pass  # left a string: the manager's shape check names the problem
            out.append(rec)
        return out, (rows[-1][0] if rows else cursor)

    def tool_results(self, run_id: str) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for rec in self.tool_results_since(run_id, None)[0] or ():
            out.setdefault(rec["tool_call_id"], rec)
        return out

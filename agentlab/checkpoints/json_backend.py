"""Checkpoints as JSON files in a folder, and the tool-result log as JSON lines (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``; picked by ``CheckpointManager(store=None|"json")``.

- one file ``<id>.json`` per checkpoint, written with ``agentlab.atomic.atomic_write`` (temp
  file + fsync + ``os.replace`` + directory fsync): a crash leaves the old file or the new one;
- ``tool_results/<run_id>.jsonl`` is the durable tool-result log: one line per call, appended
  and fsynced before the caller moves on; a torn last line (a crash mid-append) is skipped.
  Appends and ``tool_results_since`` read only the bytes added since the caller's cursor
  (``(inode, offset)``), so a call costs the same at the 3,000th result as at the first;
- retention (``max_keep``) is per run: a run never loses its latest checkpoint to another
  run's saves, and a run's tool log is deleted with its last checkpoint (``delete_run``);
- temp files of a writer killed mid-write are swept when the store is opened and at each write;
- ``.lock`` serialises writers across processes (``flock``), so ids and revisions are
  allocated once.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CheckpointError
from ..atomic import atomic_write, fsync_dir, sweep_orphans
from .document import ID_RE, Checkpoint, parse_checkpoint, read_header

try:  # POSIX advisory locks; elsewhere the lock is per process only
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["JSONBackend"]

logger = logging.getLogger("agentlab.checkpoints")


class JSONBackend:
    """One JSON file per checkpoint, plus ``tool_results/<run_id>.jsonl`` (append + fsync)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.dir = Path(directory)
        self._tlock = threading.RLock()
        self._heads: dict[str, dict] = {}  # checkpoint files never change: headers read once
        self._seen: dict[str, tuple] = {}  # per run: (log cursor, ids recorded) for appends
        if self.dir.is_dir():  # temp files of a writer killed mid-write (kill -9)
            with self._locked():
                sweep_orphans(self.dir)

    # -- locking and files
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

    def write_file(self, path: Path, data: bytes) -> None:
        """Write one checkpoint file atomically (the crash soak kills processes in here)."""
        atomic_write(path, data, CheckpointError, "checkpoint_write_failed")

    def _ids(self) -> list[str]:
        if not self.dir.is_dir():
            return []
        return sorted(p.stem for p in self.dir.glob("*.json") if ID_RE.match(p.stem))

    def path(self, checkpoint_id: str) -> Path:
        return self.dir / f"{checkpoint_id}.json"

    def _header(self, checkpoint_id: str) -> dict:
        head = self._heads.get(checkpoint_id)
        if head is None:
            head = self._read_header(checkpoint_id)
            if head and "error" not in head:
                self._heads[checkpoint_id] = head
        return head

    def _read_header(self, checkpoint_id: str) -> dict:
        path = self.path(checkpoint_id)
        try:
            with open(path, "rb") as fh:
                head = read_header(fh.readline())
            size = path.stat().st_size
        except FileNotFoundError:
            return {}
        if head is None:
            return {"id": checkpoint_id, "path": str(path), "size_bytes": size,
                    "error": "checkpoint_corrupt"}
        return {**head, "path": str(path), "size_bytes": size}

    # -- checkpoints
    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict:
        """Cost: one directory listing and one header per *new* file (headers are cached);
        retention is per run, so the folder holds at most ``max_keep`` files per run."""
        with self._locked():
            sweep_orphans(self.dir)  # left by a writer that crashed mid-write
            ids = self._ids()
            seq = int(ids[-1][:8]) + 1 if ids else 1
            mine = [i for i in ids if self._header(i).get("run_id") == run_id]
            revision = 1 + max((self._header(i).get("revision", 0) for i in mine), default=0)
            header, text = build(seq, revision)
            data = text.encode("utf-8")
            self.write_file(self.path(header["id"]), data)
            mine.append(header["id"])
            if max_keep is not None:  # only this run's oldest: never another run's latest
                for old in mine[:-max_keep]:
                    self.path(old).unlink(missing_ok=True)
                    self._heads.pop(old, None)
            return {**header, "size_bytes": len(data)}

    def read(self, checkpoint_id: str | None) -> Checkpoint | None:
        for _ in range(20):  # "latest" may be pruned by another process while we read it
            latest = checkpoint_id is None
            ids = self._ids() if latest else [checkpoint_id]
            if not ids:
                return None
            cid = ids[-1]
            path = self.path(cid)
            try:
                if not ID_RE.match(cid):
                    raise FileNotFoundError(cid)
                data = path.read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                if latest:
                    continue  # pruned since the listing: list again
                break
            return parse_checkpoint(data, str(path))
        raise CheckpointError("checkpoint_not_found", f"no checkpoint {checkpoint_id or 'latest'!r} "
                              f"in {self.dir}; list_checkpoints() shows what exists",
                              details={"id": checkpoint_id})

    def headers(self) -> list[dict]:
        return [h for h in map(self._header, self._ids()) if h]

    def delete(self, checkpoint_id: str) -> bool:
        """Remove one checkpoint; the run's tool-result log goes with its last checkpoint."""
        if not ID_RE.match(checkpoint_id) or not self.dir.is_dir():
            return False
        with self._locked():
            run_id = self._header(checkpoint_id).get("run_id")
            path = self.path(checkpoint_id)
            existed = path.exists()
            path.unlink(missing_ok=True)
            self._heads.pop(checkpoint_id, None)
            if run_id and not any(self._header(i).get("run_id") == run_id for i in self._ids()):
                self._drop_log(run_id)
            return existed

    def delete_run(self, run_id: str) -> int:
        """Remove every checkpoint of ``run_id`` and its tool-result log."""
        if not self.dir.is_dir():
            return 0
        with self._locked():
            mine = [i for i in self._ids() if self._header(i).get("run_id") == run_id]
            for i in mine:
                self.path(i).unlink(missing_ok=True)
                self._heads.pop(i, None)
            self._drop_log(run_id)
            return len(mine)

    def _drop_log(self, run_id: str) -> None:
        self._log_path(run_id).unlink(missing_ok=True)
        self._seen.pop(run_id, None)

    def clear(self) -> int:
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
            self._heads.clear()
            self._seen.clear()
            return len(ids)

    # -- tool-result log
    def _log_path(self, run_id: str) -> Path:
        return self.dir / "tool_results" / f"{run_id}.jsonl"

    def _read_tail(self, path: Path, cursor: tuple | None) -> tuple[list[dict] | None, tuple | None]:
        """Records appended to ``path`` after ``cursor`` (``(inode, offset)``), and the new cursor.

        Reads only the new bytes, up to the last complete line: a line still being written is
        read next time. ``(None, None)`` when the file was replaced or shrank since ``cursor``.
        """
        try:
            with open(path, "rb") as fh:
                st = os.fstat(fh.fileno())
                if cursor is not None and (cursor[0] != st.st_ino or cursor[1] > st.st_size):
                    return None, None
                offset = 0 if cursor is None else cursor[1]
                fh.seek(offset)
                data = fh.read()
        except FileNotFoundError:
            return (None, None) if cursor is not None else ([], None)
        end = data.rfind(b"\n") + 1
        out = []
        for line in data[:end].split(b"\n"):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except (ValueError, RecursionError):  # torn (or hostile: nested too deeply)
                # Only a crash mid-append makes such a line (each record is one write + fsync,
                # and the caller moves on only after it). That call never completed: skip it.
                logger.info("skipping a torn line in %s", path)
        return out, (st.st_ino, offset + end)

    def record_tool_result(self, record: dict) -> bool:
        with self._locked():
            path = self._log_path(record["run_id"])
            seen = self._seen.get(record["run_id"])
            new, cursor = self._read_tail(path, seen[0] if seen else None)
            if new is None:  # replaced since: read it whole
                seen, (new, cursor) = None, self._read_tail(path, None)
            ids = seen[1] if seen else set()
            ids.update(r["tool_call_id"] for r in new
                       if isinstance(r, dict) and isinstance(r.get("tool_call_id"), str))
            if record["tool_call_id"] in ids:
                self._seen[record["run_id"]] = (cursor, ids)
                return False
            path.parent.mkdir(exist_ok=True)
            created = not path.exists()
            size = path.stat().st_size if not created else 0
            torn = cursor is not None and size > cursor[1]  # a crash left half a line
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
            data = (b"\n" if torn else b"") + line.encode("utf-8")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)  # durable before the caller moves on
                st = os.fstat(fd)
            finally:
                os.close(fd)
            if created:
                fsync_dir(path.parent)
            ids.add(record["tool_call_id"])
            self._seen[record["run_id"]] = ((st.st_ino, st.st_size), ids)
            return True

    def tool_results_since(self, run_id: str, cursor: tuple | None
                           ) -> tuple[list[dict] | None, tuple | None]:
        return self._read_tail(self._log_path(run_id), cursor)

    def tool_results(self, run_id: str) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for rec in self._read_tail(self._log_path(run_id), None)[0] or ():
            key = rec.get("tool_call_id") if isinstance(rec, dict) else None
            out.setdefault(key, rec)  # the first record of a call wins
        return out

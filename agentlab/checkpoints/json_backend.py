"""Checkpoints as JSON files in a folder, and the tool-result log as JSON lines (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``; picked by ``CheckpointManager(store=None|"json")``.

- one file ``<id>.json`` per checkpoint, written with ``agentlab.atomic.atomic_write`` (temp
  file + fsync + ``os.replace`` + directory fsync): a crash leaves the old file or the new one;
  a temp file left by a killed writer is swept by the next write;
- ``tool_results/<run_id>.jsonl`` is the durable tool-result log: one line per call, appended
  and fsynced before the caller moves on; a torn last line (a crash mid-append) is skipped;
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
from ..atomic import atomic_write, fsync_dir
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
        with self._locked():
            for stale in self.dir.glob(".*.tmp"):  # left by a writer that crashed mid-write
                stale.unlink(missing_ok=True)
            ids = self._ids()
            seq = int(ids[-1][:8]) + 1 if ids else 1
            revision = 1 + max((h.get("revision", 0) for h in map(self._header, ids)
                                if h.get("run_id") == run_id), default=0)
            header, text = build(seq, revision)
            data = text.encode("utf-8")
            self.write_file(self.path(header["id"]), data)
            ids.append(header["id"])
            if max_keep is not None:
                for old in ids[:-max_keep]:
                    self.path(old).unlink(missing_ok=True)
            return {**header, "size_bytes": len(data)}

    def read(self, checkpoint_id: str | None) -> Checkpoint | None:
        if checkpoint_id is None:
            ids = self._ids()
            if not ids:
                return None
            checkpoint_id = ids[-1]
        path = self.path(checkpoint_id)
        if not ID_RE.match(checkpoint_id) or not path.is_file():
            raise CheckpointError("checkpoint_not_found", f"no checkpoint {checkpoint_id!r} in "
                                  f"{self.dir}; list_checkpoints() shows what exists",
                                  details={"id": checkpoint_id})
        return parse_checkpoint(path.read_bytes(), str(path))

    def headers(self) -> list[dict]:
        return [h for h in map(self._header, self._ids()) if h]

    def delete(self, checkpoint_id: str) -> bool:
        if not ID_RE.match(checkpoint_id) or not self.dir.is_dir():
            return False
        with self._locked():
            path = self.path(checkpoint_id)
            existed = path.exists()
            path.unlink(missing_ok=True)
            return existed

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

    def record_tool_result(self, record: dict) -> bool:
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
                fsync_dir(path.parent)
            return True

    def tool_results(self, run_id: str) -> dict[str, dict]:
        return self._read_log(self._log_path(run_id))[0]

"""Atomic file writes: a crash leaves the old file or the new one, never half of each.

Taught in ``notebooks/05_state_store.ipynb`` (``agentlab.state`` re-exports both functions);
the one helper behind ``StateStore`` (chapter 05) and the checkpoint files (chapter 11).
"""
from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from .errors import AgentError, StateError

__all__ = ["atomic_write", "fsync_dir"]


def atomic_write(path: str | os.PathLike, data: bytes, error: type[AgentError] = StateError,
                 code: str = "state_write_failed") -> None:
    """Replace the file at ``path`` with ``data``; a crash leaves the old file or the new one.

    1. write a temporary file next to ``path`` (same file system, so the rename is atomic),
    ``.<name>.<pid>.<random>.tmp``: dot-prefixed, so no store lists it; 2. flush and fsync it;
    3. ``os.replace`` it over ``path``: readers see the old file or the new one, never half;
    4. ``fsync_dir``: the rename survives a power cut.

    On failure the temporary file is removed and an ``OSError`` becomes ``error(code, ...)``
    (the caller's ``AgentError`` subclass) naming the file, with the ``OSError`` as
    ``__cause__``; ``path`` keeps its old content. Only a killed process leaves a temporary
    file behind (callers sweep ``.*.tmp``). The directory must exist.
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):  # never hide the original failure
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise error(code, f"could not write {path}: {exc}; the previous content is kept",
                        details={"file": str(path)}) from exc
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make a rename or a new file in ``directory`` durable (best effort, POSIX only)."""
    if os.name == "posix":
        try:
            fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError:
            pass  # some file systems refuse to fsync a directory

"""Atomic file writes: a crash leaves the old file or the new one, never half of each.

Taught in ``notebooks/05_state_store.ipynb`` (``agentlab.state`` re-exports both functions);
the one helper behind ``StateStore`` (chapter 05) and the checkpoint files (chapter 11).

Also here, because both stores name files after caller input: ``portable_name_problem``, the
rules a name must keep to be the same file on Linux, macOS and Windows, and
``sweep_orphans``, which removes the temp files of writers killed mid-write.

Portable names (``portable_name_problem``), refused with the caller's ``invalid_key``:

- empty, or more than ``MAX_NAME_BYTES`` (200) bytes in UTF-8 (file systems allow 255 bytes
  per name; the store adds ``.json`` and the temp-file decoration);
- not encodable as UTF-8 (a lone surrogate such as ``"\\ud800"``);
- a control character, or one of ``/ \\ : * ? " < > |`` (separators, and what Windows refuses);
- a leading ``.`` (``..`` leaves the directory; dot-files are the stores' own), a trailing
  space or dot (Windows drops them, so two names would collide);
- a Windows device name, with any extension and in any case: ``CON PRN AUX NUL CONIN$
  CONOUT$ COM0-COM9 LPT0-LPT9`` (and the superscript-digit forms ``COM¹``...).
"""
from __future__ import annotations

import contextlib
import os
import re
import secrets
from pathlib import Path

from .errors import AgentError, StateError

__all__ = ["atomic_write", "fsync_dir", "sweep_orphans", "portable_name_problem",
           "MAX_NAME_BYTES"]

#: Longest name (UTF-8 bytes) a store accepts; see ``portable_name_problem``.
MAX_NAME_BYTES = 200
_FORBIDDEN = re.compile(r'[/\\:*?"<>|\x00-\x1f\x7f]')
_DEVICES = {"con", "prn", "aux", "nul", "conin$", "conout$",
            *(f"{p}{d}" for p in ("com", "lpt") for d in "0123456789\u00b9\u00b2\u00b3")}
_TMP_RE = re.compile(r"^\..+\.(\d+)(?:\.[0-9a-f]+)?\.tmp$")


def portable_name_problem(name: str) -> str | None:
    """Why ``name`` is not a portable file name (see the module docstring), or None."""
    if not isinstance(name, str):
        return f"names are strings, not {type(name).__name__}"
    if not name:
        return "it is empty"
    try:
        size = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        return "it is not valid Unicode text (a lone surrogate)"
    if size > MAX_NAME_BYTES:
        return f"it is {size} bytes in UTF-8, more than {MAX_NAME_BYTES}"
    match = _FORBIDDEN.search(name)
    if match:
        return (f"it contains {match.group()!r} (path separators, control characters and "
                "':*?\"<>|' are not portable file names)")
    if name.startswith("."):
        return "it starts with '.' ('..' leaves the directory; dot-files are the store's own)"
    if name.endswith((" ", ".")):
        return "it ends with a space or a dot (Windows drops those, two names would collide)"
    if name.split(".")[0].rstrip(" ").lower() in _DEVICES:
        return "it is a Windows device name (CON, PRN, AUX, NUL, CONIN$, COM1, LPT1, ...)"
    return None


def sweep_orphans(directory: str | os.PathLike) -> int:
    """Remove ``atomic_write`` temp files whose writer is dead (killed mid-write); returns count.

    A temp file names its writer's pid; one of a live process (this one included) is left
    alone, since that write may still be in flight."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        match = _TMP_RE.match(name)
        if match is None:
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, name))
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or cannot tell: keep its file
    return True


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

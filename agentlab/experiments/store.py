"""Where a sweep keeps its work: an append-only journal of finished cells and a manifest.

``DIR/cells.jsonl`` gets one JSON line per finished cell, written and flushed the moment the
cell comes back, so a sweep that is interrupted (Ctrl+C, a killed process, a closed laptop)
loses at most the cells that were running. On restart the journal says which cells are done;
only the others run. A line cut short by a kill is the last line: it is ignored and trimmed
before the next append. ``DIR/manifest.json`` (written atomically through
``agentlab.state.StateStore``) records the experiment, the package versions, the seeds, the
start and end times and the status (``running``, ``interrupted``, ``complete``).

Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

from ..errors import ConfigError
from ..state import StateStore

__all__ = ["SweepStore", "package_versions", "replace_file", "JOURNAL", "MANIFEST"]

JOURNAL = "cells.jsonl"
MANIFEST = "manifest.json"
_VERSIONED = ("agentlab", "openai", "tiktoken", "numpy", "pandas", "pyarrow", "scipy",
              "matplotlib", "tqdm")


def package_versions() -> dict[str, str | None]:
    """Python, platform and the installed versions of the packages a sweep depends on."""
    out: dict[str, str | None] = {"python": sys.version.split()[0],
                                  "platform": platform.platform()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def replace_file(path: Path, write: Callable[[Path], Any]) -> None:
    """Write ``path`` through ``write(tmp_path)`` then rename it into place (never half a file).

    The single-file counterpart of ``StateStore``'s atomic save, for files written by pandas.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


class SweepStore:
    """The journal and manifest of one sweep directory (created on first write)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.dir = Path(directory)
        self.journal = self.dir / JOURNAL
        self._file: Any = None

    # -- journal ------------------------------------------------------------------------------
    def records(self) -> dict[str, dict]:
        """Finished cells by ``cell_id`` (a repeated id keeps its first record)."""
        out: dict[str, dict] = {}
        if not self.journal.exists():
            return out
        lines = self.journal.read_text(encoding="utf-8").split("\n")
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                if i == len(lines) - 1:  # the tail of a line cut short by a kill
                    continue
                raise ConfigError("journal_corrupt", f"line {i + 1} of {self.journal} is not "
                                  "JSON; move the file away to start the sweep afresh") from None
            out.setdefault(rec["cell_id"], rec)
        return out

    def append(self, record: dict) -> None:
        """Add one finished cell; flushed at once (durable against a killed process)."""
        if self._file is None:
            self.dir.mkdir(parents=True, exist_ok=True)
            self._trim_torn_tail()
            self._file = open(self.journal, "a", encoding="utf-8")
        self._file.write(json.dumps(record) + "\n")  # key order kept: it is the column order
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            self._file = None

    def _trim_torn_tail(self) -> None:
        if not self.journal.exists() or self.journal.stat().st_size == 0:
            return
        data = self.journal.read_bytes()
        if not data.endswith(b"\n"):
            with open(self.journal, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    # -- manifest -----------------------------------------------------------------------------
    def manifest(self) -> dict | None:
        return StateStore(self.dir).load("manifest")

    def write_manifest(self, manifest: dict) -> None:
        StateStore(self.dir).save("manifest", manifest)

    def check_compatible(self, spec_hash: str, force: bool) -> None:
        """Refuse to mix two different experiments in one directory unless ``force``."""
        old = self.manifest()
        if old and old.get("spec_hash") != spec_hash and not force:
            raise ConfigError("sweep_mismatch", f"{self.dir} holds another experiment "
                              f"({old.get('name')!r}, spec {old.get('spec_hash')}); use another "
                              "output directory, or force=True (--force) to reuse the cells "
                              "both share and rewrite its tables")


def now_iso(t: float | None = None) -> str:
    """Wall-clock time as ISO 8601 in UTC (for manifests)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if t is None else t))

"""Where checkpoints live: what a backend must offer, and the two built in (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``; ``agentlab.checkpoints.CheckpointManager`` is the
public face and picks a backend from its ``store=`` argument (``make_backend``). Nothing here
scrubs secrets or checks safe points: the manager does that before a document reaches a backend.

- ``JSONBackend`` (``json_backend.py``): one file per checkpoint in a folder, plus a JSON-lines
  tool-result log per run; the default.
- ``SQLiteBackend`` (``sqlite_backend.py``): both in one SQLite file, WAL, ``synchronous=FULL``.
- The document both store, its ids and format versions: ``document.py``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Protocol

from ..errors import ConfigError
from .document import FORMAT_VERSION, Checkpoint
from .json_backend import JSONBackend
from .sqlite_backend import SQLiteBackend

__all__ = ["FORMAT_VERSION", "Checkpoint", "CheckpointBackend", "JSONBackend", "SQLiteBackend",
           "make_backend"]


class CheckpointBackend(Protocol):
    """What a store must offer; ``JSONBackend`` and ``SQLiteBackend`` are the two built in.

    ``write(run_id, build, max_keep)`` allocates the next ``seq`` and the run's next
    ``revision`` under its lock, calls ``build(seq, revision) -> (header, text)``, stores
    ``text`` atomically, keeps the newest ``max_keep`` checkpoints *of that run* (never
    another run's) and returns the header with ``size_bytes``. ``record_tool_result`` returns
    False when the call was already recorded. ``read(None)`` is the newest checkpoint, and
    must not fail with ``FileNotFoundError`` when another process prunes meanwhile.

    Optional (the manager falls back when a backend lacks them):

    - ``tool_results_since(run_id, cursor) -> (records, cursor)``: the records appended after
      ``cursor`` (an opaque value it returned before; ``None``: from the start), and the new
      cursor; ``(None, None)`` when the log was replaced since ``cursor``. Without it every
      lookup reads the whole log (a turn then costs more the longer the run).
    - ``delete_run(run_id) -> int``: every checkpoint of a run and its tool-result log.
      ``delete`` of a run's last checkpoint should take its tool-result log along.
    """

    def write(self, run_id: str, build: Callable[[int, int], tuple[dict, str]],
              max_keep: int | None) -> dict: ...
    def read(self, checkpoint_id: str | None) -> Checkpoint | None: ...
    def headers(self) -> list[dict]: ...
    def delete(self, checkpoint_id: str) -> bool: ...
    def clear(self) -> int: ...
    def record_tool_result(self, record: dict) -> bool: ...
    def tool_results(self, run_id: str) -> dict[str, dict]: ...
    # optional: tool_results_since(run_id, cursor) -> (list[dict] | None, cursor), delete_run


def make_backend(store: Any, checkpoint_dir: str | os.PathLike) -> CheckpointBackend:
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

"""Where checkpoints live: what a backend must offer, and the two built in (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``; ``agentlab.checkpoints.CheckpointManager`` is the
public face and picks a backend from its ``store=`` argument (``make_backend``). Nothing here
scrubs secrets or checks safe points: the manager does that before a document reaches a backend.

- ``JSONBackend`` (``json_backend.py``): one file per checkpoint in a folder, plus a JSON-lines
  tool-result log per run; the default.
- ``SQLiteBackend`` (``sqlite_backend.py``): both in one SQLite file, WAL, ``synchronous=FULL``.
- The document both store, its ids and format versions: ``document.py``.
- Backends of later chapters plug in by URL scheme, without this module importing them
  (``STORE_SCHEMES``): a ``redis://`` store is chapter 13's ``agentlab.fleet`` backend, found
  through the ``agentlab.checkpoint_stores`` entry point that ``pyproject.toml`` declares, or
  registered at run time with ``register_store_scheme``.
"""
from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Callable, Protocol

from ..errors import ConfigError
from .document import FORMAT_VERSION, Checkpoint
from .json_backend import JSONBackend
from .sqlite_backend import SQLiteBackend

__all__ = ["FORMAT_VERSION", "Checkpoint", "CheckpointBackend", "JSONBackend", "SQLiteBackend",
           "make_backend", "register_store_scheme", "STORE_SCHEMES", "ENTRY_POINT_GROUP"]

#: The entry-point group where packages declare backends for URL schemes (``redis = ...``).
ENTRY_POINT_GROUP = "agentlab.checkpoint_stores"
#: ``{url scheme: factory(url) -> backend}``, filled by ``register_store_scheme`` and, on first
#: use of a scheme, from the entry points of ``ENTRY_POINT_GROUP``.
STORE_SCHEMES: dict[str, Callable[[str], Any]] = {}


def register_store_scheme(scheme: str, factory: Callable[[str], Any]) -> None:
    """Make ``CheckpointManager(store="<scheme>://...")`` use ``factory(url)`` as its backend."""
    STORE_SCHEMES[scheme.lower()] = factory


def _backend_for_url(url: str) -> Any:
    scheme = url.split("://", 1)[0].lower()
    if scheme not in STORE_SCHEMES:
        for ep in entry_points(group=ENTRY_POINT_GROUP, name=scheme):
            STORE_SCHEMES[scheme] = ep.load()
            break
        else:
            raise ConfigError("invalid_store", f"no checkpoint backend handles {scheme}:// URLs; "
                              "redis:// needs agentlab installed with its dependencies "
                              "(pip install -e .), others register_store_scheme()")
    return STORE_SCHEMES[scheme](url)


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
    if isinstance(store, str) and "://" in store:
        return _backend_for_url(store)
    if store is None or store == "json":
        return JSONBackend(checkpoint_dir)
    if store == "sqlite":
        return SQLiteBackend(Path(checkpoint_dir) / "checkpoints.db")
    if isinstance(store, (str, os.PathLike)) and str(store).endswith((".db", ".sqlite", ".sqlite3")):
        return SQLiteBackend(store)
    if all(hasattr(store, m) for m in ("write", "read", "headers", "record_tool_result")):
        return store
    raise ConfigError("invalid_store", f"store={store!r} is not understood: use None or 'json' "
                      "(JSON files), 'sqlite', a path ending in .db/.sqlite, a URL such as "
                      "redis://127.0.0.1:6379/0, or a backend object")

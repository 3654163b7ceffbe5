"""Chapter 11 — checkpoints that survive a crash, and runs that resume without re-running tools.

Taught in ``notebooks/11_checkpoints.ipynb``:

- ``manager.py``: ``CheckpointManager`` (save, load the newest, retention, the tool-result log);
- ``store.py``: the on-disk document and the JSON-file and SQLite backends;
- ``durable.py``: how a runtime's run is made durable (resume, checkpoints at safe points,
  tool results recorded as they complete and never run twice).
"""
from .manager import (REDACTED, CheckpointManager, idempotency_key, is_safe_point, new_run_id,
                      pending_tool_calls, scrub_secrets, unsafe_index)
from .store import FORMAT_VERSION, Checkpoint, CheckpointBackend, JSONBackend, SQLiteBackend

__all__ = [
    "FORMAT_VERSION", "REDACTED", "Checkpoint", "CheckpointManager", "CheckpointBackend",
    "JSONBackend", "SQLiteBackend", "is_safe_point", "unsafe_index", "pending_tool_calls",
    "idempotency_key", "scrub_secrets", "new_run_id",
]

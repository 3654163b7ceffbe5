"""Chapter 11 — checkpoints that survive a crash, and runs that resume without re-running tools.

Taught in ``notebooks/11_checkpoints.ipynb``:

- ``manager.py``: ``CheckpointManager`` (save, load the newest, retention, the tool-result log);
- ``durable.py``: how a runtime's runs are made durable, attached from outside (the resume
  phase, checkpoints at safe points, tool results recorded as they complete, never run twice);
- ``resume_checks.py``: whether a checkpoint fits the run resuming from it (task, metadata);
- ``document.py``: the ``Checkpoint`` record, its ids, format version and on-disk text;
- ``store.py``: what a backend offers; ``json_backend.py`` and ``sqlite_backend.py``;
- ``tool_log.py``: the tool-result log of a run, indexed in memory and read incrementally;
- ``run_ids.py``: what a ``run_id`` looks like (``new_run_id``, ``check_run_id``);
- ``calls.py``: a long run's ``tool_calls_made`` list, encoded once and saved in chunks;
- ``safe_point.py``: when a history can be saved (and what ``load`` accepts as a
  conversation); ``redact.py``: what never reaches disk (through ``agentlab.redaction``);
- ``credentials.py``: a held turn's credential arguments, masked on disk, kept in this
  process's memory for its resume (``credentials_not_saved`` anywhere else).
"""
from .document import FORMAT_VERSION, Checkpoint
from .durable import DurableExecutor, DurableRuns, ReplayedResult, attach, idempotency_key
from .manager import CheckpointManager, new_run_id
from .redact import REDACTED, scrub_secrets
from .safe_point import is_safe_point, pending_tool_calls, unsafe_index
from .store import CheckpointBackend, JSONBackend, SQLiteBackend

__all__ = [
    "FORMAT_VERSION", "REDACTED", "Checkpoint", "CheckpointManager", "CheckpointBackend",
    "JSONBackend", "SQLiteBackend", "is_safe_point", "unsafe_index", "pending_tool_calls",
    "idempotency_key", "scrub_secrets", "new_run_id", "attach", "DurableRuns",
    "DurableExecutor", "ReplayedResult",
]

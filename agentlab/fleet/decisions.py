"""``approve`` / ``reject`` a paused run's call from anywhere that reaches its store (chapter 13).

Part of ``notebooks/13_fleet.ipynb``. The fleet's CLI and widgets decide without a runtime: they
name the checkpoint store (a ``redis://`` URL, a ``.db`` path, a JSON checkpoint folder, or a
``CheckpointManager``) and the run; the decision is written into the run's checkpoint
(``agentlab.approval.record_decision``), and whichever worker resumes the run next
finishes its held turn.
"""
from __future__ import annotations

import os
from typing import Any

from ..checkpoints import CheckpointManager
from ..approval import record_decision

__all__ = ["approve", "reject", "checkpoint_manager"]


def checkpoint_manager(store_or_url: Any) -> Any:
    """A ``CheckpointManager`` for a URL, a SQLite path, a JSON folder, or the manager itself."""
    if hasattr(store_or_url, "list_checkpoints"):
        return store_or_url
    text = os.fspath(store_or_url)
    if "://" in text or text.endswith((".db", ".sqlite", ".sqlite3")):
        return CheckpointManager(".agent_checkpoints", store=text)
    return CheckpointManager(text)  # a folder of JSON checkpoints


def approve(store_or_url: Any, run_id: str, call_id: str) -> dict:
    """Approve call ``call_id`` of paused run ``run_id``; returns the decision."""
    return record_decision(checkpoint_manager(store_or_url), run_id, call_id, approved=True)


def reject(store_or_url: Any, run_id: str, call_id: str, reason: str = "") -> dict:
    """Reject call ``call_id`` of paused run ``run_id`` (it never runs); returns the decision."""
    return record_decision(checkpoint_manager(store_or_url), run_id, call_id, approved=False,
                           reason=reason)

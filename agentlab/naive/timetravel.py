"""Resuming an old snapshot as if it were the present: the time-travel pitfall of chapter 16.

Shown and measured in ``notebooks/16_time_travel.ipynb`` beside ``agentlab.timetravel.replay``.
Do not use it for real runs. A snapshot-only store (book chapter on runtimes, 1.5) keeps each
revision's state but not the causal record of what the tools did after it; "going back to
revision 3" then means restoring that state and letting the agent continue. Every tool call
after the revision runs again, side effects included: the mail is sent twice, the report
written twice. ``resume_from_snapshot`` does exactly that: a copy of the revision in a fresh
store that has no tool-result log, resumed with chapter 11's own ``resume_from``.
"""
from __future__ import annotations

import tempfile
from typing import Any, Callable

from ..checkpoints import CheckpointManager

__all__ = ["resume_from_snapshot"]


def resume_from_snapshot(checkpoint: Any, make_runtime: Callable[[Any], Any]) -> Any:
    """Continue ``checkpoint`` (a loaded revision) without its durable log; the result.

    ``make_runtime(cm)`` builds the runtime with ``cm`` (a scratch store) attached."""
    with tempfile.TemporaryDirectory(prefix="agentlab-naive-") as scratch:
        cm = CheckpointManager(scratch, max_checkpoints=None)
        meta = {**checkpoint.metadata, "saved_due_to": "restored"}
        cid = cm.save(checkpoint.turn, checkpoint.messages, checkpoint.state,
                      checkpoint.tool_calls_made, meta, run_id=checkpoint.run_id)
        return make_runtime(cm).run(meta.get("task") or "", resume_from=cid)

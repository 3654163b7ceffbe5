"""Does a checkpoint fit the run that resumes from it? The task and metadata checks (chapter 11).

A resume (``DurableRuns.resume``) refuses, before anything runs, a checkpoint saved for another
task or one whose metadata was edited by hand. The task is compared by its digest
(``task_digest``, saved as ``metadata["task_sha256"]``), since the saved task text may be
redacted; older checkpoints without a digest are compared by their (redacted) text. The fields
a resume reads are type-checked (``check_metadata``) so that a hand-edited value raises
``CheckpointError("checkpoint_corrupt")`` naming the field instead of breaking the run's counters.
"""
from __future__ import annotations

import hashlib
from typing import Any

from ..errors import CheckpointError
from ..redaction import redact

__all__ = ["task_digest", "same_task", "check_metadata", "META_TYPES"]


def task_digest(task: Any) -> str | None:
    """A digest of the task: compared on resume, since the saved task text may be redacted."""
    if not isinstance(task, str):
        return None
    return hashlib.sha256(task.encode("utf-8", "surrogatepass")).hexdigest()


def same_task(task: str, meta: dict, secrets: tuple[str, ...]) -> bool:
    """True when ``task`` is the task ``meta`` was saved for (digest, else the redacted text)."""
    if isinstance(meta.get("task_sha256"), str):
        return meta["task_sha256"] == task_digest(task)
    return task == meta.get("task") or redact(task, secrets) == meta.get("task")


#: The metadata fields a resume relies on, with the types it accepts.
META_TYPES: dict[str, tuple[type, ...]] = {
    "task": (str, type(None)), "tools": (list, type(None)), "usage": (dict, type(None)),
    "elapsed_s": (int, float, type(None)), "saved_due_to": (str, type(None)),
    "model": (str, type(None)), "task_sha256": (str, type(None))}


def check_metadata(meta: dict, where: str, cid: str) -> None:
    """Refuse hand-edited metadata of the wrong type before it reaches the run's counters."""
    for key, types in META_TYPES.items():
        value = meta.get(key)
        ok = isinstance(value, types) and not (isinstance(value, bool) and key == "elapsed_s")
        if ok and key == "tools":
            ok = all(isinstance(t, str) for t in value or ())
        if ok and key == "usage":
            ok = all(isinstance((value or {}).get(k) or 0, int) and not isinstance(
                (value or {}).get(k), bool) for k in ("prompt_tokens", "completion_tokens",
                                                       "total_tokens"))
        if not ok:
            raise CheckpointError("checkpoint_corrupt", f"{where}: metadata[{key!r}] is "
                                  f"{type(value).__name__} {str(value)[:60]!r}, not what agentlab "
                                  "writes; the checkpoint was edited. Fix the field or load an "
                                  "older checkpoint", details={"id": cid, "field": key})

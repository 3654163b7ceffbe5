"""Fork a run at any revision with one change, and continue the fork as a run of its own.

Taught in ``notebooks/16_time_travel.ipynb``. Run identity as the book's chapter on runtimes
(1.4) asks: a new execution attempt of a task is a new ``run_id``; it records its parent
``(run_id, revision)`` and the ``task_id`` shared by every attempt of the task.

- ``fork(cm, run_id, revision, edit=...)`` reads that revision (``history.load_revision``),
  applies the edit to a copy (``edits.py``) and saves it as revision 1 of a new run, with
  ``metadata["parent"]``, ``["task_id"]``, ``["edit"]`` and ``["overrides"]`` (model or
  configuration the fork must run with). The parent run is not touched: one new checkpoint is
  written, under the new id.
- ``continue_fork(cm, fork_id, runtime)`` checks the runtime against the fork (task,
  capability snapshot, policy with the overrides: ``compat.check_compatible``), then runs it
  with chapter 11's ``resume_from``: the fork's later revisions are its own.

What a fork's calls do: the calls answered before the fork point are in its messages and never
run again; a call the continued fork makes is a call of the new run, which runs (and is
recorded in the fork's own durable log). To look at what already happened without running
anything, replay (``replay.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from ..checkpoints.run_ids import new_run_id
from ..errors import CheckpointError
from .compat import check_compatible
from .edits import Edit, apply_edits
from .history import load_revision

__all__ = ["Fork", "fork", "continue_fork", "task_id_of", "lineage"]

#: Metadata a fork does not inherit: they describe how the parent's revision ended.
_NOT_INHERITED = ("stopped_reason", "errors", "decided", "unsafe_tail", "exception_type",
                  "exception_message", "error")


@dataclass(frozen=True)
class Fork:
    """A new run made by ``fork``: its id, its first checkpoint, where it came from."""

    run_id: str
    checkpoint_id: str
    parent: dict
    task_id: str
    edit: str
    overrides: dict = field(default_factory=dict)


def task_id_of(meta: dict, run_id: str) -> str:
    """The task a run is an attempt of: recorded by a fork, else ``task-<digest>`` or its run."""
    if meta.get("task_id"):
        return str(meta["task_id"])
    digest = meta.get("task_sha256")
    return f"task-{digest[:16]}" if digest else f"task-of-{run_id}"


def fork(cm: Any, run_id: str, revision: int, *, edit: Edit | Iterable[Edit] | None = None,
         new_id: str | None = None) -> Fork:
    """Start a new run from ``run_id`` at ``revision`` with ``edit`` applied (see module doc)."""
    cp = load_revision(cm, run_id, revision)
    messages, overrides, described = apply_edits(edit, cp.messages)
    meta = {k: v for k, v in cp.metadata.items() if k not in _NOT_INHERITED}
    if meta.get("saved_due_to") == "completed" and messages and \
            messages[-1].get("role") == "assistant" and not overrides and edit is None:
        raise CheckpointError("run_finished", f"revision {revision} of run {run_id} is its final "
                              "answer; fork an earlier revision, or append a message to it",
                              details={"run_id": run_id, "revision": revision})
    parent = {"run_id": cp.run_id, "revision": cp.revision, "checkpoint_id": cp.id}
    task_id = task_id_of(cp.metadata, cp.run_id)
    overrides = {**(meta.get("overrides") or {}), **overrides}
    meta.update(saved_due_to="fork", parent=parent, task_id=task_id, edit=described,
                overrides=overrides)
    run = new_id or new_run_id()
    if cm.list_checkpoints(run):
        raise CheckpointError("run_exists", f"run {run!r} already has checkpoints; a fork is a "
                              "new run: pick another id", details={"run_id": run})
    cid = cm.save(cp.turn, messages, cp.state, cp.tool_calls_made, meta, run_id=run)
    return Fork(run, cid, parent, task_id, described, overrides)


def continue_fork(cm: Any, fork_run: str | Fork, runtime: Any, *, task: str | None = None,
                  allow: Iterable[str] = ()) -> Any:
    """Run the fork on ``runtime`` (which has ``cm`` attached) to a terminal state.

    Checks compatibility first (``IncompatibleRunError`` names what differs; ``allow=``
    overrides a category). Returns the ``AgentResult``."""
    run_id = fork_run.run_id if isinstance(fork_run, Fork) else fork_run
    rows = cm.list_checkpoints(run_id)
    if not rows:
        raise CheckpointError("checkpoint_not_found", f"no checkpoint of run {run_id!r}",
                              details={"run_id": run_id})
    cp = cm.load(rows[-1]["id"])
    task = cp.metadata.get("task") if task is None else task
    check_compatible(cp, runtime, task, allow=allow, overrides=cp.metadata.get("overrides"))
    return runtime.run(task or "", resume_from=cp.id)


def lineage(cm: Any, run_id: str) -> list[dict]:
    """``[{run_id, parent}, ...]``: this run, then its parent, its parent's parent, ... (``parent``
    is ``{run_id, revision, checkpoint_id}`` of the revision a fork started from, or None)."""
    chain, seen = [], set()
    while run_id and run_id not in seen:
        seen.add(run_id)
        rows = cm.list_checkpoints(run_id)
        if not rows:
            break
        first = cm.load(min(rows, key=lambda r: r["revision"])["id"])
        parent = first.metadata.get("parent")
        chain.append({"run_id": run_id, "parent": parent})
        run_id = parent["run_id"] if parent else None
    return chain

"""A run's history: every checkpoint is a *revision*; list them, and load any one read-only.

Taught in ``notebooks/16_time_travel.ipynb`` (book chapter on runtimes, 1.4-1.5: "a snapshot
store can keep an ordered history of states and offer time travel"). Chapter 11 saves a
checkpoint per safe point (``agentlab.checkpoints``); this module reads them back as a
timeline, through the public ``CheckpointManager`` only (``list_checkpoints`` and ``load``), so
the JSON and SQLite stores and the fleet's Redis store (chapter 13) all work alike.

- ``history(cm, run_id)`` -> one ``Revision`` per checkpoint of the run, oldest first: turn,
  why it was saved (its state), tokens, cost at the model table's prices, the tool calls still
  pending (a paused turn), and what changed since the previous revision (messages added, the
  tools called). A fork's first revision names its parent (``agentlab.timetravel.fork``).
- ``load_revision(cm, run_id, revision)`` -> that ``Checkpoint``, a private copy: changing it
  changes nothing in the store (nothing here ever writes).

Retention (``max_checkpoints``) may have pruned old revisions; the history lists the ones the
store still holds, and ``load_revision`` of a pruned one says so.
"""
from __future__ import annotations

import copy
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from ..checkpoints.document import Checkpoint
from ..checkpoints.safe_point import pending_tool_calls
from ..errors import CheckpointError
from ..models import cost_usd

__all__ = ["Revision", "history", "load_revision", "format_history", "changes_between"]


@dataclass(frozen=True)
class Revision:
    """One revision of a run, as listed by ``history`` (a summary; ``load_revision`` has all)."""

    run_id: str
    revision: int
    checkpoint_id: str
    turn: int
    state: str                     # saved_due_to: start, interval, completed, paused, fork, ...
    created_at: str
    n_messages: int
    tokens: int
    cost_usd: float | None
    pending_calls: list[str] = field(default_factory=list)  # "tool(call_id)" of a held turn
    changes: str = ""              # since the previous revision, in words
    parent: dict | None = None     # a fork's {run_id, revision, checkpoint_id}

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cost(meta: dict) -> float | None:
    usage, model = meta.get("usage") or {}, meta.get("model")
    if not model:
        return None
    spent = cost_usd(model, usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0)
    return None if math.isnan(spent) else round(spent, 6)


def _pending(cp: Checkpoint) -> list[str]:
    """The calls a revision still waits on: a held (paused) turn's, else unanswered ones."""
    held = (cp.metadata.get("held_turn") or {}).get("pending")
    if held:
        return [f"{p['tool']}({p['call_id']})" for p in held]
    return [f"{tc['function']['name']}({tc['id']})" for tc in pending_tool_calls(cp.messages)]


def changes_between(before: Checkpoint | None, after: Checkpoint) -> str:
    """What ``after`` adds to ``before``, in words: messages, tool calls by name, the answer."""
    if before is None:
        if after.metadata.get("parent"):
            return f"forked: {after.metadata.get('edit') or 'no edit'}"
        return f"started: {len(after.messages)} messages"
    parts = []
    added = len(after.messages) - len(before.messages)
    if added or after.messages != before.messages:
        same = after.messages[:len(before.messages)] == before.messages
        parts.append(f"+{added} messages" if same else "history rewritten")
    calls = Counter(c.get("name") for c in after.tool_calls_made[len(before.tool_calls_made):])
    if calls:
        parts.append("ran " + ", ".join(f"{n} x{k}" if k > 1 else str(n)
                                        for n, k in sorted(calls.items())))
    if after.metadata.get("decided"):
        parts.append(f"decision on {after.metadata['decided']}")
    due = after.metadata.get("saved_due_to")
    if due == "completed" and after.messages and after.messages[-1].get("role") == "assistant":
        parts.append("answered")
    elif due not in ("interval", "completed"):
        parts.append(str(due))
    return "; ".join(parts) or "no change"


def history(cm: Any, run_id: str) -> list[Revision]:
    """Every revision of ``run_id`` still in ``cm``'s store, oldest first (see module doc).

    Raises ``CheckpointError("checkpoint_not_found")`` when the store holds none of the run.
    """
    rows = [r for r in cm.list_checkpoints(run_id) if "error" not in r]
    if not rows:
        raise CheckpointError("checkpoint_not_found", f"no checkpoint of run {run_id!r} in this "
                              "store; list_checkpoints() shows the runs it holds",
                              details={"run_id": run_id})
    out, before = [], None
    for row in sorted(rows, key=lambda r: r["revision"]):
        cp = cm.load(row["id"])
        meta = cp.metadata
        out.append(Revision(
            run_id=cp.run_id, revision=cp.revision, checkpoint_id=cp.id, turn=cp.turn,
            state=str(meta.get("saved_due_to")), created_at=cp.created_at,
            n_messages=len(cp.messages), tokens=int((meta.get("usage") or {}).get("total_tokens") or 0),
            cost_usd=_cost(meta), pending_calls=_pending(cp), changes=changes_between(before, cp),
            parent=meta.get("parent")))
        before = cp
    return out


def load_revision(cm: Any, run_id: str, revision: int) -> Checkpoint:
    """The checkpoint of ``run_id`` at ``revision``: a deep copy, so editing it writes nothing."""
    rows = [r for r in cm.list_checkpoints(run_id) if r.get("revision") == revision]
    if not rows:
        held = sorted(r["revision"] for r in cm.list_checkpoints(run_id) if "revision" in r)
        raise CheckpointError("checkpoint_not_found", f"run {run_id!r} has no revision {revision} "
                              f"in this store (it holds {held or 'none'}; retention may have "
                              "pruned older ones)", details={"run_id": run_id, "revision": revision,
                                                            "revisions": held})
    return copy.deepcopy(cm.load(rows[0]["id"]))


def format_history(revisions: list[Revision]) -> list[str]:
    """One line per revision: revision, turn, state, tokens, cost, pending calls, changes."""
    lines = [f"{'rev':>3} {'turn':>4} {'state':<10} {'tokens':>7} {'cost $':>9}  pending  changes"]
    for r in revisions:
        cost = "-" if r.cost_usd is None else f"{r.cost_usd:.5f}"
        lines.append(f"{r.revision:>3} {r.turn:>4} {r.state:<10} {r.tokens:>7} {cost:>9}  "
                     f"{len(r.pending_calls):>7}  {r.changes}")
    parent = revisions[0].parent if revisions else None
    if parent:
        lines.append(f"forked from run {parent['run_id']} revision {parent['revision']}")
    return lines

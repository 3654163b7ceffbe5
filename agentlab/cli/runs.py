"""``agentlab runs list|show|approve|reject|cancel``: the fleet's runs (chapter 13).

    agentlab runs list                       # newest last: id, state, attempts, worker, task
    agentlab runs show RUN_ID                # the whole record (JSON)
    agentlab runs approve RUN_ID [CALL_ID]   # let a paused call run (all pending ones if no id)
    agentlab runs reject RUN_ID [CALL_ID] --reason "..."
    agentlab runs cancel RUN_ID              # queued: never starts; running: stops at a turn
    agentlab runs history RUN_ID [--store S] [--json]  # its revisions (chapter 16)

Configuration by environment (``AGENTLAB_REDIS_URL``). ``history`` reads any checkpoint store:
``--store`` is a folder of JSON checkpoints, a ``.db`` file or a ``redis://`` URL (default: the
fleet's, ``AGENTLAB_REDIS_URL``, when set, else ``.agent_checkpoints``). Exit code 2 with one line when Redis
cannot be reached or the run is unknown.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from ..errors import AgentError
from ..fleet.control import Fleet

__all__ = ["add_parser", "run", "format_runs"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list, show, approve, reject or cancel fleet runs; history of a run")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = actions.add_parser("list", help="the runs, oldest first")
    ls.add_argument("--limit", type=int, default=50, help="the last N runs (50)")
    for name, text in (("show", "the run's record"), ("cancel", "stop the run")):
        actions.add_parser(name, help=text).add_argument("run_id")
    for name in ("approve", "reject"):
        a = actions.add_parser(name, help=f"{name} a call the run waits on")
        a.add_argument("run_id")
        a.add_argument("call_id", nargs="?", default=None,
                       help="the pending call (default: every pending call)")
        if name == "reject":
            a.add_argument("--reason", default="", help="told to the model as the tool result")
    h = actions.add_parser("history", help="a run's revisions in a checkpoint store")
    h.add_argument("run_id")
    h.add_argument("--store", default=None, help="folder, .db file or redis:// URL")
    h.add_argument("--json", action="store_true", help="one JSON object per revision")
    p.set_defaults(func=run)


def format_runs(records: list[dict]) -> list[str]:
    """One line per run: id, state, attempts, worker, turns, task (a paused run: what it waits
    for, and the command that lets it go on)."""
    lines = [f"{'run_id':<40} {'state':<13} {'att':>3} {'worker':<14} {'turns':>5}  task"]
    for r in records:
        turns = (r.get("result") or {}).get("turns", "")
        what = r["task"][:40]
        if r["state"] == "paused" and r.get("pending"):
            calls = ", ".join(f"{c.get('tool')} ({c.get('call_id')})" for c in r["pending"])
            what = f"waits for approval of {calls}: agentlab runs approve|reject {r['run_id']}"
        lines.append(f"{r['run_id']:<40} {r['state']:<13} {r['attempts']:>3} "
                     f"{(r.get('worker') or '-')[:14]:<14} {turns!s:>5}  {what}")
    return lines


def _history(args: argparse.Namespace) -> int:
    from ..fleet.decisions import checkpoint_manager  # lazy: only this action needs them
    from ..timetravel import format_history, history

    cm = checkpoint_manager(args.store or os.environ.get("AGENTLAB_REDIS_URL")
                            or ".agent_checkpoints")
    revisions = history(cm, args.run_id)
    lines = [json.dumps(r.as_dict()) for r in revisions] if args.json else \
        format_history(revisions)
    print("\n".join(lines))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.action == "history":
        try:
            return _history(args)
        except AgentError as exc:
            print(f"agentlab runs: {exc.message}", file=sys.stderr)
            return 2
    try:
        fleet = Fleet()
        if args.action == "list":
            print("\n".join(format_runs(fleet.runs(args.limit))))
            return 0
        if args.action == "show":
            print(json.dumps(fleet.show(args.run_id), indent=2, default=str))
            return 0
        if args.action == "cancel":
            rec = fleet.cancel(args.run_id)
        elif args.action == "approve":
            rec = fleet.approve(args.run_id, args.call_id)
        else:
            rec = fleet.reject(args.run_id, args.call_id, reason=args.reason)
    except AgentError as exc:
        print(f"agentlab runs: {exc.message}", file=sys.stderr)
        return 2
    note = " (cancel requested: it stops at its next step)" if args.action == "cancel" \
        and rec["state"] == "running" else ""
    print(f"{rec['run_id']}: {rec['state']}{note}")
    return 0

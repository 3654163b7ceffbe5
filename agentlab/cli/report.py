"""``agentlab report DIR``: a markdown report (tables and PNG plots) of a saved sweep.

A sweep that did not complete (interrupted, killed, still running) gets a partial report, marked
as such at its top and on the command line.
"""
from __future__ import annotations

import argparse
import sys

from ..errors import AgentError
from ..experiments.report import write_report
from ..experiments.store import SweepStore

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write DIR/report.md with the tables and plots of a sweep")
    p.add_argument("dir", help="a sweep directory (written by `agentlab sweep`)")
    p.add_argument("--out", default=None, help="report file (default DIR/report.md; plots go "
                   "next to it in plots/)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        path = write_report(args.dir, args.out)
    except AgentError as exc:
        print(f"agentlab report: {exc}", file=sys.stderr)
        return 2
    status = (SweepStore(args.dir).manifest() or {}).get("status")
    print(f"wrote {path}" + ("" if status == "complete" else
                             f" (a partial report: the sweep is {status})"))
    return 0

"""``agentlab submit "task"``: hand a task to the fleet as a run (chapter 13).

    agentlab submit "Research Python asyncio best practices"          # prints the run id
    agentlab submit "Research asyncio" --wait                          # ... and waits for the end
    agentlab submit "Research asyncio" --approve write_file --tool-limit web_search=2
    agentlab submit "Research asyncio" --tools mypkg.tools:make_registry --max-cost-usd 0.05

Configuration by environment: ``AGENTLAB_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``).
The run starts when a worker (``agentlab worker``) takes it. Exit code 2 with one line when
Redis cannot be reached; with ``--wait``, 0 when the run finished, 1 otherwise.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import AgentError
from ..fleet.control import Fleet

__all__ = ["add_parser", "run", "tool_limits"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="submit a task to the fleet as a run")
    p.add_argument("task", help="what the research agent should do")
    p.add_argument("--wait", action="store_true", help="wait until the run ends (or pauses)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits (600)")
    p.add_argument("--time-scale", type=float, default=0.05,
                   help="simulated model latency scale (0: none; 1: the article's pace)")
    p.add_argument("--tool-latency", type=float, default=0.0, help="extra seconds per tool call")
    p.add_argument("--max-turns", type=int, default=12, help="turn budget of the run (12)")
    p.add_argument("--max-attempts", type=int, default=3,
                   help="deliveries before a run that keeps crashing ends in error (3)")
    p.add_argument("--approve", action="append", default=[], metavar="TOOL",
                   help="calls of TOOL wait for `agentlab runs approve` (repeatable)")
    p.add_argument("--tool-limit", action="append", default=[], metavar="TOOL=N",
                   help="at most N concurrent calls of TOOL across the fleet (repeatable)")
    p.add_argument("--tools", default=None, metavar="MODULE:FUNCTION",
                   help="the run's own tools (workers started with the same --tools run it)")
    p.add_argument("--max-cost-usd", type=float, default=None, metavar="USD",
                   help="the run's budget in dollars, over all its attempts")
    p.set_defaults(func=run)


def tool_limits(items: list[str]) -> dict[str, int]:
    """``["web_search=2"]`` -> ``{"web_search": 2}``; ``ValueError`` naming a bad item."""
    out = {}
    for item in items:
        name, _, n = item.partition("=")
        if not name or not n.isdigit() or int(n) < 1:
            raise ValueError(f"--tool-limit {item!r}: use TOOL=N with N >= 1, e.g. web_search=2")
        out[name] = int(n)
    return out


def run(args: argparse.Namespace) -> int:
    try:
        limits = tool_limits(args.tool_limit)
        fleet = Fleet()
        run_id = fleet.submit(args.task, time_scale=args.time_scale,
                              tool_latency_s=args.tool_latency, max_turns=args.max_turns,
                              max_attempts=args.max_attempts, approve_tools=args.approve,
                              tool_limits=limits, tools=args.tools,
                              max_cost_usd=args.max_cost_usd)
        print(run_id)
        if not args.wait:
            return 0
        rec = fleet.wait(run_id, timeout_s=args.timeout)[0]
    except (AgentError, ValueError) as exc:
        print(f"agentlab submit: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    result = rec.get("result") or {}
    print(f"{rec['state']}: {result.get('turns', 0)} turns, attempts {rec['attempts']}, "
          f"worker {rec.get('worker') or '-'}, spent ${rec.get('spent_usd', 0):.4f} (all attempts)")
    if rec["state"] == "paused":
        for call in rec.get("pending") or []:
            print(f"  waiting for approval: {call.get('tool')} ({call.get('call_id')}): "
                  f"agentlab runs approve {run_id} {call.get('call_id')}")
    elif result.get("content"):
        print(result["content"])
    if rec.get("output_dir"):  # the report and other files the run wrote
        folder = Path(rec["output_dir"])
        files = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
        where = (f"{folder}: {', '.join(files)}" if files else
                 f"{folder} (nothing written there yet)" if folder.is_dir() else
                 f"{folder} on worker {rec.get('worker') or '?'} (not on this machine)")
        print(f"files of the run: {where}")
    print(f"the run's record: agentlab runs show {run_id}")
    return 0 if rec["state"] == "finished" else 1

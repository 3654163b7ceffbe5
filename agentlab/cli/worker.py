"""``agentlab worker``: start a Celery worker of the chapter 13 fleet.

    AGENTLAB_REDIS_URL=redis://127.0.0.1:6379/0 agentlab worker --concurrency 2
    agentlab worker --tools mypkg.tools:make_registry     # also runs runs submitted with them

The worker runs the fleet's settings (``agentlab.fleet.app``: late acks, prefetch 1, explicit
visibility timeout and restore check, JSON). Its pool children and the subprocesses tools
start share its process group, so stopping the group stops them all: a shell puts each
command in its own group already, and ``agentlab.fleet.local`` starts workers in a new
session. Exit code 2 with one line when Redis cannot be reached; a worker that dies at
start-up exits with Celery's non-zero status (1 for an exception).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from ..errors import AgentError
from ..fleet.app import FleetConfig, make_app
from ..fleet.control import connect
from ..fleet.local import worker_args
from ..fleet.usertools import ENV, build_registry, offered_tools

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="start a fleet worker (Celery) that executes agent runs")
    p.add_argument("--concurrency", "-c", type=int, default=1,
                   help="runs this worker executes at once (default 1)")
    p.add_argument("--pool", "-P", default="prefork", choices=["prefork", "threads", "solo"],
                   help="Celery pool (default prefork: a crashed run kills only its child)")
    p.add_argument("--name", "-n", default="worker", help="node name (default worker@HOST)")
    p.add_argument("--loglevel", "-l", default="INFO", help="log level (default INFO)")
    p.add_argument("--tools", action="append", default=[], metavar="MODULE:FUNCTION",
                   help="your own tools: a function returning a ToolRegistry; runs submitted "
                        "with the same --tools run here (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.concurrency < 1:
        print("agentlab worker: --concurrency must be at least 1", file=sys.stderr)
        return 2
    cfg = FleetConfig.from_env()
    tools = offered_tools() + [t for t in args.tools if t not in offered_tools()]
    try:
        connect(cfg)
        with tempfile.TemporaryDirectory() as tmp:  # a typo shows now, not at the first run
            for spec in tools:
                build_registry(spec, Path(tmp))
    except AgentError as exc:
        print(f"agentlab worker: {exc.message}", file=sys.stderr)
        return 2
    if tools:  # the pool processes read it from the environment
        os.environ[ENV] = ",".join(tools)
    # ``app.start`` returns the worker's exit status (``worker_main`` would drop it): a worker
    # that died at start-up must not look like one that stopped cleanly
    try:
        code = make_app(cfg).start(["worker", *worker_args(args.name, args.concurrency,
                                                           args.pool, args.loglevel)[1:]])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except Exception as exc:
        print(f"agentlab worker: the worker failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return int(code or 0)

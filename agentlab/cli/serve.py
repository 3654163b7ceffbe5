"""``agentlab serve``: the simulator as an OpenAI-compatible HTTP server, and a test endpoint.

    agentlab serve --port 8000
    OPENAI_API_KEY=x OPENAI_BASE_URL=http://127.0.0.1:8000/v1 agentlab demo
    agentlab serve --faults "429:0.2,retry_after=2;truncate:0.1" --latency "time_scale=1"

The default policy (``auto``) plays the research assistant when the request offers
``web_search`` (so ``agentlab demo`` against it behaves like the offline demo) and answers
directly otherwise. ``--faults`` and ``--latency`` (syntax: ``agentlab.sim.fault_text``) give
every request the simulator's faults (429 with ``Retry-After``, 5xx, timeouts, malformed or
truncated streams, refusals) and a model's pace, seeded by ``--seed``; a request's own
``X-Agentlab-Faults`` / ``X-Agentlab-Latency`` headers override them for that request. One
access-log line per request goes to stdout.
"""
from __future__ import annotations

import argparse
import time

from .. import sim
from ..errors import AgentError
from ..sim.fault_text import RequestFaults, RequestLatency, Refusing, parse_faults, parse_latency
from ..sim.server import BODY_BUDGET_BYTES, MAX_BODY_BYTES

__all__ = ["add_parser", "POLICIES", "build_simulator"]

#: ``--policy`` choices and the policy each one builds.
POLICIES = {"auto": lambda: sim.Auto(), "researcher": lambda: sim.Researcher(),
            "tooluser": lambda: sim.ToolUser()}


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve the simulator over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--policy", choices=sorted(POLICIES), default="auto",
                       help="what the model does (default: auto, the research assistant when "
                            "web_search is offered)")
    serve.add_argument("--lenient", action="store_true", help="accept what the real API rejects")
    serve.add_argument("--faults", default="", metavar="SPEC",
                       help='e.g. "429:0.2,retry_after=2;truncate:0.1" (random, seeded) or '
                            '"429;ok;truncate" (a script, one per request)')
    serve.add_argument("--latency", default="", metavar="SPEC",
                       help='e.g. "first_token_ms=300,tokens_per_second=40,time_scale=1"')
    serve.add_argument("--seed", type=int, default=0, help="seed of the fault draws and jitter")
    serve.add_argument("--stall-s", type=float, default=30.0,
                       help="how long a timeout fault holds a request before dropping it")
    serve.add_argument("--max-body-mb", type=float, default=MAX_BODY_BYTES / 2**20,
                       help="largest request body accepted (larger: 413)")
    serve.add_argument("--body-budget-mb", type=float, default=BODY_BUDGET_BYTES / 2**20,
                       help="request bodies held at once (others wait; 0: no bound)")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.set_defaults(func=run)


def build_simulator(args: argparse.Namespace) -> sim.Simulator:
    """The simulator ``agentlab serve`` runs: faults and latency that a request may override.
    Raises ``ValueError`` for a bad ``--faults`` or ``--latency``."""
    simulator = sim.Simulator(Refusing(POLICIES[args.policy]()), strict=not args.lenient,
                              faults=RequestFaults(parse_faults(args.faults, seed=args.seed)),
                              latency=RequestLatency(parse_latency(args.latency)),
                              seed=args.seed)
    simulator.stall_s = args.stall_s
    return simulator


def run(args: argparse.Namespace) -> int:
    try:
        simulator = build_simulator(args)
    except ValueError as exc:
        print(f"agentlab serve: {exc}")
        return 2
    log = None if args.quiet else (lambda line: print(line, flush=True))
    try:
        with simulator.serve(host=args.host, port=args.port, access_log=log,
                             max_body_bytes=int(args.max_body_mb * 2**20),
                             body_budget_bytes=int(args.body_budget_mb * 2**20),
                             request_log_limit=0) as url:  # nobody reads this process's log
            mode = "lenient" if args.lenient else "strict"
            extra = "".join(f", {k} {v!r}" for k, v in (("faults", args.faults),
                                                         ("latency", args.latency)) if v)
            print(f"agentlab simulator ({args.policy}, {mode}{extra}) listening on {url}")
            print(f"  OPENAI_BASE_URL={url} OPENAI_API_KEY=x agentlab demo   Ctrl-C to stop",
                  flush=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                print("\nstopped")
    except AgentError as exc:
        print(f"agentlab serve: {exc.message}")
        return 1
    return 0

"""``agentlab serve``: the simulator as an OpenAI-compatible HTTP server.

    agentlab serve --port 8000
    OPENAI_API_KEY=x OPENAI_BASE_URL=http://127.0.0.1:8000/v1 agentlab demo

The default policy (``auto``) plays the research assistant when the request offers
``web_search`` (so ``agentlab demo`` against it behaves like the offline demo) and answers
directly otherwise. One access-log line per request goes to stdout.
"""
from __future__ import annotations

import argparse
import time

from .. import sim
from ..errors import AgentError
from ..sim.server import MAX_BODY_BYTES

__all__ = ["add_parser", "POLICIES"]

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
    serve.add_argument("--max-body-mb", type=float, default=MAX_BODY_BYTES / 2**20,
                       help="largest request body accepted (larger: 413)")
    serve.add_argument("--quiet", action="store_true", help="no access log")
    serve.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    simulator = sim.Simulator(POLICIES[args.policy](), strict=not args.lenient)
    log = None if args.quiet else (lambda line: print(line, flush=True))
    try:
        with simulator.serve(host=args.host, port=args.port, access_log=log,
                             max_body_bytes=int(args.max_body_mb * 2**20)) as url:
            mode = "lenient" if args.lenient else "strict"
            print(f"agentlab simulator ({args.policy}, {mode}) listening on {url}")
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

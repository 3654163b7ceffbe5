"""``agentlab serve``: the simulator as an OpenAI-compatible HTTP server."""
from __future__ import annotations

import argparse
import time

from .. import sim

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="serve the simulator over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--policy", choices=["tooluser", "researcher"], default="tooluser")
    serve.add_argument("--lenient", action="store_true", help="accept what the real API rejects")
    serve.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    policies = {"tooluser": sim.ToolUser, "researcher": lambda: sim.Researcher()}
    simulator = sim.Simulator(policies[args.policy](), strict=not args.lenient)
    with simulator.serve(host=args.host, port=args.port) as url:
        print(f"agentlab simulator ({args.policy}) listening on {url}")
        print(f'  OpenAI(base_url="{url}", api_key="sk-sim")   Ctrl-C to stop', flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("\nstopped")
    return 0

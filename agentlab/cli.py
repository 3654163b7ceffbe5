"""The ``agentlab`` command.

    agentlab demo              the research agent of chapter 08, offline on the simulator
    agentlab chat "question"   one chat call and one streamed call (chapter 01)
    agentlab serve --port 8000 the simulator as an OpenAI-compatible HTTP server

With ``OPENAI_API_KEY`` set (and optionally ``OPENAI_BASE_URL``, ``AGENTLAB_MODEL``) ``demo`` and
``chat`` talk to that endpoint instead of the simulator.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from agentlab.research import run_demo

    result = run_demo(print, output_dir=args.output_dir)
    return 0 if result.state.name == "FINISHED" else 1


def _chat(args: argparse.Namespace) -> int:
    from agentlab.llm import LLMClient
    from agentlab import sim

    if os.environ.get("OPENAI_API_KEY"):
        llm = LLMClient.from_env()
        where = os.environ.get("OPENAI_BASE_URL", "the OpenAI API")
    else:
        reply = "Agents are loops: call the model, run the tools it asks for, repeat."
        llm = sim.Simulator(sim.Script([sim.text(reply), sim.text(reply)]),
                            latency=sim.Latency(first_token_ms=150, tokens_per_second=60)).llm()
        where = "the built-in simulator (no key set)"
    messages = [{"role": "user", "content": args.question}]
    print(f"model {llm.model} on {where}\n")
    start = time.perf_counter()
    resp = llm.chat(messages)
    print(f"chat   ({(time.perf_counter() - start) * 1000:.0f} ms): {resp.content}")
    print(f"       usage {resp.usage}\n")
    print("stream: ", end="", flush=True)
    start, first = time.perf_counter(), None
    final = None
    for part in llm.stream(messages):
        if part.content:
            first = first or time.perf_counter()
            print(part.content, end="", flush=True)
        else:
            final = part
    total = time.perf_counter() - start
    ttft = (first - start) * 1000 if first else float("nan")
    print(f"\n       first token after {ttft:.0f} ms, done after {total * 1000:.0f} ms; "
          f"finish_reason={final.finish_reason if final else '?'}, "
          f"usage {final.usage if final else {}}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from agentlab import sim

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the research agent (offline unless OPENAI_API_KEY is set)")
    demo.add_argument("--output-dir", default="output", help="where the report is written")
    demo.set_defaults(func=_demo)
    chat = sub.add_parser("chat", help="one chat and one streamed call")
    chat.add_argument("question", nargs="?", default="What is an agent runtime?")
    chat.set_defaults(func=_chat)
    serve = sub.add_parser("serve", help="serve the simulator over HTTP")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--policy", choices=["tooluser", "researcher"], default="tooluser")
    serve.add_argument("--lenient", action="store_true", help="accept what the real API rejects")
    serve.set_defaults(func=_serve)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

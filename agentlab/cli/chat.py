"""``agentlab chat``: talk to the model (chapter 01)."""
from __future__ import annotations

import argparse
import os
import time

from .. import sim
from ..llm import LLMClient

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    chat = sub.add_parser("chat", help="one chat and one streamed call")
    chat.add_argument("question", nargs="?", default="What is an agent runtime?")
    chat.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
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

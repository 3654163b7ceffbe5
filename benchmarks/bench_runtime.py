"""Per-turn runtime overhead: agentlab vs the article's loop vs hand-written loops.

    python benchmarks/bench_runtime.py [--repeats 3]

Two workloads on the same in-process simulator (strict mode on):
  A. 50 turns, each with 2 no-op tool calls in parallel, then an answer;
  B. 20 turns, each with 1 tool call returning ~1k tokens, then an answer.
Four loops run each workload:
  agentlab    AgentRuntime (LLMClient on the raw-post path, ToolExecutor, MessageManager)
  naive       the article-style loop of agentlab.naive.runtime (create(), recounting history)
  create()    a minimal hand-written loop calling client.chat.completions.create()
  raw post    a minimal hand-written loop calling client.post("/chat/completions"): the floor
The simulator's own time (policy, token counting, building replies) is measured inside it and
subtracted, so the numbers are what each loop costs per turn. Target: agentlab <= 5 ms/turn on A.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


from openai.types.chat import ChatCompletion

from agentlab import sim
from agentlab.naive.llm import NaiveLLMClient
from agentlab.naive.runtime import NaiveAgentRuntime, NaiveRuntimeConfig
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.tools import ToolRegistry

BIG = " ".join(f"token{i % 97}" for i in range(700))  # about 1k tokens


def workload(turns: int, calls: int, big: bool):
    """(policy, registry): ``turns`` tool turns with ``calls`` distinct calls each, then text."""
    def policy(messages, tools):
        done = sum(1 for m in messages if m.get("role") == "assistant")
        if done >= turns:
            return sim.text("All done.")
        return [sim.call("noop", {"turn": done, "i": i}) for i in range(calls)]

    reg = ToolRegistry()

    def noop(turn: int, i: int) -> str:
        """Do nothing.

        Args:
            turn: turn number.
            i: call index.
        """
        return BIG if big else "ok"
    reg.register(noop)
    return sim.Function(policy), reg


class TimedSimulator(sim.Simulator):
    """A simulator that adds up the time spent answering (to subtract it)."""

    busy_s = 0.0

    def handle(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return super().handle(*args, **kwargs)
        finally:
            self.busy_s += time.perf_counter() - t


def hand_loop(client, reg, raw: bool) -> int:
    """A minimal loop with no framework: call, run tools inline, append, repeat."""
    tools = reg.get_all_schemas()
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "go"}]
    turns = 0
    while True:
        turns += 1
        body = {"model": "gpt-4o", "messages": messages, "tools": tools}
        if raw:
            resp = client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        else:
            resp = client.chat.completions.create(**body)
        msg = resp.choices[0].message
        if not msg.tool_calls:
            return turns
        messages.append({"role": "assistant", "content": msg.content, "tool_calls": [
            {"id": tc.id, "type": "function",
             "function": {"name": tc.function.name, "arguments": tc.function.arguments}}
            for tc in msg.tool_calls]})
        for tc in msg.tool_calls:
            out = reg.get_function(tc.function.name)(**json.loads(tc.function.arguments))
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": out})


def measure(variant: str, turns: int, calls: int, big: bool) -> float:
    """ms per turn of ``variant`` on one workload, simulator time subtracted."""
    policy, reg = workload(turns, calls, big)
    s = TimedSimulator(policy, strict=True)
    t = time.perf_counter()
    if variant == "agentlab":
        rt = AgentRuntime(s.llm(), reg, config=RuntimeConfig(max_turns=turns + 5))
        n = rt.run("go").turns
    elif variant == "naive":
        rt = NaiveAgentRuntime(NaiveLLMClient(client=s.client()), reg,
                               config=NaiveRuntimeConfig(max_turns=turns + 5))
        n = rt.run("go").turns
    else:
        n = hand_loop(s.client(), reg, raw=variant == "raw post")
    wall = time.perf_counter() - t
    bad = [r["status"] for r in s.requests if r["status"] != 200]
    assert n == turns + 1 and not bad, (variant, n, bad)
    return (wall - s.busy_s) * 1000 / n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    variants = ["agentlab", "naive", "create()", "raw post"]
    loads = {"A: 50 turns x 2 no-op calls": (50, 2, False),
             "B: 20 turns x 1k-token output": (20, 1, True)}
    measure("agentlab", 3, 1, False)  # warm-up: imports, encodings, SDK caches
    table = {}
    for name, load in loads.items():
        for v in variants:
            table[name, v] = statistics.median(measure(v, *load) for _ in range(args.repeats))
    print(f"Per-turn overhead, simulator time subtracted (median of {args.repeats} runs)\n")
    print(f"{'loop':<10} | " + " | ".join(f"{n:<36}" for n in loads))
    print("-" * 10 + "-+-" + "-+-".join("-" * 36 for _ in loads))
    for v in variants:
        cells = []
        for n in loads:
            ms, base = table[n, v], table[n, "agentlab"]
            cells.append(f"{ms:7.2f} ms/turn ({ms / base:5.1f}x agentlab)")
        print(f"{v:<10} | " + " | ".join(f"{c:<36}" for c in cells))
    a = table["A: 50 turns x 2 no-op calls", "agentlab"]
    print(f"\nagentlab on A: {a:.2f} ms/turn; target <= 5 ms/turn: {'met' if a <= 5 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

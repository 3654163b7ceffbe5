"""Benchmark chapter 01: what a model call costs on the client, and what retries cost.

    python benchmarks/bench_llm.py            # about 20 s
    python benchmarks/bench_llm.py --quick    # fewer repeats

Three tables, all measured in this run against ``agentlab.sim`` (no latency, no network):

1. Client time per call against history length, ``chat.completions.create()`` vs
   ``LLMClient.chat`` (which sends through ``client.post``). *Client time* = wall time of the call
   minus the time spent inside the simulator's transport handler (measured by a wrapping
   transport), i.e. what the SDK and our code cost, not what the "model" costs.
2. Requests per second through the in-process simulator (chat and stream) and through
   ``Simulator.serve()`` on 127.0.0.1 (one client, sequential requests).
3. The naive article-style client vs ``LLMClient`` under fault plans (a 401; three 429s; 429s
   that do not stop): requests on the wire, wall time, what the caller got. Both use
   ``retry_base_delay=0.05`` and ``max_retries=3``; the naive one keeps the SDK's own 2 retries.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import httpx2
import openai

from agentlab import sim
from agentlab.errors import ProviderError
from agentlab.llm import LLMClient, collect_stream
from agentlab.naive.llm import NaiveLLMClient

SIZES = (50, 200, 600)


class TimedTransport(httpx2.BaseTransport):
    """Wraps a transport and adds up the time spent inside it (the simulated server)."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self.inner, self.inside = inner, 0.0

    def handle_request(self, request):
        t = time.perf_counter()
        try:
            return self.inner.handle_request(request)
        finally:
            self.inside += time.perf_counter() - t


def history(n: int) -> list[dict]:
    """A valid agent history of ``n`` messages: system, then user / assistant tool call /
    tool result / assistant answer blocks, ending with a user question."""
    msgs: list[dict] = [{"role": "system", "content": "You are a research assistant."}]
    i = 0
    while len(msgs) < n - 1:
        cid = f"call_{i}"
        msgs += [{"role": "user", "content": f"Question {i}: what does asyncio.gather do? " * 3},
                 {"role": "assistant", "content": None, "tool_calls": [
                     {"id": cid, "type": "function",
                      "function": {"name": "web_search", "arguments": f'{{"query": "q{i}"}}'}}]},
                 {"role": "tool", "tool_call_id": cid, "content": "result text " * 20},
                 {"role": "assistant", "content": f"Answer {i}: it runs awaitables concurrently."}]
        i += 1
    msgs = msgs[: n - 1]
    while msgs[-1]["role"] == "assistant" and msgs[-1].get("tool_calls"):
        msgs.pop()  # never end on unanswered tool calls (strict simulator)
    return msgs + [{"role": "user", "content": "Summarise."}]


def client_time_table(repeats: int) -> tuple[list[str], float]:
    s = sim.Simulator(sim.Script([sim.text("ok")] * 4))
    timed = TimedTransport(s.transport())
    sdk = openai.OpenAI(api_key="sk-sim", base_url="http://sim.local/v1", max_retries=0,
                        http_client=httpx2.Client(transport=timed))
    llm = LLMClient(client=sdk)

    def client_ms(fn) -> float:
        samples = []
        for _ in range(repeats):
            inside0, t = timed.inside, time.perf_counter()
            fn()
            samples.append((time.perf_counter() - t - (timed.inside - inside0)) * 1000)
        return statistics.median(samples)

    rows = [f"{'messages':>8} | {'create() ms':>11} | {'LLMClient ms':>12} | {'ratio':>6}",
            "-" * 48]
    ratio_600 = 0.0
    for n in SIZES:
        msgs = history(n)
        llm.chat(msgs)  # warm the simulator's token cache and the SDK's model caches
        sdk.chat.completions.create(model="gpt-4o", messages=msgs)
        create = client_ms(lambda: sdk.chat.completions.create(model="gpt-4o", messages=msgs))
        ours = client_ms(lambda: llm.chat(msgs))
        ratio = create / ours
        if n == 600:
            ratio_600 = ratio
        rows.append(f"{n:>8} | {create:>11.2f} | {ours:>12.2f} | {ratio:>5.1f}x")
    return rows, ratio_600


def rate(fn, seconds: float) -> float:
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)


def throughput_table(seconds: float) -> list[str]:
    msgs = [{"role": "user", "content": "Say hello in five words."}]
    s = sim.Simulator(sim.Script([sim.text("Hello there, nice to meet you.")]))
    llm = s.llm()
    rows = [f"{'path':<28} | {'chat req/s':>10} | {'stream req/s':>12}", "-" * 56]
    rows.append(f"{'in-process transport':<28} | {rate(lambda: llm.chat(msgs), seconds):>10.0f} | "
                f"{rate(lambda: collect_stream(llm.stream(msgs)), seconds):>12.0f}")
    try:
        with s.serve() as url:
            http = LLMClient(base_url=url, api_key="sk-sim")
            chat_rate = rate(lambda: http.chat(msgs), seconds)
            stream_rate = rate(lambda: collect_stream(http.stream(msgs)), seconds)
            rows.append(f"{'serve() on 127.0.0.1':<28} | {chat_rate:>10.0f} | {stream_rate:>12.0f}")
    except (ImportError, AttributeError, NotImplementedError) as exc:
        rows.append(f"{'serve() on 127.0.0.1':<28} | not available yet ({type(exc).__name__})")
    return rows


PLANS = {"401 bad key": [401] * 30, "3 x 429, then ok": [429] * 3, "429 that never stops": [429] * 30}


def run_plan(kind: str, plan: list) -> tuple[int, float, str]:
    s = sim.Simulator(sim.Script([sim.text("hi")]), faults=sim.FaultPlan(plan))
    msgs = [{"role": "user", "content": "hi"}]
    if kind == "naive":
        client = NaiveLLMClient(client=s.client(), retry_base_delay=0.05, max_retries=3)
    else:
        client = s.llm(retry_base_delay=0.05, max_retries=3, seed=0)
    t0 = time.perf_counter()
    try:
        client.chat(msgs)
        outcome = "ok"
    except ProviderError as e:
        outcome = f"ProviderError({e.code})"
    except openai.APIError as e:
        outcome = type(e).__name__
    return len(s.requests), time.perf_counter() - t0, outcome


def faults_table() -> list[str]:
    rows = [f"{'plan':<22} | {'client':<9} | {'requests':>8} | {'wall s':>6} | outcome", "-" * 72]
    for name, plan in PLANS.items():
        for kind in ("naive", "LLMClient"):
            n, wall, outcome = run_plan(kind, plan)
            rows.append(f"{name:<22} | {kind:<9} | {n:>8} | {wall:>6.2f} | {outcome}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter rate loops")
    args = parser.parse_args(argv)
    repeats, seconds = (3, 0.5) if args.quick else (7, 1.5)

    print("1. Client time per chat call vs history length (median of %d; wall time minus time "
          "inside the simulator's transport)" % repeats)
    rows, ratio_600 = client_time_table(repeats)
    print("\n".join(rows))
    print(f"LLMClient spends >= 20x less time in the client at 600 messages: {ratio_600 >= 20} "
          f"({ratio_600:.0f}x)\n")
    print(f"2. Throughput of the simulator (sequential requests, {seconds:g} s per cell)")
    print("\n".join(throughput_table(seconds)) + "\n")
    print("3. Naive article-style client vs LLMClient under fault plans "
          "(retry_base_delay 0.05 s, max_retries 3)")
    print("\n".join(faults_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

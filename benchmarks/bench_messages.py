"""Append and compression cost: the article-style manager vs agentlab.MessageManager.

    python benchmarks/bench_messages.py

1. Cost of one append against history length (100 to 1,600 messages of about 200 tokens, no
   compression involved), with the growth exponent fitted on a log-log scale: 1 means the cost
   of an append grows linearly with the history (the naive recount), 0 means it does not grow.
2. Time to absorb one 50,000-token message into a ~85,000-token history with the default
   budget (120,000 tokens, compress above 75%).
Both versions run on the same messages in the same process.
"""
from __future__ import annotations

import statistics
import time

import numpy as np


from agentlab.messages import MessageManager
from agentlab.naive.messages import NaiveMessageManager
from agentlab.tokens import count_message_tokens

WORDS = ("agent tool result search page read write answer model context token budget message "
         "history window summary task step plan check data file query source note").split()
LENGTHS = [100, 200, 400, 800, 900, 1600]


def message(i: int, words: int = 197) -> dict:
    text = " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(words))
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i}: {text}"}


def preload(manager, history: list[dict]) -> None:
    """Fill a manager without paying for n appends (the naive one would take minutes)."""
    if isinstance(manager, NaiveMessageManager):
        manager._messages = list(history)
    else:
        manager.extend(history)


def append_cost(cls, n: int, repeats: int) -> float:
    """Median seconds for appending one message to a history of ``n`` messages."""
    manager = cls("You are a researcher.", max_tokens=10_000_000)
    preload(manager, [message(i) for i in range(n)])
    times = []
    for r in range(repeats):
        m = message(n + r)
        t0 = time.perf_counter()
        manager.append(m)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def exponent(ns: list[int], ts: list[float]) -> float:
    return float(np.polyfit(np.log(ns), np.log(ts), 1)[0])


def bench_appends() -> None:
    print(f"~{count_message_tokens(message(1))} tokens per message\n")
    print(f"{'history':>8} {'naive ms/append':>16} {'agentlab ms/append':>19} {'speed-up':>9}")
    naive, ours = [], []
    for n in LENGTHS:
        naive.append(append_cost(NaiveMessageManager, n, repeats=7))
        ours.append(append_cost(MessageManager, n, repeats=41))
        print(f"{n:>8} {naive[-1] * 1e3:>16.3f} {ours[-1] * 1e3:>19.4f} {naive[-1] / ours[-1]:>8.0f}x")
    kn, ko = exponent(LENGTHS, naive), exponent(LENGTHS, ours)
    print(f"\ngrowth exponent of one append (cost ~ n^k): naive k = {kn:.2f}, agentlab k = {ko:.2f}")
    print(f"so a whole run of n appends costs ~ n^(k+1): naive {kn + 1:.2f}, agentlab {ko + 1:.2f}")
    i100, i900, i800 = LENGTHS.index(100), LENGTHS.index(900), LENGTHS.index(800)
    print(f"agentlab append at 900 / at 100: {ours[i900] / ours[i100]:.2f}  "
          f"(naive: {naive[i900] / naive[i100]:.2f})")
    print(f"at 800 messages agentlab is {naive[i800] / ours[i800]:.0f}x faster "
          f"(target >= 100x: {'met' if naive[i800] / ours[i800] >= 100 else 'NOT met'})")


def bench_big_message() -> None:
    print("\none 50,000-token message arrives (budget 120,000, compress above 90,000)")
    history = [message(i) for i in range(420)]
    big = {"role": "user", "content": " ".join(WORDS[k % len(WORDS)] for k in range(50_000))}
    rows = []
    for label, make in [
        ("naive (one message at a time)", lambda: NaiveMessageManager("sys")),
        ("agentlab (truncate to 36k)", lambda: MessageManager("sys", max_tokens=120_000)),
        ("agentlab, message kept whole", lambda: MessageManager("sys", max_tokens=120_000,
                                                                max_message_tokens=100_000)),
    ]:
        m = make()
        preload(m, history)
        before = m.count_tokens()
        t0 = time.perf_counter()
        m.append(dict(big))
        dt = time.perf_counter() - t0
        rows.append((label, before, m.count_tokens(), dt))
    print(f"{'version':<37} {'tokens before':>13} {'after':>7} {'time':>10}")
    for label, before, after, dt in rows:
        print(f"{label:<37} {before:>13} {after:>7} {dt * 1e3:>8.1f}ms")
    print(f"speed-up (agentlab default vs naive): {rows[0][3] / rows[1][3]:.0f}x")


if __name__ == "__main__":
    bench_appends()
    bench_big_message()

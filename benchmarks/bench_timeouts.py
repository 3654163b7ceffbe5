"""Benchmark: fixed 30 s timeouts vs adaptive ones on the same simulated workloads.

    python benchmarks/bench_timeouts.py

1. Replay (``agentlab.sim.tool_latency.replay``, no sleeping): 500 calls of each of five seeded
   tools (cache, web search, slow report, flaky API that slows down 6x mid-run, API that slows
   down 8x), some calls hanging forever. For every timeout policy: false kills (calls killed
   that would have finished), hung calls killed, time wasted waiting on killed calls, and total
   time spent waiting. The naive article-style manager is shown twice: as written (its timeout is
   never enforced, so a hung call is waited for forever) and as if it were enforced (its
   ms-read-as-seconds timeouts).
2. Measured through the real ``ToolExecutor`` with time scaled down 200x: wall time of 200 web
   searches (4 hang) under a fixed 30 s timeout, the adaptive manager, and the naive executor
   (a hung call sleeps 0.5 s, standing in for "forever").
"""
from __future__ import annotations

import math
import time


from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.naive.timeouts import NaiveTimeoutManager, NaiveToolExecutor
from agentlab.sim.tool_latency import (Bimodal, Hanging, LogNormal, Slowdown,
                                       latency_tool, replay)
from agentlab.timeouts import AdaptiveTimeoutManager
from agentlab.tools import ToolRegistry


def workload() -> dict:
    return {"db_query": Hanging(Bimodal(5, 300, hit_rate=0.8, seed=2), 0.01, seed=12),
            "web_search": Hanging(LogNormal(800, 0.5, seed=1), 0.02, seed=11),
            "report": LogNormal(12000, 0.45, seed=3),
            "flaky_api": Hanging(Slowdown(LogNormal(300, 0.4, seed=4), 250, 6), 0.02, seed=14),
            "slow_api": Slowdown(LogNormal(100, 0.3, seed=5), 200, 8)}


class _NaiveAdapter:
    """The naive manager behind replay's interface (it has no ``timed_out`` keyword)."""

    def __init__(self) -> None:
        self.m = NaiveTimeoutManager()

    def get_timeout(self, name: str) -> float:
        return self.m.get_timeout(name)

    def record_execution(self, name, duration_ms, success=True, timed_out=False) -> None:
        self.m.record_execution(name, duration_ms, success)


POLICIES = {
    "fixed 30 s": lambda: 30.0,
    "naive, as written (never enforced)": None,
    "naive, if enforced (ms as s)": _NaiveAdapter,
    "adaptive, success-only learning": lambda: AdaptiveTimeoutManager(min_timeout=0.5),
    "adaptive, article rule (censored)": lambda: AdaptiveTimeoutManager(min_timeout=0.5,
                                                                        rule="article"),
    "agentlab defaults (min 5 s)": lambda: AdaptiveTimeoutManager(),
    "agentlab, min_timeout 0.5 s": lambda: AdaptiveTimeoutManager(min_timeout=0.5),
}


def replayed() -> None:
    traces = {name: m.samples(500) for name, m in workload().items()}
    hung = sum(1 for t in traces.values() for d in t if math.isinf(d))
    finishing = sum(len(t) for t in traces.values()) - hung
    print(f"1. Replay: {len(traces)} tools x 500 calls, {hung} hang forever, "
          f"{finishing} would finish")
    head = (f"{'policy':<36} {'false kills':>11} {'rate':>6} {'hung killed':>11} "
            f"{'wasted (s)':>10} {'total wait (s)':>14} {'vs fixed':>8}")
    print(head)
    print("-" * len(head))
    results = {}
    for label, make in POLICIES.items():
        if make is None:   # never enforced: every call runs to the end, a hang never ends
            results[label] = (0, 0, math.inf, math.inf)
            continue
        learn = "success_only" if "success-only" in label else "censored"
        rs = [replay(make(), t, name, learn=learn) for name, t in traces.items()]
        results[label] = (sum(r.false_kills for r in rs), sum(r.hung_killed for r in rs),
                          sum(r.wasted_ms for r in rs) / 1000, sum(r.wall_ms for r in rs) / 1000)
    fixed_wasted = results["fixed 30 s"][2]
    for label, (fk, hk, wasted, wall) in results.items():
        ratio = "-" if math.isinf(wasted) or wasted == 0 else f"{fixed_wasted / wasted:.1f}x"
        print(f"{label:<36} {fk:>11} {100 * fk / finishing:>5.1f}% {hk:>11} "
              f"{wasted:>10.0f} {wall:>14.0f} {ratio:>8}")
    print("(vs fixed: how many times less time is wasted on killed calls than with fixed 30 s)")

    print("\n   false kills / wasted seconds per tool")
    names = list(traces)
    print(f"   {'policy':<36} " + " ".join(f"{n:>15}" for n in names))
    for label in ("fixed 30 s", "adaptive, article rule (censored)", "agentlab, min_timeout 0.5 s"):
        learn = "censored"
        cells = []
        for name in names:
            r = replay(POLICIES[label](), traces[name], name, learn=learn)
            cells.append(f"{r.false_kills:>4} / {r.wasted_ms / 1000:>6.0f} s")
        print(f"   {label:<36} " + " ".join(f"{c:>15}" for c in cells))


def measured(scale: float = 0.005, n: int = 200) -> None:
    print(f"\n2. Measured through ToolExecutor: {n} web_search calls, time x{scale} "
          f"(fixed 30 s -> {30 * scale:.2f} s)")

    def registry() -> ToolRegistry:
        reg = ToolRegistry()
        reg.register(latency_tool("web_search", workload()["web_search"], time_scale=scale,
                                  hang_s=0.5))
        return reg
    calls = [ToolCall(f"c{i}", "web_search", {}) for i in range(n)]
    rows = {}
    for label, manager, default in (
            ("fixed 30 s", None, 30 * scale),
            ("agentlab adaptive", AdaptiveTimeoutManager(min_timeout=0.5 * scale), 30.0)):
        ex = ToolExecutor(registry(), default_timeout=default, timeout_manager=manager)
        t0 = time.perf_counter()
        res = [ex.execute([c])[0] for c in calls]
        rows[label] = (time.perf_counter() - t0,
                       sum(r.error_code == "tool_timeout" for r in res))
    nex = NaiveToolExecutor(registry())
    t0 = time.perf_counter()
    nex.execute(calls)
    rows["naive (never enforced)"] = (time.perf_counter() - t0, 0)
    head = f"{'policy':<24} {'wall (s)':>9} {'killed':>7} {'vs agentlab':>12}"
    print(head)
    print("-" * len(head))
    ours = rows["agentlab adaptive"][0]
    for label, (wall, killed) in rows.items():
        print(f"{label:<24} {wall:>9.2f} {killed:>7} {wall / ours:>11.2f}x")
    print("(the naive run waits out each hang; with a real hang it would never return)")


def main() -> None:
    t0 = time.perf_counter()
    replayed()
    measured()
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()

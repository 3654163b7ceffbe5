"""Benchmark: makespan of level-by-level vs ready-queue scheduling against the critical path.

    python benchmarks/bench_dag.py

1. Simulated (``agentlab.dag.simulate_schedule``, no sleeping): random DAGs of 20, 50 and 100
   calls (each call depends on up to 3 earlier ones), lognormal durations (median 100 ms),
   10 seeds each, for 2, 4, 8 and unlimited workers. Makespans are divided by the critical path
   (1.00 is optimal with unlimited workers); ``bound`` is max(critical path, total work / workers),
   a lower bound for any schedule.
2. Measured: the real ``DependencyAwareExecutor`` on sleeping tools (time scaled down 10x),
   levels vs ready queue, and the naive article-style executor under a watchdog.
3. Scheduling overhead per call with tools that return at once: a plain loop, ``ToolExecutor``
   alone, ``DependencyAwareExecutor``, and the naive spin-waiting executor.
"""
from __future__ import annotations

import random
import statistics
import threading
import time


from agentlab.dag import DependencyAwareExecutor, critical_path, simulate_schedule
from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.naive.dag import NaiveDependencyExecutor, run_with_watchdog
from agentlab.sim.tool_latency import LogNormal, latency_tool
from agentlab.tools import ToolRegistry


def random_dag(n: int, seed: int) -> tuple[dict[str, list[str]], dict[str, float]]:
    rng = random.Random(seed)
    ids = [f"t{i:03d}" for i in range(n)]
    deps = {v: sorted(rng.sample(ids[max(0, i - 12):i], min(i, rng.randint(0, 3))))
            for i, v in enumerate(ids)}
    model = LogNormal(100, sigma=0.8, seed=seed)
    return deps, {v: model.sample() for v in ids}


def simulated() -> None:
    print("1. Simulated makespan / critical path (mean of 10 random DAGs; lower is better)")
    head = (f"{'calls':>5} {'workers':>7} {'levels':>7} {'ready fifo':>10} {'ready cp':>9} "
            f"{'bound':>6} {'levels/ready':>12}")
    print(head)
    print("-" * len(head))
    for n in (20, 50, 100):
        for workers in (2, 4, 8, None):
            rows = []
            for seed in range(10):
                deps, dur = random_dag(n, seed)
                cp, _ = critical_path(dur, deps)
                w = workers or n
                lv = simulate_schedule(dur, deps, w, "levels").makespan_ms
                fifo = simulate_schedule(dur, deps, w, "ready", "fifo").makespan_ms
                best = simulate_schedule(dur, deps, w, "ready", "critical_path").makespan_ms
                bound = max(cp, sum(dur.values()) / w)
                rows.append((lv / cp, fifo / cp, best / cp, bound / cp, lv / best))
            m = [statistics.mean(col) for col in zip(*rows)]
            print(f"{n:>5} {workers or 'inf':>7} {m[0]:>7.2f} {m[1]:>10.2f} {m[2]:>9.2f} "
                  f"{m[3]:>6.2f} {m[4]:>11.2f}x")


def measured() -> None:
    print("\n2. Measured on sleeping tools (durations x0.1, 4 workers), makespan in ms")
    head = f"{'DAG':<12} {'critical':>8} {'levels':>8} {'ready':>8} {'levels/ready':>12} {'naive (article)':>18}"
    print(head)
    print("-" * len(head))
    for n, seed in ((20, 1), (50, 2), (100, 3)):
        deps, dur = random_dag(n, seed)
        reg = ToolRegistry()
        for v, ms in dur.items():
            reg.register(latency_tool(v, ms, time_scale=0.1), name=v)
        calls = [ToolCall(v, v, {}) for v in deps]
        spans = {}
        for strategy in ("levels", "ready"):
            ex = DependencyAwareExecutor(reg, max_workers=4, strategy=strategy)
            ex.execute_with_dependencies(calls, deps)
            spans[strategy] = ex.last_schedule.makespan_ms
        stop = threading.Event()
        naive = NaiveDependencyExecutor(reg, max_workers=4, stop=stop)
        out = run_with_watchdog(lambda: naive.execute_with_dependencies(calls, deps), 2.0, stop)
        out["thread"].join(10)
        naive_text = "finished" if out["finished"] else "hung (>2 s)"
        cp = critical_path(dur, deps)[0] * 0.1
        print(f"{f'{n} calls':<12} {cp:>8.0f} {spans['levels']:>8.0f} {spans['ready']:>8.0f} "
              f"{spans['levels'] / spans['ready']:>11.2f}x {naive_text:>18}")


def overhead() -> None:
    print("\n3. Scheduling overhead per call (tools return at once), microseconds per call")
    reg = ToolRegistry()

    @reg.tool()
    def noop() -> str:
        """Return at once."""
        return "ok"
    shapes = {"chain of 100": {f"c{i}": [f"c{i - 1}"] if i else [] for i in range(100)},
              "100 independent": {f"c{i}": [] for i in range(100)},
              "random 100": random_dag(100, 7)[0]}
    head = (f"{'shape':<16} {'plain loop':>10} {'ToolExecutor':>12} {'DAG ready':>10} "
            f"{'naive (no barrier)':>18} {'naive/DAG':>9}")
    print(head)
    print("-" * len(head))
    for label, deps in shapes.items():
        calls = [ToolCall(v, "noop", {}) for v in deps]
        n = len(calls)

        def timed(fn, repeat: int = 3) -> float:
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t0)
            return best / n * 1e6

        plain = timed(lambda: [noop() for _ in calls])
        tex = ToolExecutor(reg)
        single = timed(lambda: [tex.execute([c]) for c in calls])
        dag = DependencyAwareExecutor(reg, max_workers=8)
        ours = timed(lambda: dag.execute_with_dependencies(calls, deps))
        # the naive executor only finishes without its barrier and with a worker per call
        naive = timed(lambda: NaiveDependencyExecutor(reg, max_workers=n, barrier=False)
                      .execute_with_dependencies(calls, deps), repeat=1)
        print(f"{label:<16} {plain:>10.2f} {single:>12.1f} {ours:>10.1f} {naive:>18.1f} "
              f"{naive / ours:>8.1f}x")


def main() -> None:
    t0 = time.perf_counter()
    simulated()
    measured()
    overhead()
    print(f"\n(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()

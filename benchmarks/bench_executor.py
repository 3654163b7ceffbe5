"""Benchmark the tool executor (chapter 03): parallel speedup, a hung tool, per-call overhead.

    python benchmarks/bench_executor.py [--quick]

1. Parallel speedup: K tools that each sleep 100 ms (K = 2, 4, 8, 16), serial vs parallel with
   K workers, against the ideal speedup K; the naive article-style executor beside it.
2. One hung tool (sleeps 3 s) in a batch of four with a 0.5 s timeout: batch wall time of the
   naive executor (``with ThreadPoolExecutor`` + sequential ``result(timeout)``; its serial mode
   has no timeout) vs ``ToolExecutor`` in both modes.
3. Per-call overhead of a no-op tool: a direct call, the naive executor, ``ToolExecutor``.
All numbers come from the same run; ratios compare naive and agentlab measured side by side.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time


from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.naive.executor import NaiveToolExecutor
from agentlab.tools import ToolRegistry


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    def sleep(seconds: float) -> str:
        """Sleep for a while."""
        time.sleep(seconds)
        return "done"

    @reg.tool
    def noop() -> str:
        """Do nothing."""
        return "ok"
    return reg


def wall(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def best_of(n: int, fn, *args) -> float:
    return min(wall(fn, *args) for _ in range(n))


def table(title: str, header: list[str], rows: list[list]) -> None:
    cells = [header] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    print(f"\n{title}")
    for j, r in enumerate(cells):
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))
        if j == 0:
            print("  ".join("-" * w for w in widths))


def bench_speedup(reg: ToolRegistry, ks: list[int], sleep_s: float, repeat: int) -> None:
    rows = []
    for k in ks:
        calls = [ToolCall(str(i), "sleep", {"seconds": sleep_s}) for i in range(k)]
        ex = ToolExecutor(reg, max_workers=k)
        naive = NaiveToolExecutor(reg, max_workers=k)
        serial = best_of(repeat, ex.execute, calls)
        parallel = best_of(repeat, ex.execute_parallel, calls)
        naive_par = best_of(repeat, naive.execute_parallel, calls)
        speedup = serial / parallel
        rows.append([k, f"{serial:.3f}", f"{parallel:.3f}", f"{naive_par:.3f}",
                     f"{speedup:.2f}x", f"{k}x", f"{100 * speedup / k:.0f}%"])
    table(f"1. Parallel speedup: K tools sleeping {sleep_s * 1000:.0f} ms each, max_workers=K "
          f"(best of {repeat})",
          ["K", "serial s", "parallel s", "naive par s", "speedup", "ideal", "efficiency"], rows)


def bench_hung(reg: ToolRegistry, timeout_s: float, hang_s: float) -> None:
    calls = [ToolCall("1", "sleep", {"seconds": 0.05}), ToolCall("2", "sleep", {"seconds": hang_s}),
             ToolCall("3", "sleep", {"seconds": 0.05}), ToolCall("4", "sleep", {"seconds": 0.05})]
    naive = NaiveToolExecutor(reg, default_timeout=timeout_s)
    ex = ToolExecutor(reg, default_timeout=timeout_s)
    runs = [("naive execute (no timeout)", naive.execute),
            ("naive execute_parallel", naive.execute_parallel),
            ("agentlab execute", ex.execute),
            ("agentlab execute_parallel", ex.execute_parallel)]
    walls = {label: wall(fn, calls) for label, fn in runs}
    ref = walls["agentlab execute_parallel"]
    rows = [[label, f"{w:.3f}", f"{w / timeout_s:.2f}", f"{w / ref:.1f}x",
             "yes" if w <= timeout_s + 0.25 else "no"] for label, w in walls.items()]
    table(f"2. One tool hangs {hang_s:g} s in a batch of 4 (others 50 ms), timeout {timeout_s} s",
          ["executor", "wall s", "wall/timeout", "vs agentlab par", "within timeout+0.25 s"],
          rows)
    print(f"   abandoned threads still running after the agentlab runs: {ex.abandoned_threads}")


def bench_overhead(reg: ToolRegistry, n: int) -> None:
    func = reg.get_function("noop")
    one = [ToolCall("1", "noop", {})]
    batch = [ToolCall(str(i), "noop", {}) for i in range(100)]
    ex = ToolExecutor(reg, max_workers=4)
    naive = NaiveToolExecutor(reg, max_workers=4)

    def per_call(fn, *args, calls_per=1, reps=n):
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn(*args)
            samples.append((time.perf_counter() - t0) / (reps * calls_per) * 1e6)
        return statistics.median(samples)

    rows = [
        ["direct call", per_call(func)],
        ["naive execute (1 call, no thread, no timeout)", per_call(naive.execute, one)],
        ["agentlab execute (1 call)", per_call(ex.execute, one)],
        ["agentlab execute (100 calls)", per_call(ex.execute, batch, calls_per=100, reps=n // 100)],
        ["naive execute_parallel (100 calls)",
         per_call(naive.execute_parallel, batch, calls_per=100, reps=n // 100)],
        ["agentlab execute_parallel (100 calls)",
         per_call(ex.execute_parallel, batch, calls_per=100, reps=n // 100)],
    ]
    table(f"3. Per-call overhead, no-op tool (median of 5 x {n} calls)",
          ["path", "us per call"], [[label, f"{us:.2f}"] for label, us in rows])
    us = [v for _, v in rows]
    print(f"   agentlab parallel / naive parallel per call: {us[5] / us[4]:.2f}x; serial: "
          f"+{us[2] - us[1]:.0f} us per call for the worker hand-off that makes a timeout "
          f"enforceable (worker threads alive: {ex.worker_threads})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter hang")
    args = parser.parse_args()
    reg = make_registry()
    print(f"python {sys.version.split()[0]}, {sys.platform}; times are wall clock")
    bench_speedup(reg, [2, 4, 8, 16], 0.1, 1 if args.quick else 3)
    bench_hung(reg, 0.5, 1.5 if args.quick else 3.0)
    bench_overhead(reg, 500 if args.quick else 2000)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark the tool executor (chapter 03): parallel speedup, a hung tool, per-call overhead.

    python benchmarks/bench_executor.py [--quick]

1. Parallel speedup: K tools that each sleep 100 ms (K = 2, 4, 8, 16), serial vs parallel with
   K workers, against the ideal speedup K; the naive article-style executor beside it.
2. One hung tool (sleeps 3 s) in a batch of four with a 0.5 s timeout: batch wall time of the
   naive executor (``with ThreadPoolExecutor`` + sequential ``result(timeout)``; its serial mode
   has no timeout) vs ``ToolExecutor`` in both modes.
3. Per-call overhead of a no-op tool: a direct call, the naive executor, ``ToolExecutor``.
4. A hung ``async def`` tool vs a hung sync tool, 0.2 s timeout: batch wall time, async tasks
   still running and threads still running 50 ms later (a task is cancelled, a thread is
   abandoned); the naive executor "succeeds" with the text of an un-awaited coroutine.
5. 1,000 hung sync calls, one executor per call (one runtime per request): threads left alive
   with the per-process cap vs with the cap lifted (the old per-executor bound only).
All numbers come from the same run; ratios compare naive and agentlab measured side by side.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import threading
import time
import warnings

from agentlab import executor as executor_module

from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.naive.executor import NaiveToolExecutor
from agentlab.tools import ToolRegistry


RELEASE = threading.Event()  # hung sync tools wait on it; set at the end of the run


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool
    async def stuck_async(seconds: float = 30.0) -> str:
        """An async tool that hangs (awaits for a long time)."""
        await asyncio.sleep(seconds)
        return "finished"

    @reg.tool
    def stuck_sync() -> str:
        """A sync tool that hangs until released."""
        RELEASE.wait(600)
        return "released"

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


def settle(check, limit_s: float = 0.05) -> None:
    deadline = time.perf_counter() + limit_s
    while check() and time.perf_counter() < deadline:
        time.sleep(0.002)


def bench_async_vs_sync(reg: ToolRegistry, timeout_s: float, repeat: int) -> None:
    rows = []
    for label, name in (("async tool (cancelled)", "stuck_async"),
                        ("sync tool (abandoned)", "stuck_sync")):
        walls, tasks, threads = [], 0, 0
        ex = ToolExecutor(reg, default_timeout=timeout_s)
        for i in range(repeat):
            t0 = time.perf_counter()
            [r] = ex.execute([ToolCall(f"{name}{i}", name, {})])
            walls.append(time.perf_counter() - t0)
            assert r.error_code == "tool_timeout", r
        settle(lambda: ex.running_tasks)
        tasks, threads = ex.running_tasks, ex.abandoned_threads
        worst = max(walls)
        rows.append([label, f"{statistics.median(walls):.3f}", f"{worst:.3f}",
                     "yes" if worst <= timeout_s + 0.05 else "no", tasks, threads])
    RELEASE.set()  # let the abandoned sync threads finish before the next section
    settle(executor_module.abandoned_threads, 5.0)
    RELEASE.clear()
    naive = NaiveToolExecutor(reg, default_timeout=timeout_s)
    with warnings.catch_warnings():  # the naive executor never awaits the coroutine
        warnings.simplefilter("ignore", RuntimeWarning)
        [nr] = naive.execute([ToolCall("n", "stuck_async", {})])
        gc.collect()
    table(f"4. A hung tool, timeout {timeout_s} s ({repeat} calls on one executor: median and "
          "worst wall; counts 50 ms after the last)",
          ["tool", "wall s", "worst s", "<= timeout+50 ms", "tasks running", "threads running"],
          rows)
    print(f"   naive executor on the async tool: success={nr.success}, result={nr.result[:40]!r}")


def bench_thread_cap(reg: ToolRegistry, n: int) -> None:
    rows = []
    for label, limit in (("process cap (default)", executor_module.abandoned_limit()),
                         ("cap lifted: per-executor bound only", 10 ** 6)):
        previous = executor_module.set_abandoned_limit(limit)
        before = threading.active_count()
        t0 = time.perf_counter()
        codes: dict[str, int] = {}
        try:
            for i in range(n):
                ex = ToolExecutor(reg, default_timeout=0.005)
                [r] = ex.execute([ToolCall(f"h{i}", "stuck_sync", {})])
                codes[r.error_code] = codes.get(r.error_code, 0) + 1
            alive = threading.active_count() - before
            abandoned = executor_module.abandoned_threads()
        finally:
            RELEASE.set()
            executor_module.set_abandoned_limit(previous)
        settle(executor_module.abandoned_threads, 5.0)
        RELEASE.clear()
        rows.append([label, limit if limit < 10 ** 6 else "-", n, alive, abandoned,
                     codes.get("tool_timeout", 0), codes.get("executor_saturated", 0),
                     f"{time.perf_counter() - t0:.1f}"])
    table(f"5. {n} hung sync calls, one ToolExecutor per call (timeout 5 ms)",
          ["setting", "cap", "calls", "threads alive", "abandoned", "tool_timeout",
           "executor_saturated", "wall s"], rows)
    capped, lifted = rows[0][3], rows[1][3]
    print(f"   threads left alive: {capped} with the cap vs {lifted} without "
          f"({lifted / max(capped, 1):.0f}x); capped <= cap: {capped <= rows[0][1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, shorter hang")
    args = parser.parse_args()
    reg = make_registry()
    print(f"python {sys.version.split()[0]}, {sys.platform}; times are wall clock")
    bench_speedup(reg, [2, 4, 8, 16], 0.1, 1 if args.quick else 3)
    bench_hung(reg, 0.5, 1.5 if args.quick else 3.0)
    bench_overhead(reg, 500 if args.quick else 2000)
    bench_async_vs_sync(reg, 0.2, 3 if args.quick else 10)
    bench_thread_cap(reg, 300 if args.quick else 1000)
    RELEASE.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Per-call overhead of a sandboxed tool (warm process pool) against a thread call.

    python benchmarks/bench_sandbox.py [--calls 300]

The same no-op tool (``agentlab.sandbox.demo.noop``) three ways:

- ``direct``: ``noop()`` in the caller (the floor);
- ``thread``: ``ToolExecutor.execute`` of a plain registered tool (a worker thread, chapter 03);
- ``sandbox``: ``ToolExecutor.execute`` of the tool registered with ``sandbox=SandboxPolicy()``
  (a warm worker process: pickle the request, a pipe round trip, JSON back);
- ``pool``: ``SandboxPool.call`` alone (the sandbox without the executor around it);
- ``cold``: starting a confined worker (what a call would cost without the warm pool).

Median and p95 per call in ms, and the sandbox's extra cost over the thread call. Goal: a
sandboxed no-op costs at most 5 ms more than a thread call.
"""
from __future__ import annotations

import argparse
import statistics
import time

from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.sandbox import SandboxPolicy, capabilities, close_pools, demo, pool_for
from agentlab.sandbox.pool import _Worker
from agentlab.tools import ToolRegistry


def timed(fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(0.95 * (len(xs) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=300)
    n = ap.parse_args().calls
    policy = SandboxPolicy(workers=1)
    plain, boxed = ToolRegistry(), ToolRegistry()
    plain.register(demo.noop)
    boxed.register(demo.noop, sandbox=policy)
    calls = [ToolCall("c", "noop", {})]
    thread_ex, sandbox_ex = ToolExecutor(plain), ToolExecutor(boxed)
    pool = pool_for(policy).warm()
    for ex in (thread_ex, sandbox_ex):  # warm both paths
        ex.execute(calls)
    rows = {"direct": timed(demo.noop, n),
            "thread": timed(lambda: thread_ex.execute(calls), n),
            "sandbox": timed(lambda: sandbox_ex.execute(calls), n),
            "pool": timed(lambda: pool.call(demo.noop, {}), n),
            "cold": timed(lambda: _Worker(policy).destroy(), max(3, n // 30))}
    print(f"{'path':<8} {'calls':>6} {'median ms':>10} {'p95 ms':>8}")
    for name, xs in rows.items():
        print(f"{name:<8} {len(xs):>6} {statistics.median(xs):>10.3f} {p95(xs):>8.3f}")
    extra = statistics.median(rows["sandbox"]) - statistics.median(rows["thread"])
    print(f"\nsandbox - thread, median: {extra:.3f} ms per call (goal <= 5 ms): "
          f"{'met' if extra <= 5 else 'NOT met'}")
    print("isolation here:", "; ".join(f"{k}: {v}" for k, v in capabilities().items()
                                       if k in ("processes", "network", "limits")))
    close_pools()


if __name__ == "__main__":
    main()

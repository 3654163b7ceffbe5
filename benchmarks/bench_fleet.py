"""Fleet throughput with 1, 2 and 4 workers, and what a Redis checkpoint costs per turn.

    python benchmarks/bench_fleet.py               # 12 runs per worker count, 20 local runs
    python benchmarks/bench_fleet.py --runs 24 --workers 1 2 4 8

1. runs/min: the research agent with simulated model latency and 0.1 s per tool call, so the
   work is waiting (as with a real API) and more workers should mean proportionally more runs
   per minute; the ratio to one worker and to the ideal (n x one worker) is printed.
2. per-turn overhead of durable checkpoints, in one process without Celery: the same runs with
   no checkpoints, with chapter 11's SQLite store and with chapter 13's Redis store (a local
   redis-server), a checkpoint every turn and every tool result logged.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from agentlab.checkpoints import CheckpointManager
from agentlab.fleet.agent import fleet_llm
from agentlab.fleet.local import LocalFleet
from agentlab.fleet.runs import RunSpec
from agentlab.fleet.server import RedisServer
from agentlab.research import SYSTEM_PROMPT, research_tools
from agentlab.runtime import AgentRuntime

TASK = "Research Python asyncio best practices"


def throughput(workers: int, runs: int) -> tuple[float, int]:
    """Runs per minute on a fresh local fleet of ``workers`` workers (and how many finished)."""
    with LocalFleet(workers=workers) as lf:
        t0 = time.monotonic()
        ids = [lf.fleet.submit(TASK, time_scale=0.5, tool_latency_s=0.1) for _ in range(runs)]
        recs = lf.fleet.wait(ids, timeout_s=600, poll_s=0.05)
        wall = time.monotonic() - t0
    return runs / wall * 60, sum(r["state"] == "finished" for r in recs)


def local_run_s(store: str | None, folder: Path) -> tuple[float, int]:
    """Seconds of one run (and its turns) with checkpoints in ``store`` (None: none)."""
    cm = None if store is None else CheckpointManager(folder, auto_save_interval=1,
                                                      max_checkpoints=None, store=store)
    rt = AgentRuntime(fleet_llm(RunSpec(TASK)), research_tools(folder / "out"),
                      SYSTEM_PROMPT, checkpoints=cm)
    t0 = time.perf_counter()
    result = rt.run(TASK)
    return time.perf_counter() - t0, result.turns


def local_medians(stores: dict[str, str | None], folder: Path, n: int) -> tuple[dict, int]:
    """Median run seconds per store, the stores taking turns so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in stores}
    turns = 0
    for _ in range(n):
        for name, store in stores.items():
            seconds, turns = local_run_s(store, folder)
            times[name].append(seconds)
    return {name: statistics.median(ts) for name, ts in times.items()}, turns


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=12, help="fleet runs per worker count")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--local-runs", type=int, default=20)
    args = ap.parse_args(argv)

    print(f"1. fleet throughput: {args.runs} research runs (simulated model, 0.1 s per tool call)")
    print(f"{'workers':>8} {'runs/min':>9} {'finished':>9} {'x 1 worker':>11} {'of ideal':>9}")
    per_worker = None  # runs/min of one worker, from the first row
    for n in args.workers:
        rate, done = throughput(n, args.runs)
        per_worker = per_worker or rate / n
        print(f"{n:>8} {rate:>9.1f} {done:>6}/{args.runs:<2} "
              f"{rate / (per_worker * args.workers[0]):>11.2f} {rate / (per_worker * n):>9.0%}")

    print(f"\n2. durable checkpoints per turn (median of {args.local_runs} local runs, a "
          "checkpoint every turn)")
    with RedisServer.start() as server, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        stores = {"none": None, "sqlite": str(folder / "ck.db"),
                  "redis": server.url + "?tenant=bench"}
        local_medians(stores, folder, 2)  # warm up: imports, token tables, first writes
        med, turns = local_medians(stores, folder, args.local_runs)
        none_s, sqlite_s, redis_s = med["none"], med["sqlite"], med["redis"]
    per = {name: (s - none_s) / turns * 1000 for name, s in
           (("sqlite", sqlite_s), ("redis", redis_s))}
    print(f"{'store':>8} {'run ms':>8} {'overhead ms/turn':>17}")
    print(f"{'none':>8} {none_s * 1000:>8.1f} {'-':>17}")
    for name, s in (("sqlite", sqlite_s), ("redis", redis_s)):
        print(f"{name:>8} {s * 1000:>8.1f} {per[name]:>17.2f}")
    print(f"redis / sqlite per-turn overhead: {per['redis'] / per['sqlite']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

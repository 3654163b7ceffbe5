"""Soak the fleet: many runs on a few workers, one worker killed (kill -9 of its process group)
every few seconds and restarted, some runs longer than the visibility timeout.

    python benchmarks/fleet_soak.py                          # 200 runs, 3 workers, kill every 4 s
    python benchmarks/fleet_soak.py --runs 30 --kill-every 3 # a quick one

The promise (chapter 13): every run finishes, no completed tool call runs again, no step is
executed twice, nothing is lost. The evidence is the fleet's ledger (``agentlab.fleet.ledger``):
each real tool execution and each step, counted in Redis by the workers. Kill-to-resume is
the time from a killed attempt's last step to the next attempt's first step of the same run.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time

from agentlab.fleet.ledger import takeover_gaps
from agentlab.fleet.local import LocalFleet
from agentlab.fleet.runs import TERMINAL

TASKS = ["Research Python asyncio best practices", "Research asyncio cancellation and timeouts",
         "Research asyncio task groups", "Research asyncio event loop debugging"]


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--kill-every", type=float, default=4.0, help="seconds between kills")
    ap.add_argument("--visibility-timeout", type=float, default=5.0)
    ap.add_argument("--long-every", type=int, default=10,
                    help="every Nth run is longer than the visibility timeout")
    ap.add_argument("--timeout", type=float, default=900.0, help="give up after this many s")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    with LocalFleet(workers=args.workers, visibility_timeout_s=args.visibility_timeout,
                    lease_ttl_s=2.0) as lf:
        f = lf.fleet
        ids = []
        for i in range(args.runs):
            long = args.long_every and i % args.long_every == 0
            ids.append(f.submit(TASKS[i % len(TASKS)], time_scale=0.02, max_attempts=20,
                                tool_latency_s=1.4 if long else 0.02,
                                tool_limits={"web_search": 2}))
        kills, next_kill = 0, time.monotonic() + args.kill_every
        while True:
            states = [r["state"] for r in f.records.all()]
            if all(s in TERMINAL for s in states) or time.monotonic() - t0 > args.timeout:
                break
            if time.monotonic() >= next_kill:
                victim = rng.choice(lf.workers)
                victim.kill()   # kill -9 of its process group, wherever its runs are
                victim.start()  # and a replacement comes up
                kills += 1
                next_kill = time.monotonic() + args.kill_every
            time.sleep(0.2)
        recs = f.records.all()
        finished = sum(r["state"] == "finished" for r in recs)
        lost = sum(r["state"] not in TERMINAL for r in recs)
        reexec = f.ledger.reexecuted()
        twice = sum(len(f.ledger.steps_twice(i)) for i in ids)
        gaps = [g for i in ids for g in takeover_gaps(f.ledger.steps(i))]
        long_ms = [r["result"]["duration_ms"] for r in recs
                   if r.get("result") and r["spec"]["tool_latency_s"] > 1]
        resumed = sum(r["attempts"] > 1 for r in recs)
        logs = "".join(w.log_path.read_text(errors="replace") for w in lf.workers)
        superseded = logs.count("succeeded in") and logs.count("s: 'lease_lost'")
    wall = time.monotonic() - t0
    print(f"{args.runs} runs, {args.workers} workers, {kills} kills (every {args.kill_every} s), "
          f"visibility timeout {args.visibility_timeout} s, wall {wall:.1f} s")
    print(f"runs resumed after a kill: {resumed}; takeovers: {len(gaps)}; long runs: "
          f"{len(long_ms)} (longest {max(long_ms, default=0) / 1000:.1f} s); attempts that "
          f"found their lease taken and stopped: {superseded}")
    print(f"fleet_soak: {finished}/{args.runs} finished, {reexec} re-executed tool calls, "
          f"{twice} steps executed twice, {lost} lost; kill→resume median "
          f"{statistics.median(gaps) if gaps else float('nan'):.1f} s p95 "
          f"{percentile(gaps, 95):.1f} s")
    return 0 if finished == args.runs and not reexec and not twice and not lost else 1


if __name__ == "__main__":
    sys.exit(main())

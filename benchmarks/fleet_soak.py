"""Soak the fleet as a user would run it: Redis with an append-only file, a few workers, many
runs, workers killed with -9 (and restarted) and Redis itself killed with -9 and restarted.

    python benchmarks/fleet_soak.py                                   # the issue-22 soak:
        # 100 runs, 3 workers, 40 worker kills, 3 Redis kills of 1-10 s, README defaults
    python benchmarks/fleet_soak.py --runs 30 --kills 10 --redis-restarts 2   # a quicker one

The promise (chapter 13): every run finishes, nothing is lost, no call whose result was
recorded runs again, no step is executed twice. The evidence is the fleet's ledger
(``agentlab.fleet.ledger``: each real tool execution and each step, counted in Redis by the
workers) and, outside the ledger, the side-effect file of the soak's own tools
(``benchmarks/soak_tools.py``, loaded by the workers with ``--tools`` as a user's would be):
one line per ``read_url``/``write_file`` execution, appended by the tool itself once its work
is done, so a call that ran twice shows twice whatever the ledger says; compared with the time
the call's result was recorded in the durable tool log, it says whether the repeat broke the
guarantee (it started after the result was recorded) or is the case the guarantee leaves open
(the worker was killed after the tool returned but before its result was recorded). Kill-to-resume is the
time from the kill -9 of a worker to the next step of each run it held, on the attempt that took over
(takeovers across a Redis outage are reported apart, from the old attempt's last step: they
wait for Redis, not for the lease).

On failure the soak keeps its evidence: the run records, every run's ledger (executions and
steps), the side-effect file and the worker logs are written to ``--keep`` (default a new
``fleet-soak-*`` folder in the temp dir), and the folder is printed.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from agentlab.checkpoints import CheckpointManager
from agentlab.fleet.local import LocalFleet
from agentlab.fleet.reach import UNREACHABLE, FleetUnavailableError
from agentlab.fleet.runs import TERMINAL

TASKS = ["Research Python asyncio best practices", "Research asyncio cancellation and timeouts",
         "Research asyncio task groups", "Research asyncio event loop debugging"]
TOOLS = "soak_tools:make_registry"


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def side_effects(path: Path) -> dict[str, list[float]]:
    """``{idempotency key: [start time of each execution]}`` from the tools' own file."""
    out: dict[str, list[float]] = collections.defaultdict(list)
    for line in (path.read_text().splitlines() if path.exists() else []):
        parts = line.split()
        if len(parts) == 4:
            out[parts[0]].append(float(parts[2]))
    return dict(out)


def reruns(effects: dict[str, list[float]], cm: CheckpointManager) -> tuple[int, int]:
    """(executions that started after the call's result was recorded, other repeated
    executions): the first breaks the guarantee; the second is what it allows (a kill landed
    between the tool's return and the log write, so the result was never recorded)."""
    after = before = 0
    logs: dict[str, dict] = {}
    for key, starts in effects.items():
        run_id, _, call_id = key.partition(":")
        if run_id not in logs:
            logs[run_id] = cm.completed_tool_calls(run_id)
        rec = logs[run_id].get(call_id)
        recorded = datetime.fromisoformat(rec["recorded_at"]).timestamp() if rec else float("inf")
        first, *again = sorted(starts)
        after += sum(t > recorded for t in again)
        before += sum(t <= recorded for t in again)
    return after, before


def keep_evidence(lf: LocalFleet, ids: list[str], effects: Path, folder: Path,
                  faults: dict) -> Path:
    """Write what a failed soak needs to be understood (see the module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    f = lf.fleet
    (folder / "runs.json").write_text(json.dumps(f.records.all(), indent=1, default=str))
    (folder / "faults.json").write_text(json.dumps(faults, indent=1))
    ledger = {i: {"executions": f.ledger.executions(i), "steps": f.ledger.steps(i)} for i in ids}
    (folder / "ledger.json").write_text(json.dumps(ledger, indent=1))
    if effects.exists():
        shutil.copy(effects, folder / effects.name)
    for w in lf.workers:
        if w.log_path.exists():
            shutil.copy(w.log_path, folder / w.log_path.name)
    return folder


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--workers", type=int, default=3)
    ap.add_argument("--kills", type=int, default=40, help="worker kills (kill -9, restart)")
    ap.add_argument("--kill-every", type=float, default=2.5, help="seconds between kills")
    ap.add_argument("--redis-restarts", type=int, default=3,
                    help="Redis kill -9 + restart (AOF) during the load")
    ap.add_argument("--redis-down", type=float, nargs=2, default=[1.0, 10.0], metavar=("MIN", "MAX"),
                    help="seconds Redis stays down (uniform between MIN and MAX)")
    ap.add_argument("--visibility-timeout", type=float, default=30.0, help="README default 30")
    ap.add_argument("--lease-ttl", type=float, default=3.0, help="README default 3")
    ap.add_argument("--tool-latency", type=float, default=0.3, help="seconds per tool call")
    ap.add_argument("--long-every", type=int, default=10,
                    help="every Nth run is longer than the visibility timeout")
    ap.add_argument("--timeout", type=float, default=1200.0, help="give up after this many s")
    ap.add_argument("--keep", default=None,
                    help="keep the evidence here (always; by default only on failure, in a new "
                         "temp folder)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    effects = Path(tempfile.mkdtemp(prefix="fleet-soak-effects-")) / "side_effects.txt"
    with LocalFleet(workers=args.workers, visibility_timeout_s=args.visibility_timeout,
                    lease_ttl_s=args.lease_ttl, appendonly=True, tools=TOOLS,
                    extra_env={"AGENTLAB_SOAK_EFFECTS": str(effects), "PYTHONPATH": os.pathsep.join(
                        [str(Path(__file__).resolve().parent), *sys.path])}) as lf:
        f = lf.fleet
        ids = []
        for i in range(args.runs):
            long = args.long_every and i % args.long_every == 0
            ids.append(f.submit(TASKS[i % len(TASKS)], time_scale=0.02, max_attempts=3, tools=TOOLS,
                                tool_latency_s=6.0 if long else args.tool_latency,
                                tool_limits={"web_search": 2}))
        kills, outages, kill_log = 0, [], []
        next_kill = time.monotonic() + args.kill_every
        # Redis restarts spread over the time the kills take
        span = args.kills * args.kill_every
        restarts = sorted(time.monotonic() + span * (k + 0.5) / max(args.redis_restarts, 1)
                          for k in range(args.redis_restarts))
        while True:
            try:
                states = [r["state"] for r in f.runs()]
            except (FleetUnavailableError, *UNREACHABLE):
                states = [""]
            if all(s in TERMINAL for s in states) or time.monotonic() - t0 > args.timeout:
                break
            now = time.monotonic()
            if kills < args.kills and now >= next_kill:
                victim = rng.choice(lf.workers)
                kill_log.append((time.time(), victim.name))
                victim.kill()   # kill -9 of its process group, wherever its runs are
                victim.start()  # and a replacement comes up
                kills += 1
                next_kill = now + args.kill_every
            if restarts and now >= restarts[0]:
                restarts.pop(0)
                down = rng.uniform(*args.redis_down)
                start = time.time()
                lf.redis.kill()
                time.sleep(down)
                lf.redis.restart()
                outages.append((start, time.time()))
            time.sleep(0.2)
        recs = f.runs()
        finished = sum(r["state"] == "finished" for r in recs)
        lost = sum(r["state"] not in TERMINAL for r in recs)
        reexec, rerun = f.ledger.reexecuted(), f.ledger.rerun_after_return()
        twice = sum(len(f.ledger.steps_twice(i)) for i in ids)
        effects_after, effects_before = reruns(side_effects(effects),
                                               CheckpointManager(store=lf.cfg.checkpoints))
        gaps, outage_gaps, other = [], [], 0
        for i in ids:
            for prev, nxt in _takeovers(f.ledger.steps(i)):
                name = prev["worker"].split("@")[0]
                killed = [t for t, w in kill_log if w == name and prev["t"] <= t <= nxt["t"]]
                if any(a - 1 <= nxt["t"] and prev["t"] <= b + 1 for a, b in outages):
                    outage_gaps.append(nxt["t"] - prev["t"])   # it waited for Redis
                elif killed:    # from the kill of the old holder's worker to the new holder
                    gaps.append(nxt["t"] - killed[-1])
                else:
                    other += 1
        long_ms = [r["result"]["duration_ms"] for r in recs
                   if r.get("result") and r["spec"]["tool_latency_s"] > 1]
        resumed = sum(r["attempts"] > 1 for r in recs)
        infra = sum(r.get("infra_losses", 0) for r in recs)
        crashes = sum(r["attempts"] - 1 - r.get("infra_losses", 0) for r in recs if r["attempts"])
        ok = finished == args.runs and not reexec and not twice and not lost and not effects_after
        kept = None if ok and not args.keep else keep_evidence(
            lf, ids, effects, Path(args.keep or tempfile.mkdtemp(prefix="fleet-soak-")),
            {"worker_kills": kill_log, "redis_outages": outages})
    wall = time.monotonic() - t0
    print(f"{args.runs} runs, {args.workers} workers, {kills} worker kills (every "
          f"{args.kill_every} s), {len(outages)} Redis kills (down "
          f"{', '.join(f'{b - a:.1f}' for a, b in outages) or '-'} s, AOF), visibility timeout "
          f"{args.visibility_timeout} s, lease ttl {args.lease_ttl} s, wall {wall:.1f} s")
    print(f"runs resumed: {resumed}; attempts lost to the infrastructure: {infra}, to crashes: "
          f"{crashes}; long runs: {len(long_ms)} (longest {max(long_ms, default=0) / 1000:.1f} s)")
    print(f"kill→resume (kill -9 of the holder's worker to the run's next step on another "
          f"attempt): {len(gaps)} takeovers, median "
          f"{statistics.median(gaps) if gaps else float('nan'):.1f} s, p95 {percentile(gaps, 95):.1f} s,"
          f" max {max(gaps, default=float('nan')):.1f} s; across a Redis outage (last step to next "
          f"step): {len(outage_gaps)}, median "
          f"{statistics.median(outage_gaps) if outage_gaps else float('nan'):.1f} s; other: {other}")
    print(f"outside the ledger (the tools' own file): {effects_after} executions of a call "
          f"whose result was already recorded; {effects_before} repeated executions of calls whose "
          f"result was not yet recorded (a kill between the tool's return and the log write)")
    print(f"fleet_soak: {finished}/{args.runs} finished, {lost} lost, {reexec} re-executed "
          f"recorded tool calls (ledger), {effects_after} (outside it), {twice} steps executed "
          f"twice; calls run again after returning but before their result was recorded: "
          f"{rerun - reexec} (allowed)")
    if kept:
        print(f"fleet_soak: {'passed' if ok else 'FAILED'}; evidence kept in {kept}")
    return 0 if ok else 1


def _takeovers(steps: list[dict]):
    """(old holder's last step, new holder's first step) per takeover of a run."""
    last = None
    for s in steps:
        if last is not None and s["token"] != last["token"]:
            yield last, s
        last = s


if __name__ == "__main__":
    sys.exit(main())

"""Time travel (chapter 16): what going back costs, and what it re-executes.

    python benchmarks/bench_timetravel.py [--runs 30]

Part 1: the research agent (6 turns, a checkpoint every turn), then for each revision 1-6:
tool bodies (and side effects: ``write_file``) run again by the naive "resume an old snapshot"
(``agentlab.naive.timetravel``) and by ``agentlab.timetravel.replay`` (read-only); bodies are
counted in the tool functions, outside the durable log.
Part 2: time to list a 6-turn run's history, to fork it, to replay it, beside the original run,
on the JSON and SQLite stores (median of 5).
Part 3: a counterfactual sweep of ``--runs`` runs x 3 settings: wall time, and the paired table.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

from agentlab import CheckpointManager, sim, widgets
from agentlab import timetravel as tt
from agentlab.naive.timetravel import resume_from_snapshot
from agentlab.research import research_tools
from agentlab.timetravel.sweep import counterfactual_sweep

TASK = "Write a short report on asyncio pitfalls"


def _store(root: Path, name: str, store: str | None = None) -> CheckpointManager:
    return CheckpointManager(root / name, auto_save_interval=1, max_checkpoints=None, store=store)


def part1(root: Path) -> None:
    cm = _store(root, "p1")
    run_id = widgets.research_runtime(cm, root / "out", ran=Counter()).run(TASK).run_id
    print("revision  naive: bodies (write_file)   replay: bodies (write_file)")
    for rev in range(1, 7):
        naive, ro = Counter(), Counter()
        resume_from_snapshot(tt.load_revision(cm, run_id, rev),
                             lambda c: widgets.research_runtime(c, root / "out", ran=naive))
        tt.replay(cm, run_id, sim.Simulator(sim.Researcher()).llm(),
                  widgets.count_calls(research_tools(root / "out"), ro), revision=rev)
        print(f"{rev:>8}  {sum(naive.values()):>13} ({naive['write_file']})"
              f"   {sum(ro.values()):>14} ({ro['write_file']})")


def _median_ms(fn, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def part2(root: Path) -> None:
    print("\nstore   run ms  history ms  fork ms  replay ms   (median of 5)")
    for name, store in (("json", None), ("sqlite", "sqlite")):
        cm = _store(root, f"p2-{name}", store)
        run_ms = _median_ms(lambda: widgets.research_runtime(cm, root / "out").run(TASK))
        run_id = cm.list_checkpoints()[-1]["run_id"]
        hist = _median_ms(lambda: tt.history(cm, run_id))
        fork = _median_ms(lambda: tt.fork(cm, run_id, 3))
        rep = _median_ms(lambda: tt.replay(cm, run_id, sim.Simulator(sim.Researcher()).llm(),
                                           research_tools(root / "out")))
        print(f"{name:<6} {run_ms:>7.1f} {hist:>11.1f} {fork:>8.1f} {rep:>10.1f}")


def part3(root: Path, n: int) -> None:
    cm = _store(root, "p3")
    make = lambda ov: widgets.research_runtime(cm, root / "out", overrides=ov)  # noqa: E731
    runs = [make({}).run(f"Write a short report on asyncio topic {i}").run_id for i in range(n)]
    grid = {"as run": None,
            "page 2 lost": tt.ReplaceToolResult("Error: page not found", tool="read_url", nth=1),
            "max_turns 4": tt.SetConfig(max_turns=4)}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = counterfactual_sweep(cm, runs, 3, grid, make, metrics=("success", "tokens"))
    print(f"\nsweep: {len(res.rows)} forks in {time.perf_counter() - t0:.1f} s")
    print("\n".join(res.table()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        part1(root)
        part2(root)
        part3(root, args.runs)


if __name__ == "__main__":
    main()

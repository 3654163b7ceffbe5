"""Benchmark: sweep throughput (runs/s) with the process pool vs a single process.

    python benchmarks/bench_experiments.py [--cells 120] [--workers 2]

For each built-in scenario of ``agentlab.experiments`` (``tools``: an agent whose tools sleep
under fixed/adaptive timeouts; ``research``: the research agent under compression, CPU-bound;
``dag``: a sleeping DAG of 20 calls), the same sweep of ``--cells`` cells is run four ways, in
this run, end to end (pool start-up included):

1. a plain loop calling ``run_cell`` (no journal, no progress): the floor;
2. ``Experiment.run(workers=1)``: in this process, journaled to disk;
3. ``Experiment.run(workers=N)``: a spawn-started pool of N processes, journaled;
4. the same pool sweep again in the same directory: every cell is reused (the resume path).

The ratio pool / single says what the pool buys on this machine; sleeping (I/O-bound) cells
gain even beyond the core count, CPU-bound ones at most the number of free cores. The machine's
load is printed first because the helpers of this project share 2 cores.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from agentlab.experiments import Experiment, run_cell

SPECS = {
    "tools": lambda n: Experiment(grid={"timeouts": ["fixed", "adaptive"]}, seeds=n // 2,
                                  tasks=["tools"], settings={"turns": 4}, name="bench-tools"),
    "research": lambda n: Experiment(grid={"compression_threshold": [0.6, 0.9]}, seeds=n // 2,
                                     tasks=["research"], name="bench-research"),
    "dag": lambda n: Experiment(grid={"strategy": ["levels", "ready"]}, seeds=n // 2,
                                tasks=["dag"], name="bench-dag"),
}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(name: str, cells: int, workers: int, root: Path) -> dict:
    exp = SPECS[name](cells)
    n = len(exp.cells())
    run_cell(exp.cells()[0])  # warm up this process (imports, encodings) before timing
    plain = _timed(lambda: [run_cell(c) for c in exp.cells()])
    single = _timed(lambda: exp.run(workers=1, progress=False, out=root / f"{name}-1"))
    pool = _timed(lambda: exp.run(workers=workers, progress=False, out=root / f"{name}-n"))
    resumed = _timed(lambda: exp.run(workers=workers, progress=False, out=root / f"{name}-n"))
    return {"scenario": name, "cells": n, "plain": n / plain, "single": n / single,
            "pool": n / pool, "resume_s": resumed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=200, help="cells per scenario (even)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--scenarios", nargs="*", default=list(SPECS))
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"sweep throughput, {args.cells} cells per scenario, pool of {args.workers} "
          f"(cpu_count {os.cpu_count()}, load average {load:.1f})")
    head = (f"{'scenario':<10}{'cells':>6}{'plain loop':>12}{'single':>9}{'pool':>9}"
            f"{'pool/single':>13}{'resume (s)':>12}")
    print(head + "\n" + "-" * len(head))
    root = Path(tempfile.mkdtemp(prefix="agentlab-bench-"))
    t0 = time.perf_counter()
    try:
        for name in args.scenarios:
            r = bench(name, args.cells, args.workers, root)
            print(f"{r['scenario']:<10}{r['cells']:>6}{r['plain']:>12.1f}{r['single']:>9.1f}"
                  f"{r['pool']:>9.1f}{r['pool'] / r['single']:>12.2f}x{r['resume_s']:>12.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("(runs/s, end to end; pool includes starting its spawned workers; resume: a second "
          "run of the pool sweep, every cell already journaled)")
    print(f"(total {time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()

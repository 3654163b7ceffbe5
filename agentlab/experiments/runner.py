"""Running a sweep: executors of cells, resume, the cost cap, progress (notebook 14).

Cells go to a *cell executor*, anything with ``submit(cell) -> Future`` and
``shutdown(cancel=False)``:

- ``ProcessPoolCells(n)`` (the default): a ``concurrent.futures.ProcessPoolExecutor`` started
  with ``spawn`` (a fresh interpreter per worker, the same on Linux, macOS and Windows), so
  the cell, a plain dataclass, is pickled across and built into a runtime there;
- ``InProcessCells()`` (``workers=1``): one cell after another in this process;
- the Celery fleet of chapter 13 (``fleet=True``), once ``agentlab.fleet`` registers its
  executor with ``register_fleet(factory)``; until then ``fleet=True`` is a ``ConfigError``.

The loop keeps at most ``2 x workers`` cells in flight and journals each cell the moment it
comes back (``agentlab.experiments.store``), so an interrupted sweep resumes where it stopped.
**Resume you can trust:** a cell that raised (``status="error"``) runs again on the next call
(``retry_errors=True``, the default: the bug may be fixed); each record carries the code
identity (``store.code_identity``), and finished cells made by other code are refused
(``code_changed``) unless ``force``. Pool workers watch their parent and exit when it dies,
so a sweep killed with ``kill -9`` leaves no orphans (POSIX: a worker sees its parent pid
change). The manifest records the machine's load at the start and end of each session.
**Cost cap:** before a cell starts, its worst case is reserved; a cell that does not fit next
to the spend so far and the reservations of the running cells waits for them, and once
nothing is running and it still does not fit, it and every cell after it are marked
``skipped_cost_cap`` (they run on a later call with a larger cap).
"""
from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from importlib.metadata import entry_points
from typing import Any, Callable, Protocol

from ..errors import AgentError, ConfigError
from .cells import Cell, get_scenario, run_cell, watch_parent
from .pricing import require_prices
from .results import LOAD_SENSITIVE, MEASURED, Results, build_tables
from .store import (SweepStore, check_identity, code_identity, machine_load, now_iso,
                    package_versions)

__all__ = ["CellExecutor", "InProcessCells", "ProcessPoolCells", "register_fleet",
           "fleet_executor", "run"]


class CellExecutor(Protocol):
    """What runs cells: ``submit(cell)`` returns a future of ``run_cell(cell)``'s record."""

    workers: int

    def submit(self, cell: Cell) -> Future: ...

    def shutdown(self, cancel: bool = False) -> None: ...


class InProcessCells:
    """Runs each cell at ``submit`` time, in this process (``workers=1``)."""

    workers = 1
    kind = "in_process"

    def submit(self, cell: Cell) -> Future:
        future: Future = Future()
        future.set_result(run_cell(cell))  # KeyboardInterrupt propagates to the loop
        return future

    def shutdown(self, cancel: bool = False) -> None:
        pass


class ProcessPoolCells:
    """A spawn-started process pool of ``workers`` processes that die with their parent."""

    kind = "process_pool"

    def __init__(self, workers: int) -> None:
        self.workers = int(workers)
        self._pool = ProcessPoolExecutor(self.workers,
                                         mp_context=multiprocessing.get_context("spawn"),
                                         initializer=watch_parent, initargs=(os.getpid(),))

    def submit(self, cell: Cell) -> Future:
        return self._pool.submit(run_cell, cell)

    def shutdown(self, cancel: bool = False) -> None:
        self._pool.shutdown(wait=not cancel, cancel_futures=cancel)


_FLEET: dict[str, Callable[[], CellExecutor]] = {}


def register_fleet(factory: Callable[[], CellExecutor]) -> None:
    """Register how to build the fleet's cell executor (``fleet=True``). Chapter 13's
    ``agentlab.fleet.cells.CeleryCells`` is found without this, through the
    ``agentlab.fleet_executors`` entry point, once ``AGENTLAB_REDIS_URL`` is set."""
    _FLEET["factory"] = factory


def fleet_executor() -> CellExecutor:
    """The registered fleet executor, or a ``ConfigError`` saying what is missing."""
    if "factory" not in _FLEET and os.environ.get("AGENTLAB_REDIS_URL"):
        for entry in entry_points(group="agentlab.fleet_executors"):  # chapter 13 fills it
            register_fleet(entry.load())
            break
    if "factory" in _FLEET:
        return _FLEET["factory"]()
    missing = ("AGENTLAB_REDIS_URL is not set" if not os.environ.get("AGENTLAB_REDIS_URL")
               else "no fleet executor is registered (agentlab.experiments.register_fleet)")
    raise ConfigError("fleet_not_configured", "fleet=True runs cells on the Celery fleet of "
                      "chapter 13 (agentlab.fleet), which needs AGENTLAB_REDIS_URL (e.g. "
                      f"redis://localhost:6379/0) and its workers; {missing}. Run locally "
                      "with fleet=False (a process pool) instead.",
                      details={"env": "AGENTLAB_REDIS_URL", "chapter": 13})


def _progress(progress: Any, total: int, initial: int, name: str) -> Any:
    if callable(progress) and not isinstance(progress, bool):
        return _CallbackBar(progress, total, initial)
    # the plain text bar, also in a notebook: a saved notebook then shows the finished bar as
    # text, where tqdm.auto's widget bar would show "model not found" before it is run again.
    # Off a terminal (a notebook, a log) the bar leaves out times and rates, so what is saved
    # depends on the sweep only, not on how busy the machine was.
    from tqdm.std import tqdm  # lazy: heavy
    counts_only = None if sys.stderr.isatty() else \
        "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} runs"
    return tqdm(total=total, initial=initial, desc=name, unit="run", disable=not progress,
                file=sys.stderr, dynamic_ncols=True, bar_format=counts_only)


class _CallbackBar:
    """``progress=callable``: called as ``fn(done, total)`` after every cell."""

    def __init__(self, fn: Callable[[int, int], Any], total: int, initial: int) -> None:
        self.fn, self.total, self.n = fn, total, initial
        fn(initial, total)

    def update(self, k: int = 1) -> None:
        self.n += k
        self.fn(self.n, self.total)

    def set_postfix_str(self, text: str) -> None:
        pass

    def close(self) -> None:
        pass


def run(experiment: Any, *, workers: int | None = None, fleet: Any = False,
        executor: CellExecutor | None = None, out: str | os.PathLike | None = None,
        progress: Any = True, force: bool = False, cost_cap_usd: float | None = None,
        requests_per_minute: float | None = None, tokens_per_minute: float | None = None,
        retry_errors: bool = True) -> Results:
    """Run every cell of ``experiment`` not yet finished in ``out``; return ``Results``.

    Args:
        workers: processes of the pool (default: the CPU count); 1 runs in this process.
        fleet: True for the chapter 13 fleet, or a ``CellExecutor`` object.
        executor: any ``CellExecutor`` (overrides ``workers`` and ``fleet``).
        out: directory for the journal, tables and manifest (needed to resume).
        progress: True (a tqdm bar), False, or ``fn(done, total)``.
        force: reuse ``out`` although it holds another experiment, or cells made by other
            code (see the module docstring).
        cost_cap_usd: hard cap on the sweep's total spend (see the module docstring).
        requests_per_minute, tokens_per_minute: client-side limits for the whole sweep,
            split evenly across the workers.
        retry_errors: run the cells journaled with ``status="error"`` again (default); False
            keeps their error records.
    """
    opts = experiment.run_options
    cap = cost_cap_usd if cost_cap_usd is not None else opts.get("cost_cap_usd")
    rpm = requests_per_minute or opts.get("requests_per_minute")
    tpm = tokens_per_minute or opts.get("tokens_per_minute")
    workers = workers if workers is not None else opts.get("workers") or os.cpu_count() or 1
    if workers < 1:
        raise ConfigError("invalid_argument", f"workers must be >= 1, got {workers}")
    executor = executor or _choose_executor(fleet or opts.get("fleet", False), workers)
    try:
        return _run(experiment, executor, out, progress, force, cap, rpm, tpm, retry_errors)
    finally:
        executor.shutdown(cancel=True)


def _choose_executor(fleet: Any, workers: int) -> CellExecutor:
    if fleet:
        return fleet_executor() if isinstance(fleet, bool) else fleet  # an executor object
    return InProcessCells() if workers == 1 else ProcessPoolCells(workers)


def _run(experiment: Any, executor: CellExecutor, out: Any, progress: Any, force: bool,
         cap: float | None, rpm: float | None, tpm: float | None, retry: bool) -> Results:
    n = max(1, int(getattr(executor, "workers", 1)))
    limits = {k: v / n for k, v in (("requests_per_minute", rpm), ("tokens_per_minute", tpm)) if v}
    cells = experiment.cells(cost_cap_usd=cap, limits=limits)
    if cap is not None:
        for model in {c.settings["model"] for c in cells if "model" in c.settings}:
            require_prices(model)
    identities = code_identity({t.scenario: get_scenario(t.scenario) for t in experiment.tasks})
    store = SweepStore(out, code=identities) if out is not None else None
    done: dict[str, dict] = {}
    retried = other_code = 0
    if store is not None:
        store.check_compatible(experiment.spec_hash, force)
        ids = {c.cell_id for c in cells}
        done = {k: r for k, r in store.records().items() if k in ids}
        if retry:  # a cell that raised runs again: its bug may have been fixed since
            retried = sum(r.get("status") == "error" for r in done.values())
            done = {k: r for k, r in done.items() if r.get("status") != "error"}
        other_code = check_identity(done, identities, force, store.dir)
    manifest = _manifest(experiment, cells, store, executor, cap, done)
    manifest["session"] = {"retried": retried, "reused_other_code": other_code,
                           "code": identities}
    reused, t0 = len(done), time.perf_counter()
    if store is not None:
        store.write_manifest(manifest)
    # cells with the same settings, seed and task (a grid key their scenario ignores) are
    # one computation: run once, shown in every row that names it
    unique: dict[str, Cell] = {}
    for cell in cells:
        unique.setdefault(cell.cell_id, cell)
    try:
        _loop([c for c in unique.values() if c.cell_id not in done], executor, store, done, cap,
              _progress(progress, len(unique), len(done), experiment.name))
    except BaseException:
        manifest.update(status="interrupted", ended_at=now_iso())
        if store is not None:
            store.close()
            store.write_manifest(_finish(manifest, done, reused, t0))
        raise
    if store is not None:
        store.close()
    runs, calls = build_tables(cells, done)
    manifest.update(status="complete", ended_at=now_iso())
    results = Results(runs, calls, _finish(manifest, done, reused, t0))
    if store is not None:
        results.save(store.dir)
    return results


def _loop(todo: list[Cell], executor: CellExecutor, store: SweepStore | None,
          done: dict[str, dict], cap: float | None, bar: Any) -> None:
    """Submit, collect and journal cells; ``done`` grows in place as they finish."""
    pending, running = deque(todo), {}
    spent = sum(float(r["run"].get("cost_usd") or 0.0) for r in done.values()
                if r["run"].get("cost_usd") == r["run"].get("cost_usd"))  # NaN-safe
    reserved = 0.0
    in_flight = 2 * max(1, int(getattr(executor, "workers", 1)))
    try:
        while pending or running:
            while pending and len(running) < in_flight:
                cell = pending[0]
                need = cell.budget_usd or 0.0
                if cap is not None and spent + reserved + need > cap + 1e-12:
                    if running:
                        break  # the running cells may spend less than reserved: wait for them
                    for c in pending:  # nothing running and still no room: skip the rest
                        done[c.cell_id] = {"cell_id": c.cell_id, "index": c.index,
                                           "status": "skipped_cost_cap", "run": {},
                                           "tool_calls": [], "cell": c.to_dict()}
                    bar.update(len(pending))
                    pending = deque()
                    break
                pending.popleft()
                reserved += need
                running[executor.submit(cell)] = cell
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in finished:
                cell = running.pop(fut)
                try:
                    record = fut.result()
                except BrokenProcessPool:
                    raise AgentError("worker_died", f"a worker process died while running cell "
                                     f"{cell.index} ({cell.config}, seed {cell.seed}); the "
                                     "finished cells are in the journal: run the sweep again "
                                     "to resume", retryable=True) from None
                record["cell"] = cell.to_dict()
                reserved -= cell.budget_usd or 0.0
                cost = record["run"].get("cost_usd")
                spent += cost if isinstance(cost, (int, float)) and cost == cost else 0.0
                done[cell.cell_id] = record
                if store is not None:
                    store.append(record)
                bar.update(1)
                if cap is not None:
                    bar.set_postfix_str(f"${spent:.4f} of ${cap:.4f}")
    finally:
        bar.close()


def _manifest(experiment: Any, cells: list[Cell], store: SweepStore | None,
              executor: CellExecutor, cap: float | None, done: dict) -> dict:
    old = store.manifest() if store is not None else None
    sessions = list((old or {}).get("sessions", []))
    estimate = experiment.estimate_cost(done, cap)
    return {"format_version": 1, "name": experiment.name, "spec_hash": experiment.spec_hash,
            "experiment": experiment.to_dict(), "seeds": list(experiment.seeds),
            "configs": [{"config": label, "grid": point} for label, point in experiment.configs],
            "tasks": [{"name": t.name, "scenario": t.scenario,
                       "settings": experiment.settings_for(t, {})} for t in experiment.tasks],
            "uses_llm": {t.scenario: get_scenario(t.scenario).uses_llm for t in experiment.tasks},
            "cells": len(cells),
            "plan": [[c.cell_id, c.index, c.config, c.task["name"], c.task["scenario"], c.seed]
                     for c in cells],
            "executor": getattr(executor, "kind", type(executor).__name__),
            "workers": int(getattr(executor, "workers", 1)), "versions": package_versions(),
            "started_at": now_iso(), "ended_at": None, "status": "running",
            "cost": {"cap_usd": cap, "worst_case_usd": estimate.worst_case_usd,
                     "spent_usd": estimate.spent_usd},
            "measured_columns": {k: list(v) for k, v in MEASURED.items()},
            "load_sensitive_columns": {k: list(v) for k, v in LOAD_SENSITIVE.items()},
            "load": {"start": machine_load(), "end": None}, "sessions": sessions}


def _finish(manifest: dict, done: dict, reused: int, t0: float) -> dict:
    """Counts, spend, throughput and this session's entry, for the final manifest."""
    elapsed = time.perf_counter() - t0
    manifest["load"]["end"] = machine_load()
    counts: dict[str, int] = {}
    for r in done.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    costs = [r["run"].get("cost_usd") for r in done.values()]
    ran = len(done) - reused - counts.get("skipped_cost_cap", 0)
    manifest["counts"] = counts
    manifest["cost"]["spent_usd"] = sum(c for c in costs if isinstance(c, (int, float)) and c == c)
    manifest["sessions"] = manifest["sessions"] + [{
        "started_at": manifest["started_at"], "ended_at": manifest["ended_at"],
        "status": manifest["status"], "reused": reused, "ran": ran,
        **manifest.pop("session", {}), "load": dict(manifest["load"]),
        "elapsed_s": round(elapsed, 3),
        "runs_per_s": round(ran / elapsed, 3) if elapsed > 0 else None}]
    manifest["runs_per_s"] = manifest["sessions"][-1]["runs_per_s"]
    return manifest

"""One cell of a sweep: a picklable description, and the function a worker runs on it.

A ``Cell`` is plain data (settings, seed, task), so it crosses a process boundary (a
``spawn``-started pool, or a Celery queue) and is built into a runtime only inside the worker
(``run_cell``). Its ``cell_id`` is a hash of what it runs, so a resumed sweep recognises the
cells it has already finished, and adding seeds to a spec reuses the old cells.

``watch_parent`` is the pool workers' initializer: a worker exits when the sweep that started
it dies, even by ``kill -9``.

``run_cell`` never raises for a failing scenario: the cell comes back with
``status="error"`` and the traceback, like a run that ends in ``RunState.ERROR``.
Taught in ``notebooks/14_experiments.ipynb``.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field

from ..errors import ConfigError
from .ratelimit import RateLimiter
from .rows import CellOutput
from .scenarios import SCENARIOS, Scenario

__all__ = ["Cell", "run_cell", "get_scenario", "cell_id", "watch_parent"]


def cell_id(settings: dict, seed: int, task: dict) -> str:
    """A stable id for what a cell runs (16 hex digits of a SHA-256 of its canonical JSON)."""
    text = json.dumps({"settings": settings, "seed": seed, "task": task}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Cell:
    """One run of a sweep: a configuration of settings, a task and a seed.

    Attributes:
        cell_id: hash of (settings, seed, task); the journal's key.
        index: position in the sweep (results are sorted by it, whatever finished first).
        config: label of the grid point, e.g. ``"timeouts=fixed"``.
        grid: the grid values of this configuration (one column each in the results).
        task: ``{"name", "scenario", "prompt"}``.
        seed: the seed (simulator, faults, latencies, DAG shape).
        settings: every setting the scenario reads, resolved.
        budget_usd: the most this cell may spend (None: no cap); enforced by ``LimitedLLM``.
        limits: requests/tokens per minute for this worker's rate limiter.
    """

    cell_id: str
    index: int
    config: str
    grid: dict
    task: dict
    seed: int
    settings: dict
    budget_usd: float | None = None
    limits: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def get_scenario(name: str) -> Scenario:
    """A built-in or registered scenario, or ``"package.module:function"`` imported by name."""
    if name in SCENARIOS:
        return SCENARIOS[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:  # lazy: a user's scenario module, named in the spec
            target = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError("invalid_spec", f"cannot import scenario {name!r}: {exc}") from None
        if isinstance(target, Scenario):
            return target
        return Scenario(name, target, dict(getattr(target, "defaults", {})),
                        bool(getattr(target, "uses_llm", False)))
    raise ConfigError("invalid_spec", f"unknown scenario {name!r}; use one of "
                      f"{', '.join(sorted(SCENARIOS))} or 'package.module:function'")


_LIMITERS: dict[tuple, RateLimiter] = {}  # one per process and limit: shared by its cells


def _limiter(limits: dict) -> RateLimiter | None:
    rpm, tpm = limits.get("requests_per_minute"), limits.get("tokens_per_minute")
    if not rpm and not tpm:
        return None
    key = (rpm, tpm)
    if key not in _LIMITERS:
        _LIMITERS[key] = RateLimiter(rpm, tpm)
    return _LIMITERS[key]


def run_cell(cell: Cell) -> dict:
    """Run one cell in this process; returns its journal record (plain JSON-able data).

    The record: ``cell_id``, ``index``, ``status`` (``ok`` or ``error``), ``run`` (the run
    row), ``tool_calls`` (rows), ``error`` (a traceback or None), ``pid``, ``started_at`` /
    ``ended_at`` (wall-clock seconds) and ``wall_s``.
    """
    started, t0 = time.time(), time.perf_counter()
    status, error = "ok", None
    try:
        scenario = get_scenario(cell.task["scenario"])
        out = scenario.run(dict(cell.settings), cell.seed, dict(cell.task),
                           limiter=_limiter(cell.limits), budget_usd=cell.budget_usd)
        if not isinstance(out, CellOutput):
            raise TypeError(f"scenario {scenario.name!r} returned {type(out).__name__}, "
                            "not a CellOutput")
    except Exception:  # a scenario bug: recorded with its traceback, the sweep goes on
        status, error = "error", traceback.format_exc(limit=8)
        out = CellOutput({"state": "error", "stopped_reason": "exception", "success": False})
    wall = time.perf_counter() - t0
    return {"cell_id": cell.cell_id, "index": cell.index, "status": status,
            "run": {**out.run, "wall_s": wall}, "tool_calls": out.tool_calls, "error": error,
            "pid": os.getpid(), "started_at": started, "ended_at": time.time(), "wall_s": wall}


def watch_parent(parent_pid: int, interval_s: float = 0.2) -> None:
    """Pool initializer: end this worker process soon after ``parent_pid`` dies.

    A killed parent (``kill -9``) cannot shut its pool down, and each worker holds the write
    end of the pool's queue, so none ever sees end-of-file: without this they wait forever.
    A daemon thread polls ``os.getppid()``, which changes when the parent dies (POSIX).
    """
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        os._exit(1)  # no cleanup to do: the parent that would read our results is gone

    threading.Thread(target=watch, name="agentlab-parent-watch", daemon=True).start()

"""Checks for exercise 03, parallel execution with a real deadline
(``notebooks/exercises/03_parallel_deadline.ipynb``).

The student writes ``run_all(tasks, timeout)``: run zero-argument functions at the same time and
return, within ``timeout`` seconds of the start, one result per task in task order:
``("ok", value)``, ``("error", "ValueError: message")`` or ``("timeout", None)``. Hung tasks in
these checks wait on an event that is set once the student's function has returned, so no case
leaves a thread behind (and a version that waits for them still finishes, late, and fails).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_run_all"]

HANG_S = 3.0  # how long a "hung" task waits if nobody releases it


def _run(fn: Callable, make_tasks: Callable, timeout: float) -> dict:
    gate = threading.Event()
    tasks = make_tasks(gate)
    t0 = time.perf_counter()
    try:
        results = fn(tasks, timeout)
    finally:
        gate.set()
    return {"results": results, "seconds": round(time.perf_counter() - t0, 2)}


def _sleeper(seconds: float, value):
    return lambda: time.sleep(seconds) or value


def _boom():
    raise ValueError("boom")


def check_run_all(fn: Callable) -> str:
    """Check ``fn(tasks, timeout) -> list[tuple[str, object]]``."""
    hang = lambda gate: (lambda: gate.wait(HANG_S) and "released")  # noqa: E731
    no_with = ("do not wait inside `with ThreadPoolExecutor(...)`: leaving the block joins every "
               "thread. Use daemon threads (or a pool you shut down with wait=False) and wait "
               "with a deadline.")
    return run_cases("run_all", [
        Case("values in task order", lambda: _run(fn, lambda g: [lambda: 1, lambda: "two",
                                                                 lambda: [3]], 1.0)["results"],
             [("ok", 1), ("ok", "two"), ("ok", [3])], hint="one (\"ok\", value) per task."),
        Case("no tasks", lambda: _run(fn, lambda g: [], 1.0)["results"], [],
             hint="an empty list of tasks gives an empty list of results."),
        Case("tasks run at the same time (4 x 0.2 s in well under 0.8 s)",
             lambda: _run(fn, lambda g: [_sleeper(0.2, i) for i in range(4)], 2.0),
             check=lambda got: got["results"] == [("ok", i) for i in range(4)]
             and got["seconds"] < 0.5,
             hint="start every task before waiting for any of them."),
        Case("task order, not finish order",
             lambda: _run(fn, lambda g: [_sleeper(0.15, "slow"), _sleeper(0.0, "fast"),
                                         _sleeper(0.07, "mid")], 1.0)["results"],
             [("ok", "slow"), ("ok", "fast"), ("ok", "mid")],
             hint="store each result at its task's index."),
        Case("an exception becomes an error result",
             lambda: _run(fn, lambda g: [lambda: 1, _boom], 1.0)["results"],
             [("ok", 1), ("error", "ValueError: boom")],
             hint="catch Exception in the worker; report f\"{type(exc).__name__}: {exc}\"."),
        Case("a hung task times out and the batch returns at the deadline (0.3 s)",
             lambda: _run(fn, lambda g: [_sleeper(0.05, "a"), hang(g), _sleeper(0.05, "c")], 0.3),
             check=lambda got: got["results"] == [("ok", "a"), ("timeout", None), ("ok", "c")]
             and got["seconds"] < 0.6, hint=no_with),
        Case("one deadline for the batch: three hung tasks, timeout 0.25 s",
             lambda: _run(fn, lambda g: [hang(g), hang(g), hang(g)], 0.25),
             check=lambda got: got["results"] == [("timeout", None)] * 3 and got["seconds"] < 0.5,
             hint="compute the deadline once (start + timeout) and wait only for the time left; "
                  "a fresh timeout per task adds them up."),
    ])

"""Checks for exercise 15, run a tool under limits (``notebooks/exercises/15_run_limited.ipynb``).

The student writes ``run_limited(func, kwargs, timeout_s)``: run ``func(**kwargs)`` in the
chapter 15 sandbox and say how it ended, as ``(how, value)``: ``("ok", value)``, or ``(how,
message)`` with ``how`` one of ``"timeout"``, ``"memory"``, ``"processes"``, ``"file_size"``,
``"not_json"``, ``"failed"`` (read from the ``ToolError``'s ``code`` and ``details``). The cases
run the misbehaving tools of ``agentlab.sandbox.demo`` with small limits.
"""
from __future__ import annotations

import os
import tempfile
import time
from typing import Callable

from ..errors import ToolError
from ..sandbox import SandboxPolicy, demo, pool_for
from .cases import Case, run_cases

__all__ = ["check_run_limited", "reference_run_limited", "EXERCISE_POLICY"]

#: The limits the exercise uses (small, so the bombs stop fast).
EXERCISE_POLICY = SandboxPolicy(memory_mb=256, max_procs=16, file_mb=4, workers=1)


def reference_run_limited(func: Callable, kwargs: dict, timeout_s: float) -> tuple:
    """Run ``func(**kwargs)`` under ``EXERCISE_POLICY`` and classify how it ended."""
    try:
        return "ok", pool_for(EXERCISE_POLICY).call(func, kwargs, timeout_s)
    except ToolError as exc:
        how = {"tool_timeout": "timeout", "result_not_json": "not_json"}.get(exc.code)
        return how or exc.details.get("limit") or "failed", exc.message


def _fails(x: int) -> int:
    """Raise a ValueError (a tool with a bug)."""
    raise ValueError(f"bad x: {x}")


def _late_file(fn: Callable) -> tuple:
    path = os.path.join(tempfile.mkdtemp(prefix="agentlab-ex15-"), "late.txt")
    how = fn(demo.hang_then_write, {"path": path, "seconds": 1.0}, 0.3)[0]
    time.sleep(1.3)
    return how, os.path.exists(path)


def check_run_limited(fn: Callable) -> str:
    """Check ``fn(func, kwargs, timeout_s) -> (how, value)`` on the misbehaving tools."""
    def how(func: Callable, kwargs: dict, timeout_s: float = 5.0) -> str:
        return fn(func, kwargs, timeout_s)[0]
    return run_cases("run a tool under limits", [
        Case("a no-op returns ('ok', 'ok')", lambda: tuple(fn(demo.noop, {}, 5.0)), ("ok", "ok"),
             hint="call pool_for(EXERCISE_POLICY).call(func, kwargs, timeout_s)."),
        Case("a hung tool is 'timeout'", lambda: how(demo.hang_then_write,
             {"path": os.devnull, "seconds": 5}, 0.3), "timeout",
             hint="a ToolError with code 'tool_timeout'."),
        Case("and its late write never lands", lambda: _late_file(fn), ("timeout", False),
             hint="pass timeout_s on to the pool: it kills the worker at that time."),
        Case("a memory bomb is 'memory'", lambda: how(demo.memory_bomb, {"mb": 4096}), "memory",
             hint="code 'sandbox_limit': the limit is in exc.details['limit']."),
        Case("a fork bomb is 'processes'", lambda: how(demo.fork_bomb, {"children": 200}),
             "processes", hint="the same code, another details['limit']."),
        Case("endless output is 'file_size'", lambda: how(demo.infinite_output, {}), "file_size",
             hint="printing goes to a file capped by RLIMIT_FSIZE."),
        Case("an object result is 'not_json'", lambda: how(demo.not_json, {}), "not_json",
             hint="code 'result_not_json'."),
        Case("a tool that raises is 'failed'", lambda: how(_fails, {"x": 1}), "failed",
             hint="any other code ('tool_failed') is 'failed'."),
    ])

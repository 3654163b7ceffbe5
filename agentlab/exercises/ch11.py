"""Checks for exercise 11, resume logic (``notebooks/exercises/11_resume_logic.ipynb``).

A run crashed. On disk there are checkpoints (``CheckpointManager.list_checkpoints()``) and a
durable tool-result log (``completed_tool_calls(run_id)``). The student writes two decisions:

- ``choose_checkpoint(listing, run_id)``: the id of the checkpoint to resume from: the highest
  ``revision`` of that run among the readable ones (rows with an ``"error"`` key are corrupt),
  or ``None`` when the run has none;
- ``plan_resume(messages, completed)``: for the calls of the last assistant ``tool_calls``
  message that have no ``tool`` result in ``messages``, which results to take from the log
  (``"reuse"``) and which calls must run (``"run"``), both in the order the model asked for them.
  A call found in the log is reused even if it failed: it already ran, and running a
  side-effecting tool twice is the bug this exercise is about.
"""
from __future__ import annotations

from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_choose_checkpoint", "check_resume_plan"]


def _row(cid: str, run_id: str, revision: int, turn: int, error: bool = False) -> dict:
    row = {"id": cid, "run_id": run_id, "revision": revision, "turn": turn,
           "created_at": f"2025-01-01T00:00:{revision:02d}+00:00", "size_bytes": 100 * turn}
    if error:
        row = {"id": cid, "path": f"cp/{cid}.json", "size_bytes": 40, "error": "checkpoint_corrupt"}
    return row


def check_choose_checkpoint(fn: Callable) -> str:
    """Check ``fn(listing, run_id) -> str | None``."""
    mixed = [_row("01", "run-a", 1, 3), _row("02", "run-b", 1, 3), _row("03", "run-a", 2, 6),
             _row("04", "run-b", 2, 6)]
    resumed = [_row("05", "run-a", 3, 9), _row("06", "run-a", 2, 6)]  # listed out of order
    corrupt = [_row("07", "run-a", 1, 3), _row("08", "run-a", 2, 6), _row("09", "?", 0, 0, True)]
    return run_cases("choose a checkpoint", [
        Case("empty store", lambda: fn([], "run-a"), None, hint="nothing to resume: return None."),
        Case("only this run's checkpoints count", lambda: fn(mixed, "run-a"), "03",
             hint="filter on row['run_id'] before picking the newest."),
        Case("the other run", lambda: fn(mixed, "run-b"), "04"),
        Case("newest = highest revision, not last in the list", lambda: fn(resumed, "run-a"), "05",
             hint="compare row['revision'], do not rely on the listing's order."),
        Case("corrupt rows are skipped", lambda: fn(corrupt, "run-a"), "08",
             hint="a row with an 'error' key has no run_id or revision: skip it first."),
        Case("a run with no checkpoint", lambda: fn(mixed, "run-z"), None),
    ])


def _call(cid: str, name: str = "web_search") -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _log(*ids: str, failed: tuple[str, ...] = ()) -> dict:
    return {i: {"tool_call_id": i, "name": "web_search", "result": f"result of {i}",
                "success": i not in failed, "error_code": "tool_failed" if i in failed else None}
            for i in ids}


def check_resume_plan(fn: Callable) -> str:
    """Check ``fn(messages, completed) -> {"reuse": [ids], "run": [ids]}``."""
    head = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": None, "tool_calls": [_call("old_1")]},
            {"role": "tool", "tool_call_id": "old_1", "content": "done"}]
    batch = {"role": "assistant", "content": None,
             "tool_calls": [_call("c1"), _call("c2", "write_file"), _call("c3", "read_url")]}
    safe = head + [{"role": "assistant", "content": "final answer"}]
    return run_cases("resume plan", [
        Case("a safe point: nothing pending", lambda: fn(safe, _log("old_1")),
             {"reuse": [], "run": []},
             hint="only the calls of the LAST assistant tool_calls message without results count."),
        Case("died before any call finished", lambda: fn(head + [batch], _log("old_1")),
             {"reuse": [], "run": ["c1", "c2", "c3"]},
             hint="a call with no record in the log never completed: it must run."),
        Case("two of three finished", lambda: fn(head + [batch], _log("c3", "c1")),
             {"reuse": ["c1", "c3"], "run": ["c2"]},
             hint="keep the model's order (tool_calls), not the log's order."),
        Case("a failed call is still finished", lambda: fn(head + [batch], _log("c1", "c2", failed=("c2",))),
             {"reuse": ["c1", "c2"], "run": ["c3"]},
             hint="success=False means it ran and failed; the model is shown that failure."),
        Case("results already in the messages", lambda: fn(
             head + [batch, {"role": "tool", "tool_call_id": "c1", "content": "x"}], _log("c1", "c2")),
             {"reuse": ["c2"], "run": ["c3"]},
             hint="skip calls that already have a tool message after the assistant message."),
        Case("older turns in the log do not matter", lambda: fn(head + [batch], _log("old_1", "c2")),
             {"reuse": ["c2"], "run": ["c1", "c3"]}),
    ])

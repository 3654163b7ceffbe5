"""Checks for exercise 16, time travel (``notebooks/exercises/16_time_travel.ipynb``).

The student writes the two decisions chapter 16 is built on:

- ``plan_replay(calls, log, side_effects)``: in a read-only replay, which of a turn's calls are
  answered from the durable log (``"log"``: the log has a record under that id *for the same
  tool and arguments*), which run (``"run"``: not in the log, read-only tool) and which wait
  for a human to approve re-execution (``"approve"``: not in the log, a tool in
  ``side_effects``); each list in the model's order (``agentlab.timetravel.replay``);
- ``fork_with_result(messages, tool_call_id, result)``: a fork's history: a copy of
  ``messages`` in which the ``tool`` message answering ``tool_call_id`` says ``result``; the
  original list and its dicts unchanged; an id no tool message answers raises ``KeyError``
  (``agentlab.timetravel.ReplaceToolResult``).
"""
from __future__ import annotations

import copy
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_replay_plan", "check_fork_with_result"]


def _c(cid: str, name: str = "search", **args: object) -> dict:
    return {"id": cid, "name": name, "arguments": dict(args)}


def _rec(name: str = "search", **args: object) -> dict:
    return {"name": name, "arguments": dict(args), "result": "logged result"}


def check_replay_plan(fn: Callable) -> str:
    """Check ``fn(calls, log, side_effects) -> {"log": [...], "run": [...], "approve": [...]}``."""
    fx = {"send_mail"}
    turn = [_c("a", q="x"), _c("b", "send_mail", to="boss"), _c("c", q="y")]
    return run_cases("replay plan", [
        Case("no calls", lambda: fn([], {}, fx), {"log": [], "run": [], "approve": []}),
        Case("everything logged", lambda: fn(turn, {"a": _rec(q="x"), "b": _rec("send_mail", to="boss"),
                                                    "c": _rec(q="y")}, fx),
             {"log": ["a", "b", "c"], "run": [], "approve": []},
             hint="a call whose record is in the log is answered from it, side effect or not."),
        Case("nothing logged", lambda: fn(turn, {}, fx),
             {"log": [], "run": ["a", "c"], "approve": ["b"]},
             hint="read-only tools may run; a tool in side_effects waits for approval."),
        Case("same id, other arguments", lambda: fn(turn, {"b": _rec("send_mail", to="ceo"),
                                                          "a": _rec(q="x")}, fx),
             {"log": ["a"], "run": ["c"], "approve": ["b"]},
             hint="the record must be of the same tool with the same arguments, not only the same id."),
        Case("same id, other tool", lambda: fn([_c("a", q="x")], {"a": _rec("fetch", q="x")}, fx),
             {"log": [], "run": ["a"], "approve": []}),
        Case("model order kept", lambda: fn(list(reversed(turn)), {"b": _rec("send_mail", to="boss")}, fx),
             {"log": ["b"], "run": ["c", "a"], "approve": []},
             hint="keep the order of calls, not of the log."),
    ])


def _history() -> list[dict]:
    def call(i: str) -> dict:
        return {"id": i, "type": "function", "function": {"name": "read_url", "arguments": "{}"}}
    return [{"role": "user", "content": "read two pages"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
            {"role": "tool", "tool_call_id": "c1", "content": "page one"},
            {"role": "tool", "tool_call_id": "c2", "content": "page two"}]


def _unchanged(fn: Callable) -> bool:
    msgs = _history()
    before = copy.deepcopy(msgs)
    fn(msgs, "c2", "Error: page not found")
    return msgs == before


def _raises_key_error(fn: Callable) -> bool:
    try:
        fn(_history(), "c9", "x")
    except KeyError:
        return True
    return False


def check_fork_with_result(fn: Callable) -> str:
    """Check ``fn(messages, tool_call_id, result) -> new messages``."""
    lost = _history()
    lost[3] = {**lost[3], "content": "Error: page not found"}
    return run_cases("fork with another tool result", [
        Case("the result is replaced", lambda: fn(_history(), "c2", "Error: page not found"), lost),
        Case("the first result too", lambda: [m.get("content") for m in fn(_history(), "c1", "new")],
             ["read two pages", None, "new", "page two"]),
        Case("the original is unchanged", lambda: _unchanged(fn), True,
             hint="copy the list and the message you change ({**msg, 'content': ...})."),
        Case("an unknown call id", lambda: _raises_key_error(fn), True,
             hint="raise KeyError when no tool message answers that id."),
    ])

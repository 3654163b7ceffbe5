"""Checks for exercise 13, approval-gated resume (``notebooks/exercises/13_approval_resume.ipynb``).

A fleet run paused because the model asked for a call that needs a human's approval: the whole
turn was held (none of its calls ran). Later a person decided, and the run is resumed on some
worker. The student writes the plan that resumed turn follows, as ``agentlab.approval`` does
(the ``Approval`` gate's ``before_tools`` and ``ApprovalExecutor``):

    plan_held_turn(calls, gated, decisions) ->
        {"pause": [ids]}                         if a gated call has no decision yet, else
        {"run": [ids], "reject": {id: text}}     approved and ungated calls run, in order;
                                                 a rejected call gets ``text`` as its result

``calls`` are ``{"id", "name"}`` in the model's order, ``gated`` the tool names that need
approval, ``decisions`` ``{call_id: {"approved": bool, "reason": str}}``. The rejection text is
``"Rejected by a human reviewer: <reason>. The call was not run; do not retry it unchanged."``
(without ``": <reason>"`` when the reason is empty).
"""
from __future__ import annotations

from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_held_turn_plan", "rejection_text"]


def rejection_text(reason: str = "") -> str:
    """What the model is told about a rejected call (``agentlab.approval``'s words)."""
    return ("Rejected by a human reviewer" + (f": {reason}" if reason else "")
            + ". The call was not run; do not retry it unchanged.")


def _calls(*names: str) -> list[dict]:
    return [{"id": f"c{i}", "name": n} for i, n in enumerate(names, 1)]


def check_held_turn_plan(fn: Callable) -> str:
    """Check ``fn(calls, gated, decisions)`` on held turns decided in every way."""
    turn = _calls("read_url", "write_file", "read_url")
    two = _calls("write_file", "send_email")
    yes, no = {"approved": True, "reason": ""}, {"approved": False, "reason": "wrong folder"}
    return run_cases("approval-gated resume", [
        Case("undecided: pause again, nothing runs",
             lambda: fn(turn, {"write_file"}, {}), {"pause": ["c2"]},
             hint="a gated call without a decision means the run pauses again (no call runs)."),
        Case("approved: the whole turn runs, in order",
             lambda: fn(turn, {"write_file"}, {"c2": yes}),
             {"run": ["c1", "c2", "c3"], "reject": {}},
             hint="once every gated call is decided, the held turn's calls run together."),
        Case("rejected: the others run, the model is told why",
             lambda: fn(turn, {"write_file"}, {"c2": no}),
             {"run": ["c1", "c3"], "reject": {"c2": rejection_text("wrong folder")}},
             hint="a rejected call never runs; its result is the rejection text with the reason."),
        Case("rejected without a reason",
             lambda: fn(turn, {"write_file"}, {"c2": {"approved": False, "reason": ""}}),
             {"run": ["c1", "c3"], "reject": {"c2": rejection_text()}},
             hint="no reason: 'Rejected by a human reviewer. The call was not run; ...'."),
        Case("one of two gated calls decided: pause on the other",
             lambda: fn(two, {"write_file", "send_email"}, {"c1": yes}), {"pause": ["c2"]},
             hint="list only the gated calls that still have no decision."),
        Case("two undecided, listed in the model's order",
             lambda: fn(list(reversed(two)), {"write_file", "send_email"}, {}),
             {"pause": ["c2", "c1"]}, hint="keep the order of calls."),
        Case("a decision for a call of another turn changes nothing",
             lambda: fn(turn, {"write_file"}, {"c9": no}), {"pause": ["c2"]},
             hint="only decisions for this turn's call ids count."),
        Case("no gated call: everything runs",
             lambda: fn(turn, set(), {}), {"run": ["c1", "c2", "c3"], "reject": {}},
             hint="with nothing to approve, the plan is to run every call."),
    ])

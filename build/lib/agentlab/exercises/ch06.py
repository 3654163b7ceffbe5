"""Checks for exercise 06, the loop detector (``notebooks/exercises/06_loop_detector.ipynb``).

The student writes ``detect_loop(history, window=4, threshold=3) -> bool``. ``history`` is the
list of turns so far; each turn is a list of ``(name, arguments)`` calls (several when the model
called tools in parallel). Looking at the last ``window`` turns only, return True when

- one turn (the same calls, in any order, with equal arguments) appears ``threshold`` times, or
- the last ``p`` turns repeat the ``p`` turns before them (a cycle such as A, B, A, B), for
  ``2 <= p <= window // 2``, with at least two different turns in the cycle.
"""
from __future__ import annotations

from typing import Callable

from ..runtime.loop_guard import LoopDetector, turn_signature
from .cases import Case, run_cases

__all__ = ["check_loop_detector", "reference_detect_loop"]


def reference_detect_loop(history: list, window: int = 4, threshold: int = 3) -> bool:
    """The reference answer, built on ``agentlab.runtime.loop_guard.LoopDetector``."""
    d = LoopDetector(window, threshold)
    for turn in history:
        d.history.append(turn_signature(turn))
    return d.check() is not None


def check_loop_detector(fn: Callable[..., bool]) -> str:
    """Check ``fn(history, window=4, threshold=3) -> bool``."""
    A, B, C, D = ([("lookup", {"key": k})] for k in "abcd")
    par1 = [("read_url", {"url": "u1"}), ("read_url", {"url": "u2"})]
    par2 = list(reversed(par1))
    xy, yx = [("f", {"x": 1, "y": 2})], [("f", {"y": 2, "x": 1})]
    cases = [
        ("no turns yet", [], 4, 3, "return False when there is nothing to compare."),
        ("two identical turns are not yet a loop", [A, A], 4, 3, "count up to threshold (3)."),
        ("three identical turns", [A, A, A], 4, 3,
         "count how often each turn signature occurs in the window (collections.Counter)."),
        ("different calls are progress", [A, B, C, D], 4, 3, "only equal calls count."),
        ("same tool, different arguments", [A, B, C], 4, 3,
         "the signature is the name AND the arguments."),
        ("alternation A B A B", [A, B, A, B], 4, 3,
         "counts alone miss this (each turn appears twice): check whether the last p turns "
         "repeat the p turns before them, for p = 2 .. window // 2."),
        ("A B A C is not a cycle", [A, B, A, C], 4, 3, "a cycle repeats exactly."),
        ("parallel calls in another order are the same turn", [par1, par2, par1], 4, 3,
         "sort the call signatures of a turn before comparing turns."),
        ("argument order does not matter", [xy, yx, xy], 4, 3,
         "serialise arguments canonically: json.dumps(args, sort_keys=True)."),
        ("only the last `window` turns count", [A, A, A, B, C, D, B + C], 4, 3,
         "look at history[-window:] only."),
        ("a 3-cycle with window 6", [A, B, C, A, B, C], 6, 3, "use the window argument."),
        ("a 3-cycle does not fit window 4", [A, B, C, A, B, C], 4, 3,
         "a cycle of length p needs 2*p turns inside the window."),
    ]
    return run_cases("loop detector", [
        Case(name, (lambda h=h, w=w, t=t: bool(fn([list(x) for x in h], window=w, threshold=t))),
             reference_detect_loop(h, w, t), hint=hint)
        for name, h, w, t, hint in cases])

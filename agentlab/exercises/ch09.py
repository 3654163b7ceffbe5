"""Checks for exercise 09, the nearest-rank percentile (``notebooks/exercises/09_percentile.ipynb``).

The student writes ``nearest_rank(values, q)``: the smallest value such that at least q percent
of the values are less than or equal to it, i.e. the value at 1-based rank ``ceil(q/100 * n)``
of the sorted values (rank 1 for q = 0). The reference below computes the rank with exact
fractions, so float rounding in a student's ``q / 100 * n`` is caught (``0.07 * 100`` is
``7.000000000000001``, whose ceiling is 8).
"""
from __future__ import annotations

import math
import random
from fractions import Fraction
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_percentile", "reference_nearest_rank"]


def reference_nearest_rank(values: list[float], q: float) -> float:
    """The nearest-rank percentile, computed with exact arithmetic."""
    data = sorted(values)
    rank = max(1, math.ceil(Fraction(q) * len(data) / 100))
    return data[rank - 1]


def _raises(fn: Callable, *args) -> str:
    try:
        got = fn(*args)
    except ValueError:
        return "ValueError"
    return f"returned {got!r}"


# Typical wrong answers, each with the hint for *its* mistake (shown when the student's answer
# equals what it returns on the same input; see ``cases.Case.mistakes``).
def _rank_with(rounding: Callable[[float], int], exact: bool = False) -> Callable:
    def wrong(values: list[float], q: float) -> float:
        data = sorted(values)
        x = Fraction(q) * len(data) / 100 if exact else q / 100 * len(data)
        return data[min(len(data), max(1, rounding(x))) - 1]
    return wrong


def _unsorted(values: list[float], q: float) -> float:
    return values[max(1, math.ceil(Fraction(q) * len(values) / 100)) - 1]


def _lower_index(values: list[float], q: float) -> float:
    data = sorted(values)
    return data[int(q / 100 * (len(data) - 1))]


def _interpolated(values: list[float], q: float) -> float:
    data = sorted(values)
    pos = (len(data) - 1) * q / 100
    lo = math.floor(pos)
    return data[lo] + (data[min(lo + 1, len(data) - 1)] - data[lo]) * (pos - lo)


MISTAKES: list[tuple[Callable, str]] = [
    (_rank_with(round, exact=True), "round() picks the nearest rank; the nearest-rank percentile "
     "rounds up: the smallest rank r with r >= q / 100 * n (math.ceil)."),
    (_rank_with(int, exact=True), "int() rounds down; the rank must round up (math.ceil): "
     "at least q percent of the values must be at or below the answer."),
    (_rank_with(math.ceil), "q / 100 * n is computed in floats: 0.07 * 100 = 7.000000000000001, "
     "whose ceiling is 8. Multiply before dividing (q * n / 100), or use fractions.Fraction."),
    (_unsorted, "the values come unsorted: rank them in sorted order (sorted(values))."),
    (_lower_index, "int(q / 100 * (n - 1)) is a 0-based position that interpolation uses, "
     "one short of the nearest rank here; the rank is ceil(q * n / 100), counted from 1."),
    (_interpolated, "the answer is always one of the values: no interpolation between two."),
]


def _case(fn: Callable, name: str, call: Callable[[Callable], object], expected: object,
          hint: str) -> Case:
    """A case that runs ``call(fn)`` and knows what each typical mistake returns on it."""
    return Case(name, lambda: call(fn), expected, hint=hint,
                mistakes=[(lambda w=wrong: call(w), h) for wrong, h in MISTAKES])


def check_percentile(fn: Callable) -> str:
    """Check ``fn(values, q) -> float`` (q in 0..100) against the nearest-rank definition."""
    wiki = [15, 20, 35, 40, 50]
    rng = random.Random(9)
    latencies = [round(rng.lognormvariate(4, 0.8), 1) for _ in range(100)]
    unsorted = [40, 15, 50, 20, 35]
    copy = list(unsorted)
    return run_cases("nearest-rank percentile", [
        _case(fn, "one value is every percentile", lambda f: [f([42.0], q) for q in (0, 50, 100)],
              [42.0, 42.0, 42.0], "with n = 1 every rank is 1: the answer is the one value."),
        _case(fn, "[15, 20, 35, 40, 50] at q = 30, 40, 50, 100",
              lambda f: [f(wiki, q) for q in (30, 40, 50, 100)], [20, 20, 35, 50],
              "q = 30 of 5 values: at least 30 % (1.5 values) must be at or below the answer, "
              "so 2 values: the 2nd smallest, 20."),
        _case(fn, "q = 0 is the minimum", lambda f: f(wiki, 0), 15,
              "at q = 0 the rank computes to 0, but ranks start at 1: the smallest value."),
        _case(fn, "unsorted input", lambda f: f(unsorted, 50), 35,
              "the median of 15, 20, 35, 40, 50 is 35 whatever order they come in."),
        Case("the input list is not changed", lambda: (fn(unsorted, 90), unsorted)[1], copy,
             hint="the caller's list came back reordered: sort a copy (sorted(values)), not "
                  "the list itself (values.sort())."),
        _case(fn, "p95 of 20 values is the 19th", lambda f: f(list(range(1, 21)), 95), 19,
              "95 % of 20 values is exactly 19 values: the 19th smallest, not the 20th."),
        _case(fn, "p95 of 10 values is the 10th (the largest)",
              lambda f: f(list(range(1, 11)), 95), 10,
              "95 % of 10 values is 9.5 values: 10 must be at or below, so the largest."),
        _case(fn, "exact ranks survive float rounding (q = 7, n = 100)",
              lambda f: f(list(range(1, 101)), 7), 7,
              "7 % of 100 values is exactly 7 values: the 7th smallest."),
        _case(fn, "p50/p95/p99 of 100 latencies", lambda f: [f(latencies, q) for q in (50, 95, 99)],
              [reference_nearest_rank(latencies, q) for q in (50, 95, 99)],
              "the nearest rank of each: the smallest value with at least q % at or below it."),
        Case("no values raises ValueError", lambda: _raises(fn, [], 50), "ValueError",
             hint="a percentile of nothing is undefined: raise ValueError."),
    ])

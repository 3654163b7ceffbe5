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


def check_percentile(fn: Callable) -> str:
    """Check ``fn(values, q) -> float`` (q in 0..100) against the nearest-rank definition."""
    wiki = [15, 20, 35, 40, 50]
    rng = random.Random(9)
    latencies = [round(rng.lognormvariate(4, 0.8), 1) for _ in range(100)]
    unsorted = [40, 15, 50, 20, 35]
    copy = list(unsorted)
    return run_cases("nearest-rank percentile", [
        Case("one value is every percentile", lambda: [fn([42.0], q) for q in (0, 50, 100)],
             [42.0, 42.0, 42.0], hint="with n = 1 the rank is always 1."),
        Case("[15, 20, 35, 40, 50] at q = 30, 40, 50, 100", lambda: [fn(wiki, q) for q in
             (30, 40, 50, 100)], [20, 20, 35, 50],
             hint="rank = ceil(q / 100 * n), counted from 1; q = 30 -> rank 2 -> 20."),
        Case("q = 0 is the minimum", lambda: fn(wiki, 0), 15,
             hint="ceil(0) is 0: use rank max(1, ...)."),
        Case("unsorted input", lambda: fn(unsorted, 50), 35, hint="sort a copy first."),
        Case("the input list is not changed", lambda: (fn(unsorted, 90), unsorted)[1], copy,
             hint="use sorted(values), not values.sort()."),
        Case("p95 of 20 values is the 19th", lambda: fn(list(range(1, 21)), 95), 19,
             hint="0.95 * 20 = 19 exactly: rank 19, not 20."),
        Case("p95 of 10 values is the 10th (the largest)", lambda: fn(list(range(1, 11)), 95),
             10, hint="rank = ceil(0.95 * 10) = 10. Indexing with int(q / 100 * (n - 1)) gives "
             "position 8 (the 9th value): that is an off-by-one, not the nearest rank."),
        Case("exact ranks survive float rounding (q = 7, n = 100)",
             lambda: fn(list(range(1, 101)), 7), 7,
             hint="0.07 * 100 is 7.000000000000001 in floats; compute q * n / 100 instead."),
        Case("p50/p95/p99 of 100 latencies", lambda: [fn(latencies, q) for q in (50, 95, 99)],
             [reference_nearest_rank(latencies, q) for q in (50, 95, 99)],
             hint="the answer is always one of the values (no interpolation)."),
        Case("no values raises ValueError", lambda: _raises(fn, [], 50), "ValueError",
             hint="a percentile of nothing is undefined: raise ValueError."),
    ])

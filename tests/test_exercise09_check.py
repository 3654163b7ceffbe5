"""Exercise 09's check catches the off-by-one percentile (issue #12, Build 10)."""
from __future__ import annotations

import pytest

from agentlab.exercises.cases import ExerciseCheckError
from agentlab.exercises.ch09 import check_percentile, reference_nearest_rank


def off_by_one(values, q):
    if not values:
        raise ValueError("no values")
    v = sorted(values)
    return v[int(q / 100 * (len(v) - 1))]


def test_off_by_one_percentile_is_rejected():
    with pytest.raises(ExerciseCheckError, match="p95 of 10 values"):  # was: passed 9/9
        check_percentile(off_by_one)


def test_reference_passes():
    def ref(values, q):
        if not values:
            raise ValueError("no values")
        return reference_nearest_rank(values, q)
    check_percentile(ref)


def _hints(fn) -> str:
    with pytest.raises(ExerciseCheckError) as caught:
        check_percentile(fn)
    return str(caught.value)


def _rank(rounding, exact=False):
    import math
    from fractions import Fraction

    def student(values, q):
        if not values:
            raise ValueError("no values")
        v = sorted(values)
        x = Fraction(q) * len(v) / 100 if exact else q / 100 * len(v)
        return v[min(len(v), max(1, rounding(x))) - 1]
    return student


def test_hints_match_the_mistake_not_the_case():
    """Issue 24: round() was told to "sort a copy first" (the hint of the unsorted case)."""
    text = _hints(_rank(round, exact=True))
    assert "round() picks the nearest rank" in text and "sort a copy" not in text
    import math
    floats = _hints(_rank(math.ceil))  # the float-rounding mistake: only case 8 fails
    assert "1 failing" not in floats and "0.07 * 100 = 7.000000000000001" in floats
    assert "ceil(q / 100 * n)" not in floats  # no hint recommends the code that fails
    assert "one short of the nearest rank" in _hints(off_by_one)


def test_a_case_without_a_matching_mistake_keeps_its_own_hint():
    def always_first(values, q):
        if not values:
            raise ValueError("no values")
        return sorted(values)[0]
    text = _hints(always_first)
    assert "so 2 values: the 2nd smallest, 20" in text

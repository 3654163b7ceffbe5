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

"""The exact percentile interval's ranks (chapter 09) against scipy's binomial quantiles."""
from __future__ import annotations

import pytest

from agentlab.quantiles import quantile_ranks

binom = pytest.importorskip("scipy.stats").binom


@pytest.mark.parametrize("confidence", [0.5, 0.9, 0.95, 0.99])
def test_ranks_equal_scipys_binomial_ppf_and_isf(confidence):
    tail = (1 - confidence) / 2
    for n in [*range(1, 120), 199, 368, 1000, 4000]:
        for q in (0.1, 1, 5, 10, 25, 50, 90, 95, 99, 99.9):
            p = q / 100
            want = (max(int(binom.ppf(tail, n, p)) - 1, -1), min(int(binom.isf(tail, n, p)), n))
            assert quantile_ranks(n, q, confidence) == want, (n, q)


def test_ties_with_a_cumulative_probability_go_scipys_way():
    assert quantile_ranks(1, 5, 0.9) == (-1, 0)  # P(X > 0) = 0.05 = the tail exactly

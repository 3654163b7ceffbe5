"""The coverage check behind bench_coverage: the kit's intervals hold, the bootstrap's do not."""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from agentlab.errors import ConfigError
from agentlab.experiments.coverage import (LogNormalLatency, aa_false_positive_rate,
                                           bootstrap_cap, mean_coverage, proportion_coverage,
                                           quantile_coverage)

ROOT = Path(__file__).resolve().parents[1]


def test_the_exact_p99_interval_covers_where_the_bootstrap_cannot():
    kit = quantile_coverage(20, 99, reps=150, seed=1)
    boot = quantile_coverage(20, 99, reps=150, method="bootstrap", n_resamples=200, seed=1)
    assert kit >= 0.90  # nominal 95 %; unbounded ends count as covering
    assert boot <= bootstrap_cap(20, 99) + 0.06 < 0.30  # about 17 %: capped by 1 - 0.99**20


def test_a_p95_from_50_and_a_share_from_9_runs_cover():
    assert quantile_coverage(50, 95, reps=150, seed=2) >= 0.90
    assert proportion_coverage(9, 0.9, reps=150, seed=3) >= 0.90
    assert proportion_coverage(9, 0.9, reps=150, method="bootstrap", seed=3) < 0.75


def test_a_mean_of_20_skewed_latencies_covers_where_plain_t_does_not():
    assert mean_coverage(20, reps=300, seed=5) >= 0.92  # Cochran's rule opens the upper end
    assert mean_coverage(20, reps=300, method="t", seed=5) <= 0.91  # about 88 %


def test_the_paired_t_interval_keeps_aa_false_positives_near_5_percent():
    assert aa_false_positive_rate(8, reps=300, seed=4) <= 0.09
    assert aa_false_positive_rate(8, reps=300, method="bootstrap", n_resamples=200,
                                  seed=4) >= 0.09  # about 14 %


def test_known_truths_and_bad_methods():
    d = LogNormalLatency(800, 0.9)
    assert d.quantile(50) == pytest.approx(800) and d.mean == pytest.approx(800 * math.exp(0.81 / 2))
    with pytest.raises(ConfigError, match="method must be"):
        quantile_coverage(20, 99, reps=1, method="bca")


def test_the_bench_runs_quick():
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_coverage.py"),
                          "--quick"], capture_output=True, text=True, timeout=300, check=True)
    assert "p99" in out.stdout and "DIFF" not in out.stdout  # the kit equals scipy throughout
    assert "9 of 9 successes: kit 100% [0.66, 1.00]" in out.stdout

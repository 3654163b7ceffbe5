"""Chapter 14 statistics: bootstrap intervals against scipy, the too-few-samples rule, pairing."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentlab.errors import ConfigError
from agentlab.experiments import (FewSamplesWarning, Results, min_samples, paired_difference,
                                  percentile_interval, percentile_table)
from agentlab.experiments.stats import bootstrap_interval, mean_interval


def test_min_samples_is_the_distribution_free_bound():
    assert [min_samples(q) for q in (50, 95, 99)] == [6, 72, 368]
    for q in (50, 90, 95, 99, 99.9):
        n, p = min_samples(q), q / 100
        assert p ** n <= 0.025 < p ** (n - 1)  # the max of n samples bounds the q-th percentile
    assert min_samples(1) == min_samples(99)
    with pytest.raises(ConfigError):
        min_samples(100)


def test_percentile_interval_matches_numpy_and_scipy():
    x = np.random.default_rng(1).lognormal(0, 1, 300)
    est, low, high = percentile_interval(x, 95, n_resamples=999, seed=7)
    assert est == pytest.approx(np.percentile(x, 95))
    ref = stats.bootstrap((x,), lambda s, axis: np.percentile(s, 95, axis=axis),
                          n_resamples=999, method="percentile", vectorized=True,
                          rng=np.random.default_rng(7)).confidence_interval
    assert (low, high) == pytest.approx((ref.low, ref.high))
    assert low < est < high
    assert percentile_interval(x, 95, n_resamples=999, seed=7) == (est, low, high)  # reproducible


def test_intervals_cover_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    covered = 0
    for _ in range(80):
        x = rng.lognormal(0, 1, 60)  # the true median is exp(0) = 1
        _, low, high = percentile_interval(x, 50, n_resamples=400, seed=1)
        covered += low <= 1.0 <= high
    assert 68 <= covered <= 80  # 95 % nominal; a broken interval lands far from it


def test_a_p99_of_20_samples_is_flagged_and_its_interval_misses_the_truth():
    x = np.random.default_rng(2).lognormal(0, 1, 2000)
    df = pd.DataFrame({"g": ["few"] * 20 + ["many"] * 2000,
                       "v": np.concatenate([x[:20], x]), "timed_out": False})
    with pytest.warns(FewSamplesWarning, match=r"p99 of few \(n=20 < 368\)"):
        table = percentile_table(df, "v", ["g"], (50, 99), n_resamples=500)
    t = table.set_index(["g", "q"])
    assert t.loc[("few", 99), "few_samples"] and not t.loc[("many", 99), "few_samples"]
    assert not t.loc[("few", 50), "few_samples"]
    true_p99 = math.exp(stats.norm.ppf(0.99))  # lognormal(0, 1): about 10.2
    few, many = t.loc[("few", 99)], t.loc[("many", 99)]
    assert few["high"] == pytest.approx(x[:20].max())  # a bootstrap cannot see past the max
    assert few["high"] < true_p99  # so its "95 %" interval misses the true p99 ...
    assert many["low"] < true_p99 < many["high"]  # ... which 2000 samples do bracket


def test_no_warning_when_every_group_has_enough():
    df = pd.DataFrame({"g": "a", "v": np.arange(400.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = percentile_table(df, "v", ["g"], (50, 99), n_resamples=200, censored_by=None)
    assert not table["few_samples"].any()


def test_a_percentile_among_timed_out_calls_is_marked_censored():
    df = pd.DataFrame({"v": [10.0] * 95 + [1000.0] * 5, "timed_out": [False] * 95 + [True] * 5})
    t = percentile_table(df, "v", [], (50, 95, 99), n_resamples=200, warn=False).set_index("q")
    assert t["censored"].tolist() == [False, True, True]


def test_degenerate_and_empty_samples():
    assert bootstrap_interval([3.0, 3.0, 3.0], np.mean) == (3.0, 3.0)
    assert all(math.isnan(v) for v in bootstrap_interval([1.0], np.mean))
    est, low, high = percentile_interval([], 50)
    assert est is None and math.isnan(low)
    assert mean_interval([True, False, True, True], n_resamples=200)[0] == 0.75


def test_paired_difference_removes_the_shared_noise():
    rng = np.random.default_rng(5)
    base = rng.lognormal(3, 1, 40)            # per-seed difficulty, shared by both configs
    a, b = base, base * 0.9 - 1.0             # b is 10 % + 1 faster on every seed
    d = paired_difference(a, b, n_resamples=999, seed=0, metric="t", labels=("A", "B"))
    assert d.estimate == pytest.approx(np.mean(b - a)) and d.n == 40
    assert d.excludes_zero and d.high < 0
    lo, hi = bootstrap_interval(b, np.mean, n_resamples=999)  # unpaired, for contrast
    lo_a, hi_a = bootstrap_interval(a, np.mean, n_resamples=999)
    assert (hi - lo) + (hi_a - lo_a) > 5 * (d.high - d.low)
    assert "t: B - A = " in str(d)


def test_paired_difference_drops_incomplete_pairs_and_checks_lengths():
    d = paired_difference([1.0, 2.0, math.nan], [2.0, 4.0, 5.0], n_resamples=200)
    assert d.n == 2 and d.estimate == 1.5
    with pytest.raises(ConfigError, match="equal lengths"):
        paired_difference([1.0], [1.0, 2.0])
    with pytest.raises(ConfigError, match="stat must be"):
        paired_difference([1.0], [1.0], stat="mode")


def _results() -> Results:
    rows = []
    for seed in range(12):
        rows.append({"config": "x=a", "task": "t", "seed": seed, "status": "ok",
                     "wait": 10.0 + seed})
        rows.append({"config": "x=b", "task": "t", "seed": seed, "status": "ok",
                     "wait": 7.0 + seed})
    rows.append({"config": "x=b", "task": "t", "seed": 99, "status": "ok", "wait": 0.0})  # unpaired
    rows.append({"config": "x=a", "task": "t", "seed": 50, "status": "skipped_cost_cap"})
    return Results(pd.DataFrame(rows), pd.DataFrame())


def test_results_compare_pairs_runs_on_task_and_seed():
    d = _results().compare("wait", "x=a", "x=b", n_resamples=200)
    assert (d.n, d.estimate, d.low, d.high) == (12, -3.0, -3.0, -3.0)
    with pytest.raises(ConfigError, match="no configuration 'x=c'"):
        _results().compare("wait", "x=a", "x=c")
    with pytest.raises(ConfigError, match="no run metric 'nope'"):
        _results().compare("nope", "x=a", "x=b")


def test_results_summary_has_means_and_intervals_per_config():
    s = _results().summary(["wait"], n_resamples=200).set_index("config")
    assert s.loc["x=a", "runs"] == 12 and s.loc["x=a", "wait"] == pytest.approx(15.5)
    assert s.loc["x=a", "wait_low"] < 15.5 < s.loc["x=a", "wait_high"]

"""Chapter 14 statistics against scipy: exact percentile intervals, t and Clopper-Pearson
intervals, the one enough-samples rule, pairing, Holm."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from agentlab.errors import ConfigError
from agentlab.experiments import (FewSamplesWarning, PairedDifference, Results, min_samples,
                                  paired_difference, percentile_interval, percentile_table)
from agentlab.experiments.stats import (bootstrap_interval, holm, mean_interval,
                                        proportion_interval, quantile_ranks)


def _scipy_ci(x, q, confidence=0.95):
    ci = stats.quantile_test(np.asarray(x), q=0, p=q / 100).confidence_interval(confidence)
    return (-math.inf if math.isnan(ci.low) else ci.low, math.inf if math.isnan(ci.high) else ci.high)


def test_percentile_interval_is_scipys_exact_interval_for_many_sizes():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 6, 19, 20, 50, 71, 72, 200, 367, 368, 1000):
        x = rng.lognormal(0, 1, n)
        for q in (1, 50, 90, 95, 99):
            for conf in (0.9, 0.95):
                est, low, high = percentile_interval(x, q, confidence=conf)
                assert est == pytest.approx(np.percentile(x, q))
                assert (low, high) == _scipy_ci(x, q, conf), (n, q, conf)


def test_min_samples_is_the_smallest_n_with_a_bounded_exact_interval():
    assert [min_samples(q) for q in (50, 95, 99)] == [6, 72, 368]
    for q in (50, 90, 95, 99, 99.9):
        n = min_samples(q)
        x = np.arange(float(n))
        assert all(map(math.isfinite, _scipy_ci(x, q)))
        assert not all(map(math.isfinite, _scipy_ci(x[:-1], q)))
    assert quantile_ranks(20, 99)[1] == 20 and quantile_ranks(368, 99)[1] == 367
    assert min_samples(1) == min_samples(99) and min_samples(90, 0.9) < min_samples(90)
    with pytest.raises(ConfigError):
        min_samples(100)


def test_a_p99_of_20_samples_is_unbounded_above_never_the_sample_maximum():
    x = np.random.default_rng(2).lognormal(0, 1, 2000)
    df = pd.DataFrame({"g": ["few"] * 20 + ["many"] * 2000,
                       "v": np.concatenate([x[:20], x]), "timed_out": False})
    with pytest.warns(FewSamplesWarning, match=r"p99 of few \(n=20 < 368\)"):
        table = percentile_table(df, "v", ["g"], (50, 99))
    t = table.set_index(["g", "q"])
    assert t.loc[("few", 99), "few_samples"] and not t.loc[("many", 99), "few_samples"]
    assert not t.loc[("few", 50), "few_samples"]
    true_p99 = math.exp(stats.norm.ppf(0.99))  # lognormal(0, 1): about 10.2
    few, many = t.loc[("few", 99)], t.loc[("many", 99)]
    assert few["high"] == math.inf and few["low"] <= x[:20].max()
    assert many["low"] < true_p99 < many["high"] < math.inf
    # the bootstrap, for contrast, stops at the maximum of the 20
    assert bootstrap_interval(x[:20], lambda s, axis: np.percentile(s, 99, axis=axis))[1] \
        <= x[:20].max() < true_p99


def test_exact_intervals_cover_the_true_p95_at_least_95_percent():
    rng = np.random.default_rng(3)
    true = math.exp(stats.norm.ppf(0.95))
    hits = [lo <= true <= hi for lo, hi in
            (percentile_interval(rng.lognormal(0, 1, 50), 95)[1:] for _ in range(400))]
    assert sum(hits) >= 0.93 * 400  # the bootstrap gets about 88 % here


def test_no_warning_when_every_group_has_enough():
    df = pd.DataFrame({"g": "a", "v": np.arange(400.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = percentile_table(df, "v", ["g"], (50, 99), censored_by=None)
    assert not table["few_samples"].any() and np.isfinite(table[["low", "high"]]).all().all()


def test_timed_out_calls_mark_the_percentile_censored_and_open_its_upper_end():
    df = pd.DataFrame({"v": [10.0 + i for i in range(95)] + [1000.0] * 5,
                       "timed_out": [False] * 95 + [True] * 5})
    t = percentile_table(df, "v", [], (50, 95, 99), warn=False).set_index("q")
    assert t["censored"].tolist() == [False, True, True]
    assert math.isfinite(t.loc[50, "high"]) and t.loc[95, "high"] == math.inf
    _, _, high = percentile_interval(df["v"], 50, censored=df["timed_out"])
    assert high == _scipy_ci(df["v"], 50)[1]  # below the censored calls nothing changes


def test_mean_interval_is_students_t_and_a_share_is_clopper_pearson():
    x = np.random.default_rng(4).normal(10, 2, 25)
    assert len(x) > 25 * stats.skew(x, bias=False) ** 2  # Cochran's rule holds: plain t
    ref = stats.ttest_1samp(x, 0).confidence_interval(0.95)
    assert mean_interval(x) == pytest.approx((x.mean(), ref.low, ref.high))
    share, low, high = mean_interval([True] * 9)
    ci = stats.binomtest(9, 9).proportion_ci(0.95, method="exact")
    assert (share, low, high) == pytest.approx((1.0, ci.low, ci.high)) and low < 0.7
    assert proportion_interval(3, 10) == pytest.approx(
        (0.3, *stats.binomtest(3, 10).proportion_ci(method="exact")))
    assert mean_interval([True, False, True, True])[0] == 0.75


def test_a_mean_of_too_few_skewed_values_leaves_the_long_tails_end_open():
    x = np.random.default_rng(4).lognormal(0, 1, 25)
    g1 = stats.skew(x, bias=False)
    assert len(x) < 25 * g1 ** 2 and g1 > 0  # Cochran's rule fails: t would under-cover
    ref = stats.ttest_1samp(x, 0).confidence_interval(0.95)
    assert mean_interval(x) == pytest.approx((x.mean(), ref.low, math.inf))
    mirrored = mean_interval(-x)  # a left tail opens the lower end
    assert mirrored[1] == -math.inf and mirrored[2] == pytest.approx(-ref.low)


def test_degenerate_and_empty_samples():
    assert bootstrap_interval([3.0, 3.0, 3.0], np.mean) == (3.0, 3.0)
    assert all(math.isnan(v) for v in bootstrap_interval([1.0], np.mean))
    est, low, high = percentile_interval([], 50)
    assert est is None and math.isnan(low)
    assert math.isnan(mean_interval([2.0])[1]) and math.isnan(mean_interval([])[0])


def test_paired_difference_is_the_paired_t_test():
    rng = np.random.default_rng(5)
    base = rng.lognormal(3, 1, 40)            # per-seed difficulty, shared by both configs
    a, b = base, base * 0.9 - 1.0 + rng.normal(0, 0.5, 40)
    d = paired_difference(a, b, metric="t", labels=("A", "B"))
    ref = stats.ttest_rel(b, a)
    assert d.estimate == pytest.approx(np.mean(b - a)) and d.n == 40
    assert (d.low, d.high) == pytest.approx(tuple(ref.confidence_interval(0.95)))
    assert d.p_value == pytest.approx(ref.pvalue) and d.excludes_zero and d.high < 0
    lo, hi = stats.ttest_1samp(b, 0).confidence_interval()  # unpaired, for contrast
    assert hi - lo > 5 * (d.high - d.low)
    assert "t: B - A = " in str(d)


def test_paired_median_uses_the_exact_interval_and_the_sign_test():
    diffs = np.random.default_rng(6).normal(1.0, 1.0, 40)
    d = paired_difference(np.zeros(40), diffs, stat="median", warn=False)
    assert (d.low, d.high) == _scipy_ci(diffs, 50)
    pos = int((diffs > 0).sum())
    assert d.p_value == pytest.approx(stats.binomtest(pos, 40).pvalue)


def test_paired_successes_never_get_a_zero_width_interval():
    d = paired_difference([1.0] * 9, [1.0] * 9, warn=False)  # both succeed on all 9 pairs
    half = 1 - 0.0125 ** (1 / 9)  # Clopper-Pearson upper end of 0 of 9 at 97.5 %
    assert (d.estimate, d.low, d.high) == pytest.approx((0.0, -half, half))
    d = paired_difference([0.0] * 3, [1.0] * 3, warn=False)  # b wins 3 of 3
    assert d.estimate == 1.0 and not d.excludes_zero and d.p_value == pytest.approx(0.25)
    d = paired_difference([0.0] * 40, [1.0] * 30 + [0.0] * 10, warn=False)
    assert d.excludes_zero and d.p_value == pytest.approx(stats.binomtest(30, 30).pvalue)


def test_few_pairs_warn_and_incomplete_pairs_are_dropped():
    with pytest.warns(FewSamplesWarning, match=r"2 pairs \(< 30\)"):
        d = paired_difference([1.0, 2.0, math.nan], [2.0, 4.0, 5.0])
    assert d.n == 2 and d.estimate == 1.5
    with pytest.raises(ConfigError, match="equal lengths"):
        paired_difference([1.0], [1.0, 2.0])
    with pytest.raises(ConfigError, match="stat must be"):
        paired_difference([1.0], [1.0], stat="mode")


def test_unbounded_ends_decide_excludes_zero_honestly():
    d = paired_difference(np.zeros(5), np.arange(1.0, 6.0), stat="median", warn=False)
    assert (d.low, d.high) == (-math.inf, math.inf) and not d.excludes_zero  # 5 < min_samples(50)
    d = paired_difference(np.zeros(8), np.arange(1.0, 9.0), stat="median", warn=False)
    assert d.low == 1.0 and d.excludes_zero
    assert PairedDifference("m", "a", "b", "mean", 9, 0, 0, 3.0, 2.0, math.inf, 0.95).excludes_zero
    assert not PairedDifference("m", "a", "b", "mean", 9, 0, 0, 3, -math.inf, 5, 0.95).excludes_zero


def test_holm_matches_the_textbook_step_down():
    p = [0.01, 0.04, 0.03, 0.005, math.nan]
    adj = holm(p)
    assert adj[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02]) and math.isnan(adj[4])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([]) == []


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
    d = _results().compare("wait", "x=a", "x=b")
    assert (d.n, d.estimate, d.low, d.high) == (12, -3.0, -3.0, -3.0)
    with pytest.raises(ConfigError, match="no configuration 'x=c'"):
        _results().compare("wait", "x=a", "x=c")
    with pytest.raises(ConfigError, match="no run metric 'nope'"):
        _results().compare("nope", "x=a", "x=b")


def test_results_summary_has_means_and_intervals_per_config():
    s = _results().summary(["wait"]).set_index("config")
    assert s.loc["x=a", "runs"] == 12 and s.loc["x=a", "wait"] == pytest.approx(15.5)
    assert s.loc["x=a", "wait_low"] < 15.5 < s.loc["x=a", "wait_high"]

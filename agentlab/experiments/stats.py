"""Intervals that cover what they claim: percentiles, means, proportions, paired differences.

Taught in ``notebooks/14_experiments.ipynb``; ``benchmarks/bench_coverage.py`` measures how often
each interval contains the truth. Point estimates of percentiles use the package's one
percentile, ``agentlab.timeouts.percentile`` (linear interpolation, equal to ``numpy.percentile``).

**Percentiles: exact order-statistic intervals** (``agentlab.quantiles``, re-exported here):
distribution-free, ``scipy.stats.quantile_test``'s interval; an end the data cannot bound is
``-inf`` / ``+inf`` instead of the sample maximum a bootstrap would return (a bootstrap's "95 %"
interval of a p99 from 20 samples covers the truth about 17 % of the time: at most
``1 - 0.99**n``). ``min_samples(q)``, the smallest n whose exact interval is bounded (6 for a
p50, 72 for a p95, 368 for a p99), is the one "enough samples" rule of chapters 09, 12 and 14;
below it tables set ``few_samples`` and ``FewSamplesWarning`` is raised.

**Means and differences: t-intervals.** ``mean_interval`` and ``paired_difference`` use Student's
t (no resampling, so no seed dependence); in an A/A test its false-positive rate is the nominal
5 % even at 8 pairs, where the percentile bootstrap gave 14 %. No interval for a mean is exact
without assumptions: for heavy tails (lognormal, sigma 0.9) coverage is below 95 % at small n
(the bench prints it): ``mean_interval`` leaves the long tail's end open while Cochran's rule
(n > 25 * skewness**2) says the t-interval cannot be trusted yet, and fewer than ``FEW_PAIRS``
pairs of a paired difference warn. A 0/1 column is a proportion and
gets the Clopper-Pearson interval (9 of 9 gives [0.66, 1], not [1, 1]); a paired difference of
two 0/1 columns gets the difference of two such shares and an exact McNemar test.

**Censoring.** A call killed at its timeout took at least the timeout. An upper end that would
rest on such a lower bound is ``+inf``; the ``censored`` flag marks a percentile estimate that
falls among them.

**Many comparisons.** ``holm`` adjusts the p-values of a family of comparisons (the report).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

from ..errors import ConfigError
from ..quantiles import min_samples, percentile_interval, quantile_ranks
from ..timeouts import percentile

__all__ = ["FewSamplesWarning", "FEW_PAIRS", "min_samples", "quantile_ranks",
           "bootstrap_interval", "percentile_interval", "percentile_table", "mean_interval",
           "proportion_interval", "t_interval", "COCHRAN_FACTOR", "PairedDifference",
           "paired_difference", "holm"]

DEFAULT_RESAMPLES = 2000
#: Fewer pairs than this and a paired t-interval leans on the data looking normal: a warning.
FEW_PAIRS = 30
#: Cochran's rule (Cochran, *Sampling Techniques*, 1977): a mean of n values is near-normal
#: when n > 25 * G1**2; below it ``mean_interval`` leaves the long tail's end open.
COCHRAN_FACTOR = 25


class FewSamplesWarning(UserWarning):
    """Too few samples for the interval to mean what it says: a percentile below
    ``min_samples(q)`` (its exact interval is unbounded), or fewer than ``FEW_PAIRS`` pairs."""


def _finite(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def bootstrap_interval(values: Sequence[float], statistic: Callable[..., Any], *,
                       confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """``(low, high)`` of a percentile-bootstrap interval of ``statistic`` (NaN for n < 2).

    Built by hand in exercise 14; kept to teach it and to compare against (the bench), not used
    by the tables: it cannot see past the sample maximum. ``statistic(sample, axis=-1)`` must
    be vectorised like ``numpy.mean``.
    """
    import numpy as np  # lazy: heavy
    from scipy import stats  # lazy: heavy

    x = np.asarray(_finite(values), dtype=float)
    if len(x) < 2:
        return math.nan, math.nan
    if np.all(x == x[0]):  # no spread: every resample gives the same value
        v = float(statistic(x, axis=-1))
        return v, v
    batch = max(1, min(n_resamples, int(2_000_000 // len(x))))  # bound the memory of a batch
    res = stats.bootstrap((x,), statistic, n_resamples=n_resamples, batch=batch,
                          vectorized=True, confidence_level=confidence, method="percentile",
                          rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def proportion_interval(successes: int, n: int, *, confidence: float = 0.95
                        ) -> tuple[float, float, float]:
    """``(share, low, high)`` with the Clopper-Pearson (exact binomial) interval."""
    from scipy.stats import beta  # lazy: heavy

    if n <= 0:
        return math.nan, math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, n - successes + 1))
    high = 1.0 if successes == n else float(beta.isf(tail, successes + 1, n - successes))
    return successes / n, low, high


def t_interval(data: Sequence[float], confidence: float) -> tuple[float, float, float]:
    """``(mean, low, high)``: Student's t-interval of the mean (NaN ends below 2 values)."""
    from scipy.stats import t  # lazy: heavy

    n = len(data)
    mean = sum(data) / n
    if n < 2:
        return mean, math.nan, math.nan
    sd = math.sqrt(sum((x - mean) ** 2 for x in data) / (n - 1))
    half = float(t.isf((1.0 - confidence) / 2.0, n - 1)) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def mean_interval(values: Sequence[float], *, confidence: float = 0.95,
                  seed: int = 0) -> tuple[float, float, float]:
    """``(mean, low, high)``: a t-interval; Clopper-Pearson when every value is 0 or 1.

    Cochran's rule decides whether the t-interval can be trusted: with fewer than
    ``COCHRAN_FACTOR * G1**2`` values (G1: the sample skewness) the mean of data this skewed is
    not yet near-normal, and the end on the long tail's side is ``+inf`` (``-inf`` for a left
    tail) instead of a number that would under-cover (lognormal latencies, sigma 0.9: t covers
    87 % at n=20, this 96 %; ``benchmarks/bench_coverage.py``). NaN ends below 2 values.
    ``seed`` is accepted for the API's sake; nothing is drawn.
    """
    data = _finite(values)
    if not data:
        return math.nan, math.nan, math.nan
    if all(v in (0.0, 1.0) for v in data):
        return proportion_interval(int(sum(data)), len(data), confidence=confidence)
    mean, low, high = t_interval(data, confidence)
    skew = _skewness(data)
    if len(data) < COCHRAN_FACTOR * skew ** 2:  # too few values for t on data this skewed:
        # the long tail's side is left open (it is where t misses: a sample without the
        # tail's rare large values has a small mean *and* a small spread)
        low, high = (low, math.inf) if skew > 0 else (-math.inf, high)
    return mean, low, high


def _skewness(data: Sequence[float]) -> float:
    """The sample skewness G1 (adjusted Fisher-Pearson, ``scipy.stats.skew(bias=False)``)."""
    n = len(data)
    if n < 3:
        return 0.0
    mean = sum(data) / n
    m2 = sum((x - mean) ** 2 for x in data) / n
    m3 = sum((x - mean) ** 3 for x in data) / n
    if m2 == 0:
        return 0.0
    return m3 / m2 ** 1.5 * math.sqrt(n * (n - 1)) / (n - 2)


def percentile_table(df: Any, value: str, by: Sequence[str], qs: Sequence[float] = (50, 95, 99),
                     *, confidence: float = 0.95, seed: int = 0,
                     censored_by: str | None = "timed_out", warn: bool = True) -> Any:
    """One row per group of ``df`` and percentile: n, estimate, exact interval, flags.

    Columns: the ``by`` keys, ``q``, ``n``, ``value``, ``low``, ``high`` (``±inf`` when
    unbounded), ``min_n``, ``few_samples`` (n < min_n), ``censored`` (the percentile falls
    among timed-out calls: the true one is at least ``value``).
    """
    import pandas as pd  # lazy: heavy

    missing = [c for c in [value, *by] if c not in df.columns]
    if missing:
        raise ConfigError("invalid_argument", f"no column(s) {missing}; the table has "
                          f"{', '.join(map(str, df.columns))}")
    rows, flagged = [], []
    groups = df.groupby(list(by), sort=False, dropna=False) if by else [((), df)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        data = group[value].astype(float).tolist()
        cens = (group[censored_by].fillna(False).astype(bool).tolist()
                if censored_by and censored_by in group.columns else [False] * len(data))
        kept = [c for v, c in zip(data, cens) if math.isfinite(v)]
        share = sum(kept) / len(kept) if kept else 0.0
        for q in qs:
            est, low, high = percentile_interval(data, q, confidence=confidence, censored=cens)
            need, n = min_samples(q, confidence), len(kept)
            row = dict(zip(by, key))
            row.update(q=q, n=n, value=math.nan if est is None else est, low=low, high=high,
                       min_n=need, few_samples=n < need,
                       censored=bool(share > 0 and share >= 1 - q / 100.0 - 1e-9))
            rows.append(row)
            if n < need:
                flagged.append(f"p{q:g} of {', '.join(map(str, key)) or 'all'} (n={n} < {need})")
    if warn and flagged:
        warnings.warn(f"{len(flagged)} percentile(s) rest on too few samples to bound a "
                      f"{confidence:.0%} interval: {'; '.join(flagged[:6])}"
                      + (" ..." if len(flagged) > 6 else ""), FewSamplesWarning, stacklevel=3)
    return pd.DataFrame(rows, columns=[*by, "q", "n", "value", "low", "high", "min_n",
                                       "few_samples", "censored"])


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` over matched pairs: the estimate, its interval, p-value, each side's statistic."""

    metric: str
    a: str
    b: str
    stat: str
    n: int
    a_value: float
    b_value: float
    estimate: float
    low: float
    high: float
    confidence: float
    p_value: float = math.nan

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval is on one side of 0 (a difference the data supports)."""
        return bool(self.low > 0 or self.high < 0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.metric}: {self.b} - {self.a} = {self.estimate:+.4g} "
                f"[{self.low:+.4g}, {self.high:+.4g}] ({self.confidence:.0%}, {self.stat} of "
                f"{self.n} pairs)")


def _paired_shares(diffs: list[float], confidence: float) -> tuple[float, float, float]:
    """``(mean, low, high)`` of the difference of two paired 0/1 columns: each pair moves up
    (+1), down (-1) or not at all, and the difference is P(up) - P(down). Clopper-Pearson
    intervals of both shares at ``1 - alpha/2`` hold together with at least ``confidence``, so
    their difference does too (conservative; never the zero-width interval a t gives when
    every pair agrees)."""
    n = len(diffs)
    up, down = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    level = 1.0 - (1.0 - confidence) / 2.0
    _, up_lo, up_hi = proportion_interval(up, n, confidence=level)
    _, down_lo, down_hi = proportion_interval(down, n, confidence=level)
    return (up - down) / n, up_lo - down_hi, up_hi - down_lo


def _paired_p_value(diffs: list[float], stat: str) -> float:
    from scipy import stats  # lazy: heavy

    if stat in ("median", "share"):  # sign test (exact McNemar for 0/1): ties carry no direction
        pos, neg = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
        return float(stats.binomtest(pos, pos + neg).pvalue) if pos + neg else 1.0
    n, mean = len(diffs), sum(diffs) / len(diffs)
    if n < 2:
        return math.nan
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    if not sd > 0:  # every pair moved by the same amount: the t statistic is 0 or infinite
        return 1.0 if mean == 0 else 0.0
    return float(2 * stats.t.sf(abs(mean) / (sd / math.sqrt(n)), n - 1))


def paired_difference(a: Sequence[float], b: Sequence[float], *, stat: str = "mean",
                      confidence: float = 0.95, seed: int = 0, metric: str = "value",
                      labels: tuple[str, str] = ("a", "b"), warn: bool = True
                      ) -> PairedDifference:
    """The ``stat`` ("mean" or "median") of ``b[i] - a[i]`` with its interval and p-value.

    Mean: paired t-interval and t-test; when both sides are 0/1 (``success``), the
    difference of two shares instead (Clopper-Pearson on the pairs that moved up and down,
    exact McNemar test). Median: the exact order-statistic interval and a sign test. Pairs
    with a missing (NaN) side are dropped; ``n`` says how many were used. Fewer than
    ``FEW_PAIRS`` pairs warn ``FewSamplesWarning``. ``seed`` is kept for the API; nothing is drawn.
    """
    if stat not in ("mean", "median"):
        raise ConfigError("invalid_argument", f"stat must be 'mean' or 'median', got {stat!r}")
    if len(a) != len(b):
        raise ConfigError("invalid_argument", f"paired samples need equal lengths, got "
                          f"{len(a)} and {len(b)}")
    pairs = [(float(x), float(y)) for x, y in zip(a, b)
             if math.isfinite(float(x)) and math.isfinite(float(y))]
    if not pairs:
        nan = math.nan
        return PairedDifference(metric, *labels, stat, 0, nan, nan, nan, nan, nan, confidence)
    diffs = [y - x for x, y in pairs]
    if warn and len(pairs) < FEW_PAIRS:
        warnings.warn(f"{metric}: {len(pairs)} pairs (< {FEW_PAIRS}); the interval assumes "
                      "the differences look roughly normal", FewSamplesWarning, stacklevel=2)
    binary = stat == "mean" and all(v in (0.0, 1.0) for pair in pairs for v in pair)
    if binary:
        est, low, high = _paired_shares(diffs, confidence)
        side = [sum(s) / len(s) for s in ([x for x, _ in pairs], [y for _, y in pairs])]
    elif stat == "mean":
        est, low, high = t_interval(diffs, confidence)
        side = [sum(s) / len(s) for s in ([x for x, _ in pairs], [y for _, y in pairs])]
    else:
        est, low, high = percentile_interval(diffs, 50, confidence=confidence)
        side = [percentile([x for x, _ in pairs], 50), percentile([y for _, y in pairs], 50)]
    return PairedDifference(metric, labels[0], labels[1], stat, len(pairs), float(side[0]),
                            float(side[1]), float(est), low, high, confidence,
                            _paired_p_value(diffs, "share" if binary else stat))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (step-down; NaN stays NaN and does not count as a test).

    Reject comparison i at level alpha when its adjusted p-value is below alpha: the chance of
    one or more false "yes" over the whole family stays below alpha.
    """
    valid = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    out = [math.nan] * len(p_values)
    running, m = 0.0, len(valid)
    for rank, (p, i) in enumerate(valid):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out

"""Percentiles you can trust: bootstrap intervals, a too-few-samples rule, paired differences.

Taught in ``notebooks/14_experiments.ipynb`` (the bootstrap is built by hand there, in exercise
14; here it is ``scipy.stats.bootstrap``). Point estimates use the package's one percentile,
``agentlab.timeouts.percentile`` (linear interpolation, equal to ``numpy.percentile``).

**Intervals.** ``scipy.stats.bootstrap`` with ``method="percentile"``: resample the data with
replacement, compute the statistic on each resample, and take the middle ``confidence`` of
those values. BCa (scipy's default) corrects skew with a jackknife estimate of acceleration,
which is erratic for quantiles (a quantile barely moves when one point is left out), so the
plain percentile method is used: transparent, and what the exercise builds. A fixed seed and a
fixed number of resamples make every interval reproducible.

**Too few samples.** A bootstrap can only reshuffle values it has seen, so it cannot show how
far a tail goes beyond the largest sample. Distribution-free, the interval for the q-th
percentile can have an upper end below the sample maximum only if ``p**n <= alpha / 2``
(``p = q / 100``, ``alpha = 1 - confidence``): otherwise the largest of n samples is not even
a ``1 - alpha/2`` upper bound. Hence ``min_samples(q) = ceil(ln(alpha/2) / ln(p))``: 6 for a
p50, 72 for a p95, 368 for a p99 at 95 % confidence (about ``3.7 / (1 - p)``, i.e. roughly
four samples expected beyond the percentile). Below it, tables set ``few_samples`` and
``FewSamplesWarning`` is raised; the percentile is reported anyway.

**Censoring.** A call killed by its timeout took at least the timeout. When the timed-out
share of a group is at least ``1 - p``, the q-th percentile lies among those lower bounds, so
the table marks it ``censored``: the true percentile is at least that value.

**Paired comparisons.** Two configurations run on the same seeds and tasks meet the same
latencies and faults, so the per-seed difference removes most of the seed-to-seed noise;
``paired_difference`` bootstraps the mean (or median) of those differences.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Sequence

from ..errors import ConfigError
from ..timeouts import percentile

__all__ = ["FewSamplesWarning", "min_samples", "bootstrap_interval", "percentile_interval",
           "percentile_table", "PairedDifference", "paired_difference", "mean_interval"]

DEFAULT_RESAMPLES = 2000


class FewSamplesWarning(UserWarning):
    """A percentile rests on fewer samples than ``min_samples(q, confidence)``: its interval
    cannot bound the tail (the sample maximum is not a valid upper bound)."""


def min_samples(q: float, confidence: float = 0.95) -> int:
    """The fewest samples for a trustworthy interval of the q-th percentile (see module doc).

    Symmetric: a p1 needs as many as a p99 (its lower end is stuck at the minimum instead).
    """
    if not 0.0 < q < 100.0:
        raise ConfigError("invalid_argument", f"q must be strictly between 0 and 100, got {q}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError("invalid_argument", f"confidence must be in (0, 1), got {confidence}")
    p = max(q, 100.0 - q) / 100.0
    return max(1, math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(p) - 1e-9))


def _finite(values: Iterable[float]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def bootstrap_interval(values: Sequence[float], statistic: Callable[..., Any], *,
                       confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                       seed: int = 0) -> tuple[float, float]:
    """``(low, high)`` of a percentile-bootstrap interval of ``statistic`` (NaN for n < 2).

    ``statistic(sample, axis=-1)`` must be vectorised like ``numpy.mean``.
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


def percentile_interval(values: Sequence[float], q: float, *, confidence: float = 0.95,
                        n_resamples: int = DEFAULT_RESAMPLES,
                        seed: int = 0) -> tuple[float | None, float, float]:
    """``(estimate, low, high)`` for the q-th percentile; estimate None when there is no data."""
    import numpy as np  # lazy: heavy

    data = _finite(values)
    low, high = bootstrap_interval(data, lambda s, axis: np.percentile(s, q, axis=axis),
                                   confidence=confidence, n_resamples=n_resamples, seed=seed)
    return percentile(data, q), low, high


def mean_interval(values: Sequence[float], *, confidence: float = 0.95,
                  n_resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0) -> tuple[float, float, float]:
    """``(mean, low, high)`` with a bootstrap interval (booleans count as 0/1)."""
    import numpy as np  # lazy: heavy

    data = _finite(values)
    if not data:
        return math.nan, math.nan, math.nan
    low, high = bootstrap_interval(data, np.mean, confidence=confidence,
                                   n_resamples=n_resamples, seed=seed)
    return float(np.mean(data)), low, high


def percentile_table(df: Any, value: str, by: Sequence[str], qs: Sequence[float] = (50, 95, 99),
                     *, confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                     seed: int = 0, censored_by: str | None = "timed_out",
                     warn: bool = True) -> Any:
    """One row per group of ``df`` and percentile: n, estimate, low, high, flags.

    Columns: the ``by`` keys, ``q``, ``n``, ``value``, ``low``, ``high``, ``min_n``,
    ``few_samples`` (n < min_n), ``censored`` (the percentile falls among timed-out calls).
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
        share = (float(group[censored_by].astype(bool).mean())
                 if censored_by and censored_by in group.columns and len(group) else 0.0)
        for q in qs:
            est, low, high = percentile_interval(data, q, confidence=confidence,
                                                 n_resamples=n_resamples, seed=seed)
            need = min_samples(q, confidence)
            n = len(_finite(data))
            row = dict(zip(by, key))
            row.update(q=q, n=n, value=math.nan if est is None else est, low=low, high=high,
                       min_n=need, few_samples=n < need,
                       censored=bool(share > 0 and share >= 1 - q / 100.0 - 1e-9))
            rows.append(row)
            if n < need:
                flagged.append(f"p{q:g} of {', '.join(map(str, key)) or 'all'} (n={n} < {need})")
    if warn and flagged:
        warnings.warn(f"{len(flagged)} percentile(s) rest on too few samples for a "
                      f"{confidence:.0%} interval: {'; '.join(flagged[:6])}"
                      + (" ..." if len(flagged) > 6 else ""), FewSamplesWarning, stacklevel=3)
    return pd.DataFrame(rows, columns=[*by, "q", "n", "value", "low", "high", "min_n",
                                       "few_samples", "censored"])


@dataclass(frozen=True)
class PairedDifference:
    """``b - a`` over matched pairs: the estimate, its interval, and each side's statistic."""

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

    @property
    def excludes_zero(self) -> bool:
        """True when the whole interval is on one side of 0 (a difference the data supports)."""
        return (self.low > 0 or self.high < 0) if math.isfinite(self.low) else False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (f"{self.metric}: {self.b} - {self.a} = {self.estimate:+.4g} "
                f"[{self.low:+.4g}, {self.high:+.4g}] ({self.confidence:.0%}, {self.stat} of "
                f"{self.n} pairs)")


def paired_difference(a: Sequence[float], b: Sequence[float], *, stat: str = "mean",
                      confidence: float = 0.95, n_resamples: int = DEFAULT_RESAMPLES,
                      seed: int = 0, metric: str = "value", labels: tuple[str, str] = ("a", "b")
                      ) -> PairedDifference:
    """Bootstrap the ``stat`` ("mean" or "median") of ``b[i] - a[i]`` over the pairs.

    Pairs with a missing (NaN) side are dropped; ``n`` says how many were used.
    """
    import numpy as np  # lazy: heavy

    funcs = {"mean": np.mean, "median": np.median}
    if stat not in funcs:
        raise ConfigError("invalid_argument", f"stat must be 'mean' or 'median', got {stat!r}")
    if len(a) != len(b):
        raise ConfigError("invalid_argument", f"paired samples need equal lengths, got "
                          f"{len(a)} and {len(b)}")
    pairs = [(float(x), float(y)) for x, y in zip(a, b)
             if math.isfinite(float(x)) and math.isfinite(float(y))]
    fn = funcs[stat]
    diffs = [y - x for x, y in pairs]
    if not pairs:
        nan = math.nan
        return PairedDifference(metric, *labels, stat, 0, nan, nan, nan, nan, nan, confidence)
    low, high = bootstrap_interval(diffs, fn, confidence=confidence, n_resamples=n_resamples,
                                   seed=seed)
    return PairedDifference(metric, labels[0], labels[1], stat, len(pairs),
                            float(fn([x for x, _ in pairs])), float(fn([y for _, y in pairs])),
                            float(fn(diffs)), low, high, confidence)

"""The package's one percentile, its exact interval, and how many samples a percentile needs.

The one rule chapters 09, 12 and 14 share (``notebooks/09_adaptive_timeouts.ipynb`` draws it,
``12_observability`` tabulates it per tool, ``14_experiments`` measures it).

Among n samples, the number below the true q-th percentile is Binomial(n, q/100) whatever the
distribution. So two order statistics ``X(l), X(u)`` whose ranks cut ``alpha/2`` off each tail
of that binomial bound the percentile with at least the stated confidence: the exact,
distribution-free interval (``scipy.stats.quantile_test(...).confidence_interval()`` gives the
same ends). When n is too small no rank is far enough out, and that end is ``-inf``/``+inf``:
"the p99 of these 20 calls is above 1.9 s, and we cannot say how far". A bootstrap would return
the sample maximum instead and look bounded while covering the truth about 17 % of the time.

``min_samples(q)`` is the smallest n whose exact interval is bounded at both ends: 6 for a p50,
72 for a p95, 368 for a p99 at 95 % confidence (about ``ln(alpha/2) / ln(p)``).
"""
from __future__ import annotations

import functools
import math
from typing import Iterable, Sequence

from .errors import ConfigError

__all__ = ["percentile", "sorted_percentile", "quantile_ranks", "min_samples",
           "percentile_interval"]


def percentile(values: Iterable[float], q: float) -> float | None:
    """The q-th percentile (0..100) by linear interpolation; equals ``numpy.percentile``.

    The one percentile of the package (chapter 12's reports use it too). No values means no
    percentile: the result is ``None``, never a made-up number. A NaN among the values makes
    the result NaN, like numpy: sorting with a NaN depends on the input order, so any number
    would be an accident of that order.

    Raises:
        ConfigError: ``q`` outside [0, 100].
    """
    if not 0.0 <= q <= 100.0:
        raise ConfigError("invalid_argument", f"q must be in [0, 100], got {q}")
    data = list(values)
    if any(v != v for v in data):  # NaN is the only value unequal to itself
        return math.nan
    data.sort()
    if not data:
        return None
    return sorted_percentile(data, q)


def sorted_percentile(data: list[float], q: float) -> float:
    """``percentile`` of data already sorted and free of NaN (a manager's window keeps its
    durations sorted, so it skips the copy and the sort)."""
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _check(q: float, confidence: float) -> None:
    if not 0.0 < q < 100.0:
        raise ConfigError("invalid_argument", f"q must be strictly between 0 and 100, got {q}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError("invalid_argument", f"confidence must be in (0, 1), got {confidence}")


@functools.lru_cache(maxsize=4096)
def quantile_ranks(n: int, q: float, confidence: float = 0.95) -> tuple[int, int]:
    """0-based indices ``(l, u)`` into n sorted samples of the exact interval of the q-th
    percentile; ``l == -1`` means unbounded below, ``u == n`` unbounded above.

    The ranks of ``scipy.stats.quantile_test(x, p=q/100).confidence_interval(confidence)``:
    ``binom.ppf(tail) - 1`` and ``binom.isf(tail)``, computed here from the binomial
    probabilities (pure Python, so chapter 09 needs no scipy; ``tests/test_quantiles.py``
    checks every rank against scipy's). A relative 1e-9 settles ties the way scipy does
    (a tail that equals a cumulative probability, e.g. n=1, p=0.05).
    """
    _check(q, confidence)
    if n <= 0:
        return -1, 0
    tail = (1.0 - confidence) / 2.0
    pmf = _binomial_pmf(n, q / 100.0)
    low, cdf = n, 0.0
    for k, x in enumerate(pmf):  # binom.ppf(tail): the first k with P(X <= k) >= tail
        cdf += x
        if cdf >= tail * (1 - 1e-9):
            low = k
            break
    high, sf = 0, 0.0
    for k in range(n, -1, -1):  # binom.isf(tail): the first k with P(X > k) <= tail
        if sf > tail * (1 + 1e-9):
            high = k + 1
            break
        sf += pmf[k]
    return max(low - 1, -1), min(high, n)


def _binomial_pmf(n: int, p: float) -> list[float]:
    """P(X = k) for k = 0..n, X ~ Binomial(n, p), 0 < p < 1 (in log space: no overflow)."""
    lp, lq, lg = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return [math.exp(lg - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq)
            for k in range(n + 1)]


@functools.lru_cache(maxsize=256)
def min_samples(q: float, confidence: float = 0.95) -> int:
    """The fewest samples whose exact interval for the q-th percentile is bounded at both ends.

    Symmetric: a p1 needs as many as a p99. About ``ln(alpha/2) / ln(p)`` (p = max(q, 100-q)/100).
    """
    _check(q, confidence)
    p = max(q, 100.0 - q) / 100.0
    n = max(1, math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(p) - 1e-9))

    def bounded(k: int) -> bool:
        lo, hi = quantile_ranks(k, q, confidence)
        return lo >= 0 and hi < k
    while not bounded(n):
        n += 1
    while n > 1 and bounded(n - 1):
        n -= 1
    return n


def percentile_interval(values: Sequence[float], q: float, *, confidence: float = 0.95,
                        seed: int = 0, censored: Sequence[bool] | None = None
                        ) -> tuple[float | None, float, float]:
    """``(estimate, low, high)`` for the q-th percentile with the exact interval (module doc).

    ``low`` is ``-inf`` / ``high`` is ``+inf`` when the samples cannot bound that end; an
    estimate of None (and NaN ends) when there is no data. ``censored`` flags values that are
    lower bounds (calls killed at their timeout): an upper end resting on one is ``+inf``.
    ``seed`` is accepted for the API's sake; the interval is exact, nothing is drawn.
    """
    flags = [bool(c) for c in censored] if censored is not None else [False] * len(values)
    if len(flags) != len(values):
        raise ConfigError("invalid_argument", f"censored has {len(flags)} flags for "
                          f"{len(values)} values")
    pairs = sorted((float(v), c) for v, c in zip(values, flags)
                   if v is not None and math.isfinite(float(v)))  # NaN and inf: no sample
    data = [v for v, _ in pairs]
    if not data:
        _check(q, confidence)
        return None, math.nan, math.nan
    lo, hi = quantile_ranks(len(data), q, confidence)
    uncensored = [v for v, c in pairs if not c]
    low = data[lo] if lo >= 0 else -math.inf
    high = uncensored[hi] if hi < len(uncensored) else math.inf
    return percentile(data, q), low, high

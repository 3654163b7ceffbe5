"""How often an interval contains the truth: the Monte-Carlo check of ``stats``.

Draw many samples from a distribution whose answer we know, compute the interval on each, and
count how often it contains the truth (its *coverage*; a "95 %" interval should reach 95 %).
For a paired comparison with no true difference (an A/A test), count how often the interval
excludes 0 instead (its *false-positive rate*; nominal 5 %). An unbounded end counts as
covering: "at least 800 ms" is a true statement about a p99 of 900 ms.

``benchmarks/bench_coverage.py`` prints the full table; ``notebooks/14_experiments.ipynb``
draws its pitfall figure from ``quantile_coverage`` (the bootstrap cannot see past the sample
maximum, so its coverage of a p99 is capped by ``1 - 0.99**n``).

``method="kit"`` calls the package's own intervals on each sample (``percentile_interval``,
``mean_interval``, ``paired_difference``, ``proportion_interval``). ``method="bootstrap"`` is
the percentile bootstrap of ``stats.bootstrap_interval``, vectorised over the resamples.
Latencies are lognormal with median 800 ms and sigma 0.9 unless said otherwise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from .stats import (mean_interval, paired_difference, percentile_interval, proportion_interval,
                    t_interval)

__all__ = ["LogNormalLatency", "Successes", "quantile_coverage", "mean_coverage",
           "aa_false_positive_rate",
           "proportion_coverage", "bootstrap_cap"]


@dataclass(frozen=True)
class LogNormalLatency:
    """Latencies (ms) with a known answer: ``median`` and ``sigma`` of the log."""

    median: float = 800.0
    sigma: float = 0.9

    def draw(self, rng: Any, shape: tuple[int, ...]) -> Any:
        return rng.lognormal(math.log(self.median), self.sigma, shape)

    def quantile(self, q: float) -> float:
        from scipy.stats import norm  # lazy: heavy

        return self.median * math.exp(self.sigma * float(norm.ppf(q / 100.0)))

    @property
    def mean(self) -> float:
        return self.median * math.exp(self.sigma ** 2 / 2)


@dataclass(frozen=True)
class Successes:
    """A 0/1 outcome (a run succeeds) with probability ``p``: for A/A tests of ``success``."""

    p: float = 0.8

    def draw(self, rng: Any, shape: tuple[int, ...]) -> Any:
        return (rng.random(shape) < self.p).astype(float)


def bootstrap_cap(n: int, q: float) -> float:
    """The most a percentile bootstrap can cover a q-th percentile from n samples: it never
    returns more than the sample maximum, which is below the truth with chance ``p**n``."""
    return 1.0 - (q / 100.0) ** n


def _bootstrap(x: Any, stat: Any, rng: Any, n_resamples: int, confidence: float
               ) -> tuple[float, float]:
    import numpy as np  # lazy: heavy

    idx = rng.integers(0, len(x), (n_resamples, len(x)))
    values = stat(x[idx])
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def _check(method: str, allowed: tuple[str, ...]) -> None:
    if method not in allowed:
        raise ConfigError("invalid_argument", f"method must be one of {allowed}, got {method!r}")


def quantile_coverage(n: int, q: float, *, reps: int = 1000, method: str = "kit",
                      seed: int = 0, n_resamples: int = 400, confidence: float = 0.95,
                      dist: LogNormalLatency = LogNormalLatency()) -> float:
    """Share of ``reps`` samples of size n whose interval of the q-th percentile holds the truth."""
    import numpy as np  # lazy: heavy

    _check(method, ("kit", "bootstrap"))
    rng, truth = np.random.default_rng(seed), dist.quantile(q)
    data = dist.draw(rng, (reps, n))
    hits = 0
    for x in data:
        if method == "kit":
            _, low, high = percentile_interval(x, q, confidence=confidence)
        else:
            low, high = _bootstrap(x, lambda s: np.percentile(s, q, axis=-1), rng,
                                   n_resamples, confidence)
        hits += low <= truth <= high
    return hits / reps


def mean_coverage(n: int, *, reps: int = 1000, method: str = "kit", seed: int = 0,
                  n_resamples: int = 400, confidence: float = 0.95,
                  dist: LogNormalLatency = LogNormalLatency()) -> float:
    """Share of ``reps`` samples of size n whose interval of the mean holds the true mean
    (``method``: ``"kit"``, ``"t"`` for plain Student's t, or ``"bootstrap"``)."""
    import numpy as np  # lazy: heavy

    _check(method, ("kit", "t", "bootstrap"))
    rng = np.random.default_rng(seed)
    hits = 0
    for x in dist.draw(rng, (reps, n)):
        if method == "kit":
            _, low, high = mean_interval(x, confidence=confidence)
        elif method == "t":  # plain Student's t, what the kit gives when Cochran's rule holds
            _, low, high = t_interval(list(x), confidence)
        else:
            low, high = _bootstrap(x, lambda s: s.mean(axis=-1), rng, n_resamples, confidence)
        hits += low <= dist.mean <= high
    return hits / reps


def aa_false_positive_rate(pairs: int, *, reps: int = 1000, method: str = "kit", seed: int = 0,
                           n_resamples: int = 400, confidence: float = 0.95,
                           dist: Any = LogNormalLatency()) -> float:
    """A/A test: both configurations draw from ``dist`` on each pair; the share of paired
    comparisons whose interval of the mean difference excludes 0 (a false "difference")."""
    import numpy as np  # lazy: heavy

    _check(method, ("kit", "bootstrap"))
    rng = np.random.default_rng(seed)
    a, b = dist.draw(rng, (reps, pairs)), dist.draw(rng, (reps, pairs))
    hits = 0
    for x, y in zip(a, b):
        if method == "kit":
            hits += paired_difference(x, y, confidence=confidence, warn=False).excludes_zero
        else:
            low, high = _bootstrap(y - x, lambda s: s.mean(axis=-1), rng, n_resamples,
                                   confidence)
            hits += low > 0 or high < 0
    return hits / reps


def proportion_coverage(n: int, p: float, *, reps: int = 1000, method: str = "kit",
                        seed: int = 0, n_resamples: int = 400, confidence: float = 0.95) -> float:
    """Share of ``reps`` runs of n Bernoulli(p) trials whose interval of the share holds p."""
    import numpy as np  # lazy: heavy

    _check(method, ("kit", "bootstrap"))
    rng = np.random.default_rng(seed)
    hits = 0
    for x in (rng.random((reps, n)) < p).astype(float):
        if method == "kit":
            _, low, high = proportion_interval(int(x.sum()), n, confidence=confidence)
        else:
            low, high = _bootstrap(x, lambda s: s.mean(axis=-1), rng, n_resamples, confidence)
        hits += low <= p <= high
    return hits / reps

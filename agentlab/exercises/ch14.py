"""Checks for exercise 14, a bootstrap interval (``notebooks/exercises/14_bootstrap.ipynb``).

The student writes ``bootstrap_percentile(values, q, n_resamples=2000, confidence=0.95,
seed=0) -> (low, high)``: draw ``n_resamples`` resamples of ``len(values)`` values *with
replacement*, take the q-th percentile of each, and return the ``(1 - confidence) / 2`` and
``(1 + confidence) / 2`` quantiles of those bootstrap percentiles (the percentile method).
Random draws differ between implementations, so the checks test what every correct
bootstrap does: determinism for a seed, agreement with ``scipy.stats.bootstrap`` within
Monte Carlo error, resampling with (not without) replacement, wider intervals at higher
confidence, and a clear error for no data.
"""
from __future__ import annotations

import random
from typing import Callable

from ..timeouts import percentile
from .cases import Case, run_cases

__all__ = ["check_bootstrap", "reference_bootstrap"]


def reference_bootstrap(values: list[float], q: float, confidence: float = 0.95,
                        n_resamples: int = 4000, seed: int = 0) -> tuple[float, float]:
    """The interval ``scipy.stats.bootstrap`` gives (percentile method), as a reference."""
    import numpy as np  # lazy: heavy
    from scipy import stats  # lazy: heavy

    res = stats.bootstrap((np.asarray(values, float),),
                          lambda s, axis: np.percentile(s, q, axis=axis), vectorized=True,
                          n_resamples=n_resamples, confidence_level=confidence,
                          method="percentile", rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _error_name(call: Callable[[], object]) -> str:
    """The name of the exception ``call()`` raises, or what it did instead."""
    try:
        got = call()
    except Exception as exc:  # which error, whatever it is, is the answer checked
        return type(exc).__name__
    return f"no error (returned {got!r})"


def _close_to(ref: tuple[float, float], tol: float) -> Callable[[tuple], bool]:
    width = ref[1] - ref[0]
    return lambda got: (isinstance(got, tuple) and len(got) == 2
                        and abs(got[0] - ref[0]) <= tol * width
                        and abs(got[1] - ref[1]) <= tol * width)


def check_bootstrap(fn: Callable) -> str:
    """Check ``fn(values, q, n_resamples=..., confidence=..., seed=...) -> (low, high)``."""
    rng = random.Random(14)
    latencies = [round(rng.lognormvariate(5, 0.8), 2) for _ in range(200)]
    data = list(latencies)
    ref50 = reference_bootstrap(latencies, 50)
    ref90 = reference_bootstrap(latencies, 90)

    def call(values, q, **kw):
        return fn(values, q, **{"n_resamples": 4000, "seed": 3, **kw})

    def nested() -> bool:
        lo80, hi80 = call(latencies, 50, confidence=0.80)
        lo99, hi99 = call(latencies, 50, confidence=0.99)
        return lo99 < lo80 < hi80 < hi99

    return run_cases("bootstrap percentile interval", [
        Case("returns (low, high) with low <= high", lambda: (lambda r: isinstance(r, tuple)
             and len(r) == 2 and r[0] <= r[1])(call(latencies, 50)), True,
             hint="return a tuple (low, high) of two numbers."),
        Case("the same seed gives the same interval", lambda: call(latencies, 95) ==
             call(latencies, 95), True,
             hint="draw from random.Random(seed) (or numpy.random.default_rng(seed)), never "
                  "from the global random module."),
        Case("the p50 interval agrees with scipy.stats.bootstrap",
             lambda: call(latencies, 50), check=_close_to(ref50, 0.1),
             hint=f"scipy gives about ({ref50[0]:.1f}, {ref50[1]:.1f}); take the q-th "
                  "percentile of each resample, then the 2.5th and 97.5th percentiles of "
                  "those."),
        Case("the p90 interval agrees with scipy.stats.bootstrap",
             lambda: call(latencies, 90), check=_close_to(ref90, 0.1),
             hint=f"scipy gives about ({ref90[0]:.1f}, {ref90[1]:.1f})."),
        Case("it contains the sample's own percentile",
             lambda: (lambda r, p: r[0] <= p <= r[1])(call(latencies, 50),
                                                       percentile(latencies, 50)), True,
             hint="the interval is around the percentile of the data you were given."),
        Case("resamples are drawn with replacement ([1, 2] has a p50 interval of (1, 2))",
             lambda: tuple(round(v, 3) for v in call([1.0, 2.0], 50)), (1.0, 2.0),
             hint="use rng.choices(values, k=len(values)), not a shuffle: without "
                  "replacement every resample is the data itself."),
        Case("a higher confidence gives a wider interval", nested, True,
             hint="the bounds are the (1 - confidence) / 2 and (1 + confidence) / 2 "
                  "quantiles of the bootstrap percentiles."),
        Case("constant data has a zero-width interval", lambda: call([7.0] * 30, 95),
             (7.0, 7.0), hint="every resample of constant data is the same."),
        Case("the input list is not changed", lambda: (call(latencies, 50), latencies)[1]
             == data, True, hint="sort copies (sorted(...)), never values.sort()."),
        Case("no values raises ValueError", lambda: _error_name(lambda: fn([], 50)), "ValueError",
             hint="an interval of nothing is undefined: raise ValueError."),
    ])

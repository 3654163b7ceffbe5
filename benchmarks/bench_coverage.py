"""Do the kit's 95 % intervals contain the truth 95 % of the time? (issue 20)

    python benchmarks/bench_coverage.py [--reps 1000] [--boot-reps 400] [--quick]

Lognormal latencies (median 800 ms, sigma 0.9): for each sample size n, draw ``--reps``
samples, compute the interval on each, and print the share that contains the true value
(``agentlab.experiments.coverage``; an unbounded end counts as covering). Columns:

- ``kit``: the package's interval (exact order statistics for percentiles, Student's t for
  means -- with the long tail's end open while Cochran's rule n > 25 * skewness**2 fails --
  and paired differences, Clopper-Pearson for proportions);
- ``scipy``: scipy's own interval for the same statistic on the first ``--check`` samples,
  and whether it agrees with the kit's exactly (quantile_test, ttest_rel, binomtest exact);
  for the mean, the coverage of plain Student's t (``ttest_1samp``), which the kit departs
  from on purpose;
- ``bootstrap``: the percentile bootstrap (``--boot-reps`` samples, 400 resamples each),
  which the kit used before; ``cap``: ``1 - p**n``, the most a bootstrap can cover a
  percentile (it never returns more than the sample maximum).

A/A: both configurations draw from the same distribution; the share of paired comparisons
whose interval excludes 0 (nominal 5 %), for latencies and for a 0/1 success column (p = 0.8).
``--quick`` is a smoke test (a few seconds).
Monte-Carlo error of a 95 % coverage from 1,000 reps: about ±0.7 points.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
from scipy import stats

from agentlab.experiments.coverage import (LogNormalLatency, Successes, aa_false_positive_rate,
                                           bootstrap_cap, mean_coverage, proportion_coverage,
                                           quantile_coverage)
from agentlab.experiments.stats import (paired_difference, percentile_interval,
                                        proportion_interval)

DIST = LogNormalLatency()


def _same(a: tuple, b: tuple) -> bool:
    return all((math.isinf(x) and math.isinf(y)) or math.isclose(x, y, rel_tol=1e-9)
               for x, y in zip(a, b))


def _scipy_agrees(kind: str, n: int, q: float | None, check: int) -> bool:
    """The kit's interval equals scipy's on ``check`` fresh samples."""
    rng = np.random.default_rng(99)
    for _ in range(check):
        if kind == "quantile":
            x = DIST.draw(rng, (n,))
            ci = stats.quantile_test(x, q=0, p=q / 100).confidence_interval()
            ref = (-math.inf if math.isnan(ci.low) else ci.low,
                   math.inf if math.isnan(ci.high) else ci.high)
            got = percentile_interval(x, q)[1:]
        elif kind == "aa":
            x, y = DIST.draw(rng, (n,)), DIST.draw(rng, (n,))
            d = paired_difference(x, y, warn=False)
            ref, got = tuple(stats.ttest_rel(y, x).confidence_interval()), (d.low, d.high)
        else:
            k = int(rng.binomial(n, q))
            ci = stats.binomtest(k, n).proportion_ci(method="exact")
            ref, got = (ci.low, ci.high), proportion_interval(k, n)[1:]
        if not _same(ref, got):
            return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000, help="samples per cell (kit)")
    ap.add_argument("--boot-reps", type=int, default=400, help="samples per cell (bootstrap)")
    ap.add_argument("--check", type=int, default=20, help="samples compared with scipy")
    ap.add_argument("--quick", action="store_true", help="a smoke test: few reps, small n")
    args = ap.parse_args()
    reps, boot, check = args.reps, args.boot_reps, args.check
    sizes, pairs = (20, 50, 200, 1000), (8, 20, 50)
    if args.quick:
        reps, boot, check, sizes = 100, 50, 3, (20, 50)
    t0 = time.perf_counter()
    worst: list[tuple[float, str]] = []
    print(f"coverage of 95 % intervals, lognormal(median {DIST.median:g} ms, sigma "
          f"{DIST.sigma}); kit {reps} reps per cell, bootstrap {boot}")
    print(f"{'statistic':<10}{'n':>6}{'kit':>8}{'scipy':>8}{'bootstrap':>11}{'cap':>8}")
    for label, q in (("mean", None), ("p50", 50), ("p95", 95), ("p99", 99)):
        for n in sizes:
            if q is None:
                kit = mean_coverage(n, reps=reps, seed=n)
                bs = mean_coverage(n, reps=boot, method="bootstrap", seed=n)
                agree = f"t {mean_coverage(n, reps=reps, method='t', seed=n):.1%}"
                cap = ""
            else:
                kit = quantile_coverage(n, q, reps=reps, seed=n)
                bs = quantile_coverage(n, q, reps=boot, method="bootstrap", seed=n)
                agree, cap = _scipy_agrees("quantile", n, q, check), f"{bootstrap_cap(n, q):.1%}"
            worst.append((kit, f"{label} n={n}"))
            if not isinstance(agree, str):
                agree = "same" if agree else "DIFF"
            print(f"{label:<10}{n:>6}{kit:>8.1%}{agree:>8}{bs:>11.1%}"
                  f"{cap:>8}")
    print(f"\n{'proportion':<16}{'kit':>8}{'scipy':>8}{'bootstrap':>11}")
    for n, p in ((9, 0.9), (9, 0.99), (20, 0.5), (50, 0.95), (200, 0.99)):
        kit = proportion_coverage(n, p, reps=reps, seed=n)
        bs = proportion_coverage(n, p, reps=boot, method="bootstrap", seed=n)
        worst.append((kit, f"share p={p} n={n}"))
        print(f"{f'p={p} n={n}':<16}{kit:>8.1%}"
              f"{'same' if _scipy_agrees('prop', n, p, check) else 'DIFF':>8}{bs:>11.1%}")
    k9 = proportion_interval(9, 9)
    print(f"9 of 9 successes: kit {k9[0]:.0%} [{k9[1]:.2f}, {k9[2]:.2f}] (a bootstrap: [1, 1])")
    print(f"\n{'A/A pairs':<16}{'kit':>8}{'scipy':>8}{'bootstrap':>11}   (false-positive rate)")
    for n in pairs:
        kit = aa_false_positive_rate(n, reps=reps, seed=n)
        bs = aa_false_positive_rate(n, reps=boot, method="bootstrap", seed=n)
        worst.append((1 - kit, f"A/A {n} pairs (1 - false positives)"))
        print(f"{n:<16}{kit:>8.1%}{'same' if _scipy_agrees('aa', n, None, check) else 'DIFF':>8}"
              f"{bs:>11.1%}")
    for n in pairs:  # 0/1 outcomes (success), the paired difference of two shares
        kit = aa_false_positive_rate(n, reps=reps, seed=n, dist=Successes(0.8))
        bs = aa_false_positive_rate(n, reps=boot, method="bootstrap", seed=n, dist=Successes(0.8))
        worst.append((1 - kit, f"A/A success {n} pairs (1 - false positives)"))
        print(f"{f'{n} (success 0.8)':<16}{kit:>8.1%}{'':>8}{bs:>11.1%}")
    low = sorted(worst)[:3]
    print(f"\nlowest kit cells: {', '.join(f'{name} {v:.1%}' for v, name in low)}; "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()

"""Checks for exercise 01, the backoff schedule (``notebooks/exercises/01_backoff.ipynb``).

The student writes ``backoff_delay(attempt, base, cap, retry_after, rng)`` (full jitter, a
``Retry-After`` floor, a cap) and ``should_retry(status)``. The checks sample the student's
function many times with seeded generators, so any correct way of drawing the jitter passes
(``rng.uniform(0, c)`` or ``rng.random() * c``) while a fixed delay, "equal jitter", a missing
floor or a missing cap fail with a hint.
"""
from __future__ import annotations

import random
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_backoff", "check_should_retry"]


def _samples(fn: Callable, attempt: int, base: float, cap: float, retry_after=None,
             n: int = 400, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [float(fn(attempt, base, cap, retry_after, rng)) for _ in range(n)]


def _summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "mean": round(sum(xs) / len(xs), 3),
            "max": round(max(xs), 3)}


def check_backoff(fn: Callable) -> str:
    """Check ``fn(attempt, base, cap, retry_after, rng) -> seconds`` (attempt 0 = first retry)."""
    def spread(attempt, base, cap, retry_after=None):
        return lambda: _summary(_samples(fn, attempt, base, cap, retry_after))

    def full_jitter(ceiling):
        # uniform on [0, ceiling]: min near 0, mean near ceiling/2, max near ceiling
        return lambda s: (s["min"] < 0.05 * ceiling and 0.4 * ceiling < s["mean"] < 0.6 * ceiling
                          and 0.95 * ceiling < s["max"] <= ceiling)

    return run_cases("backoff schedule", [
        Case("first retry: jitter in [0, base]", spread(0, 1.0, 30.0), check=full_jitter(1.0),
             hint="the first retry waits anything from 0 up to base seconds."),
        Case("exponential growth: attempt 3, base 0.5 -> [0, 4]", spread(3, 0.5, 30.0),
             check=full_jitter(4.0),
             hint="the upper end of the draw doubles with each attempt, starting from base."),
        Case("full jitter, not equal jitter", spread(2, 1.0, 30.0),
             check=lambda s: s["min"] < 0.2,
             hint="draw the whole delay at random from 0 up (not ceiling/2 + random)."),
        Case("cap bounds the ceiling: attempt 10, cap 30", spread(10, 1.0, 30.0),
             check=full_jitter(30.0),
             hint="however many attempts, the draw never goes above cap: the growth stops there."),
        Case("Retry-After 0.5 s is a floor", spread(0, 0.1, 30.0, 0.5),
             check=lambda s: s["min"] >= 0.5 and s["max"] <= 0.5 + 1e-9,
             hint="never retry sooner than the server asked: Retry-After is the least you wait."),
        Case("Retry-After below the draw keeps the draw", spread(4, 1.0, 30.0, 0.5),
             check=lambda s: s["min"] >= 0.5 and s["max"] > 15.0,
             hint="Retry-After is a floor, not a replacement for the backoff."),
        Case("Retry-After above the cap is capped", spread(0, 1.0, 30.0, 3600.0),
             expected={"min": 30.0, "mean": 30.0, "max": 30.0},
             hint="even a server asking for an hour waits at most cap: the cap has the last word."),
        Case("retry_after=None means no floor", spread(0, 1.0, 30.0, None),
             check=full_jitter(1.0), hint="only use retry_after when it is not None."),
        Case("uses the rng it is given (reproducible)",
             lambda: _samples(fn, 3, 1.0, 30.0, n=5, seed=7) == _samples(fn, 3, 1.0, 30.0, n=5,
                                                                             seed=7)
             != _samples(fn, 3, 1.0, 30.0, n=5, seed=8),
             expected=True, hint="draw with rng.uniform(...) or rng.random(), not the random "
                                 "module, so a seeded schedule can be replayed."),
    ])


def check_should_retry(fn: Callable) -> str:
    """Check ``fn(status) -> bool``: retry 408, 409, 429 and 5xx; never other 4xx."""
    cases = []
    for status, want, why in [
            (429, True, "429 is a rate limit: wait and try again."),
            (500, True, "5xx means the server failed; the same request may succeed."),
            (503, True, "503 is 'overloaded': retry after a pause."),
            (504, True, "every 5xx is worth retrying, not only 500 and 503."),
            (408, True, "408 is a request timeout: retryable."),
            (409, True, "409 is a conflict/lock timeout: retryable."),
            (400, False, "400 means the request is malformed; the same request fails again."),
            (401, False, "401 means the key is wrong; retrying cannot fix it."),
            (403, False, "403: no permission; retrying cannot fix it."),
            (404, False, "404: the model or URL does not exist."),
            (422, False, "422: the request cannot be processed as sent.")]:
        cases.append(Case(f"status {status}", lambda s=status: bool(fn(s)), expected=want,
                          hint=why))
    return run_cases("should_retry", cases)

"""Adaptive per-tool timeouts learned from a sliding window of measured durations.

Taught in ``notebooks/09_adaptive_timeouts.ipynb`` (article section 7).

A fixed 30 s timeout for every tool is wrong in both directions: a 20 ms lookup that hangs
wastes 30 s, and a slow report generator may be killed while still doing useful work. The
``AdaptiveTimeoutManager`` keeps the last ``window`` durations of each tool and derives that
tool's timeout from its own tail latency.

Units are part of the contract:
    * durations are recorded and reported in **milliseconds** (``duration_ms``, ``p95`` ...);
    * timeouts are returned in **seconds** and clamped to ``[min_timeout, max_timeout]`` seconds.

Percentiles use linear interpolation between closest ranks (Hyndman & Fan type 7), the
default of ``numpy.percentile``: for sorted values ``v[0..n-1]`` the q-th percentile sits at
position ``(n - 1) * q / 100``. ``percentile(values, q)`` equals ``numpy.percentile(values, q)``
(it lives in ``agentlab.quantiles`` with the percentile's exact interval; re-exported here).

The timeout rule is the article's ``(p95 + 2 * (p99 - p95)) * multiplier``: the p95 plus twice
the spread of the tail, times a safety factor. Until a tool has ``min_samples`` samples the
manager returns ``initial_timeout`` (a p99 of three samples is noise).

Censoring: a call cut off by its timeout never shows its true duration; all we know is that it
took *at least* the timeout. Such a call is recorded (``timed_out=True``) as a sample of at
least the timeout, so when a tool slows down the window fills with these lower bounds and the
learned timeout grows (by about ``multiplier`` per round). Learning only from successes does
the opposite: the slow calls disappear from the data and the timeout never grows back.

Plain censoring has its own trap, measured in the notebook: a tool where 2 % of calls hang
has an infinite p99, so every hang recorded at the timeout pushes the p99 (and the timeout)
up again, towards ``max_timeout``. The default ``rule="censoring_aware"`` therefore looks at
the fraction ``c`` of timed-out samples in the window:

    c <= 1 %        the article rule over every sample (the p99 is observed)
    1 % < c <= 5 %  the p99 is censored: the rule over finished calls only (rare hangs do not
                    ratchet the timeout up)
    c > 5 %         the p95 is censored, the tool really got slower: the rule over every
                    sample, which puts the timeout at about ``multiplier`` x the old one

``rule="article"`` always uses every sample (for comparison).

Alerts (the slow-query log) compare a duration with ``alert_threshold`` x the p95 of the
tool's *baseline*: the recent durations that raised no alert. A slow sample never joins the
baseline, so a slow regime keeps alerting for as long as it lasts instead of becoming the new
normal once it fills the window (the timeout, learned from every sample, does adapt to it);
``reset(tool)`` accepts a new normal. Alerts start after a warm-up of ``alert_min_samples``
(default 3) baseline samples, much sooner than the timeout adapts.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Callable

from .errors import ConfigError
from .knobs import positive_int, positive_number
from .quantiles import percentile, percentile_interval, sorted_percentile

__all__ = ["AdaptiveTimeoutManager", "TimingStats", "percentile", "adaptive_timeout_s"]


def adaptive_timeout_s(p95_ms: float, p99_ms: float, multiplier: float = 1.5) -> float:
    """The article's rule, unclamped, in seconds: ``(p95 + 2 * (p99 - p95)) * multiplier``."""
    return (p95_ms + 2.0 * (p99_ms - p95_ms)) * multiplier / 1000.0


@dataclass(frozen=True)
class TimingStats:
    """A snapshot of one tool's window. Durations in ms, ``timeout_s`` in seconds.

    ``timed_out`` and ``failures`` count calls in the window; ``slow`` counts every call
    (since the start) that raised an alert.
    """

    name: str
    count: int
    mean: float
    stddev: float
    p50: float
    p95: float
    p99: float
    min: float
    max: float
    timeout_s: float
    timed_out: int
    failures: int
    slow: int
    total_calls: int

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Window:
    """One tool's recent samples (ms), each flagged as success / timed out."""

    def __init__(self, size: int) -> None:
        self.durations: deque[float] = deque(maxlen=size)
        self.timed_out: deque[bool] = deque(maxlen=size)
        self.failed: deque[bool] = deque(maxlen=size)
        self.sorted_cache: list[float] | None = None
        self.baseline: deque[float] = deque(maxlen=size)  # durations that raised no alert
        self.baseline_cache: list[float] | None = None
        self.slow = 0
        self.total = 0

    def sorted(self) -> list[float]:
        if self.sorted_cache is None:
            self.sorted_cache = sorted(self.durations)
        return self.sorted_cache

    def sorted_baseline(self) -> list[float]:
        if self.baseline_cache is None:
            self.baseline_cache = sorted(self.baseline)
        return self.baseline_cache


class AdaptiveTimeoutManager:
    """Learns a timeout per tool from that tool's own latency distribution.

    Args:
        initial_timeout: seconds, used until a tool has ``min_samples`` samples.
        alert_threshold: alert when a duration exceeds this many times the p95 of the tool's
            baseline (the samples before it that raised no alert; see the module docstring).
        multiplier: safety factor of the timeout rule.
        min_timeout, max_timeout: clamp of every learned timeout, in seconds.
        window: samples kept per tool (a sliding window, so old behaviour is forgotten).
        min_samples: samples needed before adapting the timeout.
        alert_min_samples: baseline samples needed before alerting (the warm-up).
        slow_log_size: alerts kept in the slow-query log (oldest dropped first).
        on_alert: optional ``callback(alert: dict)``, called outside the lock.
        rule: ``"censoring_aware"`` (default) or ``"article"`` (see the module docstring).

    Thread-safe: the executors record from several worker threads at once.
    """

    def __init__(self, initial_timeout: float = 30.0, alert_threshold: float = 3.0,
                 multiplier: float = 1.5, min_timeout: float = 5.0, max_timeout: float = 120.0,
                 window: int = 100, *, min_samples: int = 10, alert_min_samples: int = 3,
                 slow_log_size: int = 1000,
                 on_alert: Callable[[dict], None] | None = None,
                 rule: str = "censoring_aware") -> None:
        # every knob checked up front: 0, negatives, inf, NaN, None and bools are refused
        initial_timeout = positive_number("initial_timeout", initial_timeout)
        alert_threshold = positive_number("alert_threshold", alert_threshold)
        multiplier = positive_number("multiplier", multiplier)
        min_timeout = positive_number("min_timeout", min_timeout)
        max_timeout = positive_number("max_timeout", max_timeout)
        if min_timeout > max_timeout:
            raise ConfigError("invalid_config", f"need min_timeout <= max_timeout (seconds), "
                              f"got {min_timeout} and {max_timeout}")
        if rule not in ("censoring_aware", "article"):
            raise ConfigError("invalid_config", "rule must be 'censoring_aware' or 'article'")
        self.rule = rule
        self.initial_timeout = initial_timeout
        self.alert_threshold = alert_threshold
        self.multiplier = multiplier
        self.min_timeout = min_timeout
        self.max_timeout = max_timeout
        self.window = positive_int("window", window)
        self.min_samples = positive_int("min_samples", min_samples)
        self.alert_min_samples = positive_int("alert_min_samples", alert_min_samples)
        slow_log_size = positive_int("slow_log_size", slow_log_size)
        self.on_alert = on_alert
        self._tools: dict[str, _Window] = {}
        self._slow_log: deque[dict] = deque(maxlen=slow_log_size)
        self._lock = threading.Lock()

    # -- recording -------------------------------------------------------------------------
    def record_execution(self, tool_name: str, duration_ms: float, success: bool = True,
                         timed_out: bool = False) -> dict | None:
        """Record one call of ``tool_name`` that took ``duration_ms`` milliseconds.

        For a call cut off by its timeout pass ``timed_out=True`` and the time it was given
        (the executors pass the timeout in ms): it is kept as a lower bound, never dropped.
        Returns the alert raised by this sample, if any.
        """
        try:
            duration_ms = float(duration_ms)
        except (TypeError, ValueError):
            duration_ms = math.nan
        if not 0.0 <= duration_ms < math.inf:  # also rejects NaN and None
            raise ConfigError("invalid_argument", f"duration_ms must be a finite number >= 0, "
                              f"got {duration_ms!r}")
        with self._lock:
            win = self._tools.get(tool_name)
            if win is None:
                win = self._tools[tool_name] = _Window(self.window)
            alert = None
            # 1. compare against the baseline BEFORE this sample (never diluted by it)
            if len(win.baseline) >= self.alert_min_samples:
                data = win.sorted_baseline()
                p95 = sorted_percentile(data, 95)
                if duration_ms > self.alert_threshold * p95:
                    win.slow += 1
                    alert = {"timestamp": time.time(), "tool": tool_name,
                             "duration_ms": duration_ms, "p95_ms": p95,
                             "p99_ms": sorted_percentile(data, 99),
                             "ratio": duration_ms / p95 if p95 > 0 else math.inf,
                             "success": success, "timed_out": timed_out,
                             "count": len(data)}
                    self._slow_log.append(alert)
            # 2. then add it to the window (a timed-out call as a censored sample), and to the
            #    baseline only if it is not slow: a slow regime is never absorbed
            if alert is None:
                win.baseline.append(duration_ms)
                win.baseline_cache = None
            win.durations.append(duration_ms)
            win.timed_out.append(bool(timed_out))
            win.failed.append(not success)
            win.sorted_cache = None
            win.total += 1
        if alert is not None and self.on_alert is not None:
            self.on_alert(dict(alert))
        return alert

    # -- reading ---------------------------------------------------------------------------
    def get_timeout(self, tool_name: str, multiplier: float | None = None) -> float:
        """The timeout for the next call of ``tool_name``, in seconds (finite, > 0)."""
        if multiplier is not None:
            multiplier = positive_number("multiplier", multiplier)
        with self._lock:
            return self._timeout_locked(self._tools.get(tool_name), multiplier)

    def _timeout_locked(self, win: _Window | None, multiplier: float | None) -> float:
        if win is None or len(win.durations) < self.min_samples:
            return self.initial_timeout
        data = win.sorted()
        censored = sum(win.timed_out) / len(data)
        if self.rule == "censoring_aware" and 0.01 < censored <= 0.05:
            data = sorted(d for d, t in zip(win.durations, win.timed_out) if not t)
        raw = adaptive_timeout_s(sorted_percentile(data, 95), sorted_percentile(data, 99),
                                 self.multiplier if multiplier is None else multiplier)
        return min(self.max_timeout, max(self.min_timeout, raw))

    def get_stats(self, tool_name: str) -> TimingStats | None:
        """Snapshot of one tool's window (ms), or ``None`` for a tool never recorded."""
        with self._lock:
            win = self._tools.get(tool_name)
            if win is None or not win.durations:
                return None
            data = win.sorted()
            n = len(data)
            mean = sum(data) / n
            var = sum((x - mean) ** 2 for x in data) / (n - 1) if n > 1 else 0.0
            return TimingStats(
                name=tool_name, count=n, mean=mean, stddev=math.sqrt(var),
                p50=sorted_percentile(data, 50), p95=sorted_percentile(data, 95),
                p99=sorted_percentile(data, 99), min=data[0], max=data[-1],
                timeout_s=self._timeout_locked(win, None), timed_out=sum(win.timed_out),
                failures=sum(win.failed), slow=win.slow, total_calls=win.total)

    def get_all_stats(self) -> dict[str, TimingStats]:
        """``{tool_name: TimingStats}`` for every recorded tool, sorted by name."""
        with self._lock:
            names = sorted(self._tools)
        return {n: s for n in names if (s := self.get_stats(n)) is not None}

    def get_history(self, tool_name: str) -> list[float]:
        """The durations (ms) in the tool's window, oldest first (for plots)."""
        with self._lock:
            win = self._tools.get(tool_name)
            return list(win.durations) if win else []

    def get_slow_queries(self, limit: int = 50) -> list[dict]:
        """The most recent ``limit`` alerts, oldest first."""
        with self._lock:
            items = list(self._slow_log)
        return [dict(a) for a in items[-limit:]] if limit > 0 else []

    def reset(self, tool_name: str | None = None) -> None:
        """Forget one tool's samples (or every tool's and the slow log)."""
        with self._lock:
            if tool_name is None:
                self._tools.clear()
                self._slow_log.clear()
            else:
                self._tools.pop(tool_name, None)

    def generate_report(self) -> str:
        """A plain-text table of every tool: calls, percentiles (ms), timeout (s), alerts.

        ``p99 <=`` is the upper end of the p99's exact 95 % interval (``agentlab.quantiles``):
        ``+inf`` until a window holds 368 calls, so a 100-call window never bounds the p99
        its timeout rests on.
        """
        stats = self.get_all_stats()
        head = (f"{'tool':<16}{'n':>5}{'mean':>9}{'p50':>9}{'p95':>9}{'p99':>9}{'p99 <=':>9}"
                f"{'timeout':>10}{'t/o':>5}{'slow':>6}")
        lines = ["Tool timing report (durations in ms, timeout in s)", head, "-" * len(head)]
        for s in stats.values():
            with self._lock:  # a timed-out sample is a lower bound: censored
                win = self._tools[s.name]
                window, cut = list(win.durations), list(win.timed_out)
            high = percentile_interval(window, 99, censored=cut)[2]
            bound = "+inf" if high == math.inf else f"{high:.1f}"
            lines.append(f"{s.name[:15]:<16}{s.count:>5}{s.mean:>9.1f}{s.p50:>9.1f}"
                         f"{s.p95:>9.1f}{s.p99:>9.1f}{bound:>9}{s.timeout_s:>10.3f}"
                         f"{s.timed_out:>5}{s.slow:>6}")
        if not stats:
            lines.append("(no executions recorded)")
        lines.append(f"slow-query log: {len(self._slow_log)} alert(s), "
                     f"threshold {self.alert_threshold}x p95")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"AdaptiveTimeoutManager(tools={len(self._tools)}, multiplier={self.multiplier}, "
                f"clamp=[{self.min_timeout}, {self.max_timeout}] s, window={self.window})")

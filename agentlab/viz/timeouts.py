"""Plots for chapter 09 (``notebooks/09_adaptive_timeouts.ipynb``): latency tails and timeouts."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from ..errors import ConfigError
from ..quantiles import percentile_interval
from .states import PERCENTILE_COLORS, STATE_COLORS

__all__ = ["plot_latency_percentiles", "plot_timeout_tradeoff", "plot_timeout_trace"]

_P_COLORS = PERCENTILE_COLORS  # not state colours
_TIMEOUT = STATE_COLORS["timed_out"]


def plot_latency_percentiles(samples: Mapping[str, Sequence[float]] | Any,
                             timeouts_s: Mapping[str, float] | None = None, *,
                             bins: int | None = None, log_x: bool = True,
                             figsize: tuple[float, float] | None = None):
    """One histogram per tool (durations in ms) with its p50/p95/p99, their exact 95 %
    intervals, and its timeout.

    Every panel has the same bins and the same duration axis, so tools can be compared at a
    glance; counts are whole numbers. Percentiles are ``agentlab.timeouts.percentile`` (the
    numbers ``get_stats`` reports); each interval (``agentlab.quantiles``) is a shaded band,
    hatched and running to the right edge when the calls cannot bound it above (a p99 needs
    368 calls, a 100-call window never has them), and the legend prints that end as ``+inf``.

    Args:
        samples: ``{tool: [duration_ms, ...]}`` or an ``AdaptiveTimeoutManager`` (its windows,
            and then its learned timeouts unless ``timeouts_s`` is given).
        timeouts_s: ``{tool: seconds}`` drawn as an orange dashed line (converted to ms).
        log_x: logarithmic duration axis (long tails stay readable).
        bins: number of bins over the shared axis (default: 12 per decade on a log axis, 30
            on a linear one).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy
    from matplotlib.ticker import MaxNLocator  # lazy: heavy

    if hasattr(samples, "get_history"):
        manager = samples
        names = list(manager.get_all_stats())
        samples = {n: manager.get_history(n) for n in names}
        if timeouts_s is None:
            timeouts_s = {n: manager.get_timeout(n) for n in names}
    names = list(samples)
    data = {n: np.asarray(samples[n], dtype=float) for n in names}
    data = {n: d[np.isfinite(d)] for n, d in data.items()}
    if not names or not all(len(d) for d in data.values()):
        raise ConfigError("invalid_argument", "every tool needs at least one finite duration")
    timeouts_ms = {n: (timeouts_s or {}).get(n) for n in names}
    timeouts_ms = {n: t * 1000 for n, t in timeouts_ms.items() if t}
    lo = max(min(float(d.min()) for d in data.values()), 1e-3)
    hi = max([float(d.max()) for d in data.values()] + list(timeouts_ms.values()))
    if bins is None:
        bins = max(12, int(12 * math.log10(hi * 1.1 / (lo * 0.9)))) if log_x else 30
    edges = (np.geomspace(lo * 0.9, hi * 1.1, bins + 1) if log_x
             else np.linspace(0, hi * 1.05, bins + 1))
    fig, axes = plt.subplots(len(names), 1, squeeze=False, sharex=True,
                             figsize=figsize or (7.5, 1.9 * len(names) + 0.6))
    for ax, name in zip(axes[:, 0], names):
        d = data[name]
        ax.hist(d, bins=edges, color="#b0bec5", edgecolor="white")
        for label, q in (("p50", 50), ("p95", 95), ("p99", 99)):
            v, low, high = percentile_interval(d.tolist(), q)
            open_ = math.isinf(high)
            ax.axvspan(max(low, edges[0]), edges[-1] if open_ else high, alpha=0.12,
                       color=_P_COLORS[label], hatch="//" if open_ else None, lw=0)
            end = "+inf" if open_ else f"{high:.0f}"
            start = "-inf" if math.isinf(low) else f"{low:.0f}"
            ax.axvline(v, color=_P_COLORS[label], lw=1.5,
                       label=f"{label} {v:.0f} ms [{start}, {end}]")
        if name in timeouts_ms:
            ax.axvline(timeouts_ms[name], color=_TIMEOUT, ls="--", lw=2,
                       label=f"timeout {timeouts_ms[name] / 1000:.2f} s")
        if log_x:
            ax.set_xscale("log")
        ax.set_title(f"{name} ({len(d)} calls)", fontsize=10, loc="left")
        ax.set_ylabel("calls")
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("duration (ms" + (", log scale)" if log_x else ")"))
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_timeout_tradeoff(multipliers: Sequence[float], false_kill_rate: Sequence[float],
                          wasted_s: Sequence[float], *, current: float | None = None,
                          title: str = "multiplier trade-off",
                          figsize: tuple[float, float] = (6.5, 3.2)):
    """False-kill rate (left axis, %) and time wasted on killed calls (right axis, s).

    Both axes start at 0, so the two curves' heights can be read as amounts.
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    ax.plot(multipliers, [100 * r for r in false_kill_rate], "o-", color="#c62828",
            label="false kills (%)")
    ax.set_xlabel("multiplier")
    ax.set_ylabel("false kills (% of calls that would finish)", color="#c62828", fontsize=8)
    ax2 = ax.twinx()
    ax2.plot(multipliers, wasted_s, "s-", color="#1565c0", label="wasted waiting (s)")
    ax2.set_ylabel("waiting on killed calls (s)", color="#1565c0", fontsize=8)
    ax.set_ylim(0, max([100 * r for r in false_kill_rate], default=1.0) * 1.1 or 1.0)
    ax2.set_ylim(0, max(wasted_s, default=1.0) * 1.1 or 1.0)
    if current is not None:
        ax.axvline(current, color="grey", ls=":", lw=1.5)
    lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize=8, loc="upper center")
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_timeout_trace(runs: Mapping[str, Any], durations_ms: Sequence[float], *,
                       figsize: tuple[float, float] | None = None):
    """Call-by-call: true durations (dots, x when killed) and the timeout in force (line).

    Args:
        runs: ``{label: ReplayResult}`` from ``agentlab.sim.tool_latency.replay``, one panel each.
        durations_ms: the trace that was replayed (``inf`` = hung call, drawn at the top).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, axes = plt.subplots(len(runs), 1, squeeze=False, sharex=True,
                             figsize=figsize or (8.5, 2.1 * len(runs) + 0.5))
    finite = [d for d in durations_ms if math.isfinite(d)]
    top = max(finite + [1000 * t for r in runs.values() for t in r.timeouts_s], default=1.0)
    ceiling = top * 1.8                                  # hung calls are drawn up here
    for ax, (label, run) in zip(axes[:, 0], runs.items()):
        xs = range(len(run.killed))
        ys = [min(d, ceiling) for d in durations_ms[:len(run.killed)]]
        groups = {"finished": [], "killed (would finish)": [], "hung (killed)": []}
        for x, y, k in zip(xs, ys, run.killed):
            key = "finished" if not k else ("hung (killed)" if y >= ceiling
                                            else "killed (would finish)")
            groups[key].append((x, y))
        style = {"finished": dict(s=6, color="#90a4ae"),
                 "killed (would finish)": dict(s=22, marker="x", color=_TIMEOUT),
                 "hung (killed)": dict(s=22, marker="^", color="#6a1b9a")}
        for key, pts in groups.items():
            if pts:
                tag = key if key == "finished" else f"{key}: {len(pts)}"
                ax.scatter(*zip(*pts), label=tag, **style[key])
        ax.step(xs, [t * 1000 for t in run.timeouts_s], where="post", color="#37474f",
                lw=1.5, label="timeout")
        ax.set_yscale("log")
        ax.set_ylabel("duration (ms, log)")
        ax.set_title(label, fontsize=10, loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("call number")
    fig.tight_layout()
    plt.close(fig)
    return fig

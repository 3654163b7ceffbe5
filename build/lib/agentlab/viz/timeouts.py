"""Plots for chapter 09 (``notebooks/09_adaptive_timeouts.ipynb``): latency tails and timeouts."""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

__all__ = ["plot_latency_percentiles", "plot_timeout_tradeoff", "plot_timeout_trace"]

_P_COLORS = {"p50": "#1565c0", "p95": "#ef6c00", "p99": "#6a1b9a"}
_TIMEOUT = "#c62828"


def plot_latency_percentiles(samples: Mapping[str, Sequence[float]] | Any,
                             timeouts_s: Mapping[str, float] | None = None, *,
                             bins: int = 30, log_x: bool = True,
                             figsize: tuple[float, float] | None = None):
    """One histogram per tool (durations in ms) with its p50/p95/p99 and its timeout.

    Args:
        samples: ``{tool: [duration_ms, ...]}`` or an ``AdaptiveTimeoutManager`` (its windows,
            and then its learned timeouts unless ``timeouts_s`` is given).
        timeouts_s: ``{tool: seconds}`` drawn as a red dashed line (converted to ms).
        log_x: logarithmic duration axis (long tails stay readable).
    """
    import matplotlib.pyplot as plt
    import numpy as np

    if hasattr(samples, "get_history"):
        manager = samples
        names = list(manager.get_all_stats())
        samples = {n: manager.get_history(n) for n in names}
        if timeouts_s is None:
            timeouts_s = {n: manager.get_timeout(n) for n in names}
    names = list(samples)
    fig, axes = plt.subplots(len(names), 1, squeeze=False,
                             figsize=figsize or (7.5, 1.9 * len(names) + 0.6))
    for ax, name in zip(axes[:, 0], names):
        data = np.asarray(samples[name], dtype=float)
        data = data[np.isfinite(data)]
        lo, hi = max(data.min(), 1e-3), data.max()
        timeout_ms = (timeouts_s or {}).get(name)
        top = max(hi, timeout_ms * 1000) if timeout_ms else hi
        edges = (np.geomspace(lo * 0.9, top * 1.1, bins) if log_x
                 else np.linspace(0, top * 1.05, bins))
        ax.hist(data, bins=edges, color="#b0bec5", edgecolor="white")
        for label, q in (("p50", 50), ("p95", 95), ("p99", 99)):
            v = float(np.percentile(data, q))
            ax.axvline(v, color=_P_COLORS[label], lw=1.5, label=f"{label} {v:.0f} ms")
        if timeout_ms:
            ax.axvline(timeout_ms * 1000, color=_TIMEOUT, ls="--", lw=2,
                       label=f"timeout {timeout_ms:.2f} s")
        if log_x:
            ax.set_xscale("log")
        ax.set_title(f"{name} ({len(data)} calls)", fontsize=10, loc="left")
        ax.set_ylabel("calls")
        ax.legend(fontsize=7, loc="upper right", framealpha=0.9)
    axes[-1, 0].set_xlabel("duration (ms" + (", log scale)" if log_x else ")"))
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_timeout_tradeoff(multipliers: Sequence[float], false_kill_rate: Sequence[float],
                          wasted_s: Sequence[float], *, current: float | None = None,
                          title: str = "multiplier trade-off",
                          figsize: tuple[float, float] = (6.5, 3.2)):
    """False-kill rate (left axis, %) and time wasted on killed calls (right axis, s)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    ax.plot(multipliers, [100 * r for r in false_kill_rate], "o-", color="#c62828",
            label="false kills (%)")
    ax.set_xlabel("multiplier")
    ax.set_ylabel("false kills (% of calls that would finish)", color="#c62828", fontsize=8)
    ax2 = ax.twinx()
    ax2.plot(multipliers, wasted_s, "s-", color="#1565c0", label="wasted waiting (s)")
    ax2.set_ylabel("waiting on killed calls (s)", color="#1565c0", fontsize=8)
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
    import matplotlib.pyplot as plt

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
        ax.step(xs, [t * 1000 for t in run.timeouts_s], where="post", color="#1565c0",
                lw=1.5, label="timeout")
        ax.set_yscale("log")
        ax.set_ylabel("ms")
        ax.set_title(label, fontsize=10, loc="left")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("call number")
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Plots for chapter 14 (``notebooks/14_experiments.ipynb``): sweeps with their uncertainty.

Every function takes ``agentlab.experiments.Results`` (or a table it made) and returns a
matplotlib ``Figure`` with a title, axis labels and units. Intervals are drawn as error bars
or bands; a percentile that rests on too few samples is drawn hatched and faded, and an end
the data cannot bound (``+inf``) as an arrow running off the axis, never clipped to the sample.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

from .labels import spread_xticks

__all__ = ["plot_percentile_bars", "plot_latency_ecdf", "plot_paired_comparison",
           "plot_sweep_summary", "plot_coverage"]

_COLORS = ("#1565c0", "#ef6c00", "#2e7d32", "#6a1b9a", "#c62828", "#00838f", "#5d4037")
_UNITS = {"duration_ms": "ms", "true_ms": "ms", "wasted_ms": "ms", "wasted_s": "s",
          "wall_s": "s", "makespan_ms": "ms", "sim_makespan_ms": "ms", "critical_path_ms": "ms",
          "total_tokens": "tokens", "prompt_tokens": "tokens", "completion_tokens": "tokens",
          "cost_usd": "USD", "success": "share of runs", "false_kills": "calls per run",
          "tool_timeouts": "calls per run", "turns": "turns", "llm_retries": "requests",
          "compressions": "per run", "timeout_s": "s", "sim_duration_ms": "ms",
          "sim_wasted_ms": "ms", "sim_wasted_s": "s", "sim_false_kills": "calls per run",
          "sim_timeouts": "calls per run"}


def _unit(metric: str) -> str:
    return _UNITS.get(metric, "value")


def plot_percentile_bars(table: Any, *, metric: str = "duration_ms",
                         title: str | None = None, log_y: bool = True,
                         figsize: tuple[float, float] | None = None):
    """Bars of each percentile per tool and configuration, with the exact interval (an
    unbounded upper end: a dashed arrow off the top of the axis).

    Args:
        table: ``Results.percentiles(...)`` output (columns ``config``, ``tool``, ``q``,
            ``value``, ``low``, ``high``, ``few_samples``), or a ``Results`` (its default table).
        metric: what the table measured (for the axis label).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    if hasattr(table, "percentiles"):
        table = table.percentiles(metric)
    qs = list(dict.fromkeys(table["q"]))
    configs = list(dict.fromkeys(table["config"]))
    tools = list(dict.fromkeys(table["tool"]))
    fig, axes = plt.subplots(1, len(qs), squeeze=False,
                             figsize=figsize or (3.6 * len(qs) + 0.6, 3.6))
    width = 0.8 / max(1, len(configs))
    finite = table[["value", "low", "high"]].to_numpy(float)
    finite = finite[np.isfinite(finite) & (finite > 0 if log_y else True)]
    top = float(finite.max()) * (3.0 if log_y else 1.15) if finite.size else 1.0
    for ax, q in zip(axes[0], qs):
        for i, config in enumerate(configs):
            rows = table[(table["q"] == q) & (table["config"] == config)].set_index("tool")
            rows = rows.reindex(tools)
            x = np.arange(len(tools)) + (i - (len(configs) - 1) / 2) * width
            v = rows["value"].to_numpy(float)
            low, high = rows["low"].to_numpy(float), rows["high"].to_numpy(float)
            open_top = np.isinf(high) & (high > 0)
            low = np.where(np.isinf(low), 0.0 if not log_y else v, low)  # -inf: from the bar
            err = np.vstack([v - low, np.where(open_top, 0.0, high - v)])
            few = rows["few_samples"].fillna(False).to_numpy(bool)
            color = _COLORS[i % len(_COLORS)]
            ax.bar(x[~few], v[~few], width, color=color, label=config)
            ax.bar(x[few], v[few], width, color=color, alpha=0.35, hatch="//", edgecolor=color)
            ax.errorbar(x, v, yerr=np.nan_to_num(np.clip(err, 0, None)), fmt="none",
                        ecolor="black", capsize=3, lw=1)
            for xi, vi in zip(x[open_top], v[open_top]):
                ax.annotate("", xy=(xi, top), xytext=(xi, vi), annotation_clip=False,
                            arrowprops={"arrowstyle": "->", "ls": "--", "color": "black"})
        ax.set_xticks(range(len(tools)), tools, rotation=20, fontsize=8)
        ax.set_xlabel("tool", fontsize=8)
        ax.set_title(f"p{q:g}", fontsize=10)
        ax.set_ylabel(f"{metric} ({_unit(metric)}{', log scale' if log_y else ''})", fontsize=8)
        if log_y:
            ax.set_yscale("log")
        ax.set_ylim(top=top)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(configs), fontsize=8, frameon=False)
    fig.suptitle(title or f"{metric} percentiles with exact 95% intervals (hatched: too few "
                 "samples; dashed arrow: no upper bound)", fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    plt.close(fig)
    return fig


def plot_latency_ecdf(results: Any, tool: str, *, by: str = "config", log_x: bool = True,
                      title: str | None = None, figsize: tuple[float, float] = (7.0, 3.6)):
    """ECDF of one tool's call durations per configuration, with the timeouts enforced.

    Each configuration's timeout is drawn as a dashed line at its median (a fixed timeout is
    one value; an adaptive one varies from call to call: the band spans its 5th-95th
    percentile). Calls killed at their timeout sit on the timeout line.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    calls = results.tool_calls[results.tool_calls["tool"] == tool]
    fig, ax = plt.subplots(figsize=figsize)
    for i, (label, group) in enumerate(calls.groupby(by, sort=False)):
        color = _COLORS[i % len(_COLORS)]
        d = np.sort(group["duration_ms"].to_numpy(float))
        d = d[np.isfinite(d)]
        if not len(d):
            continue
        ax.step(d, np.arange(1, len(d) + 1) / len(d), where="post", color=color,
                label=f"{label} (n={len(d)})")
        t = group["timeout_s"].to_numpy(float) * 1000
        t = t[np.isfinite(t)]
        if len(t):
            lo, mid, hi = np.percentile(t, [5, 50, 95])
            ax.axvline(mid, color=color, ls="--", lw=1.3)
            if hi > lo * 1.01:
                ax.axvspan(lo, hi, color=color, alpha=0.08)
            ax.text(mid, 0.02 + 0.08 * i, f" timeout {mid / 1000:.2f} s", color=color, fontsize=7)
    if log_x:
        ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("call duration (ms, simulated clock" + (", log scale)" if log_x else ")"))
    ax.set_ylabel("share of calls at most this long")
    ax.set_title(title or f"{tool}: durations and the timeouts enforced", fontsize=10)
    ax.legend(fontsize=7, loc="center right")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_paired_comparison(results: Any, metric: str, a: str, b: str, *,
                           on: Sequence[str] = ("task", "seed"), title: str | None = None,
                           figsize: tuple[float, float] = (8.5, 3.6)):
    """Two configurations on the same seeds: per-pair values, and the paired difference.

    Left: each pair (same task and seed) as a line from ``a`` to ``b``. Right: the per-pair
    differences ``b - a`` with their mean and its 95 % t-interval (an unbounded end of a
    median's exact interval runs off the axis as an arrow).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    diff = results.compare(metric, a, b, on=on, warn=False)  # the table's caller warns
    wide = results.ok().pivot_table(index=list(on), columns="config", values=metric,
                                    aggfunc="first")[[a, b]].astype(float).dropna()
    unit = _unit(metric)
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, width_ratios=(1.1, 1))
    for va, vb in wide.to_numpy():
        left.plot([0, 1], [va, vb], color="#90a4ae", lw=0.8, marker="o", ms=3)
    left.plot([0, 1], [diff.a_value, diff.b_value], color="black", lw=2.2, marker="s",
              label=f"{diff.stat}")
    left.set_xticks([0, 1], [a, b], fontsize=8)
    left.set_xlim(-0.3, 1.3)
    left.set_ylabel(f"{metric} ({unit})")
    left.set_title(f"{len(wide)} pairs (same {' and '.join(on)})", fontsize=9)
    left.legend(fontsize=7)
    d = (wide[b] - wide[a]).to_numpy()
    jitter = np.random.default_rng(0).uniform(-0.08, 0.08, len(d))
    right.scatter(d, jitter, color="#90a4ae", s=14, label="per pair")
    if not (math.isnan(diff.low) or math.isnan(diff.high)):
        lo, hi = right.get_xlim()
        ends = [max(diff.low, lo), min(diff.high, hi)]
        right.errorbar([diff.estimate], [0], xerr=[[diff.estimate - ends[0]],
                       [ends[1] - diff.estimate]], fmt="s", color="#c62828", capsize=5,
                       lw=2, label=f"{diff.stat} {diff.estimate:+.3g} [{diff.low:+.3g}, "
                                   f"{diff.high:+.3g}]")
        for end, edge in ((diff.low, lo), (diff.high, hi)):
            if math.isinf(end):
                right.annotate("", xy=(edge, 0), xytext=(diff.estimate, 0),
                               arrowprops={"arrowstyle": "->", "color": "#c62828"})
    right.axvline(0, color="black", lw=0.8, ls=":")
    right.set_yticks([])
    right.set_ylim(-0.5, 0.5)
    right.set_xlabel(f"{b} minus {a} ({unit})")
    right.set_title(f"paired difference, 95% {'t-' if diff.stat == 'mean' else 'exact '}"
                    "interval", fontsize=9)
    right.legend(fontsize=7, loc="upper right")
    fig.suptitle(title or f"{metric}: {b} vs {a}", fontsize=10)
    fig.tight_layout()
    spread_xticks(fig)  # long configuration names under a narrow panel
    plt.close(fig)
    return fig


def plot_sweep_summary(summary: Any, x: str, metrics: Sequence[str], *,
                       xlabel: str | None = None, title: str | None = None,
                       figsize: tuple[float, float] | None = None):
    """Run metrics (mean and 95 % interval) against one swept setting, one panel per metric.

    Args:
        summary: ``Results.summary(metrics, by=(x,))`` (columns ``x``, ``<m>``, ``<m>_low``,
            ``<m>_high``).
        x: the swept setting (numeric, e.g. ``compression_threshold``).
        xlabel: the x axis label with its unit (default: the setting's name), e.g.
            ``"compression threshold (share of the token budget)"``.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    data = summary.sort_values(x)
    fig, axes = plt.subplots(1, len(metrics), squeeze=False,
                             figsize=figsize or (3.4 * len(metrics) + 0.4, 3.4))
    xs = data[x].to_numpy(float)
    for i, (ax, m) in enumerate(zip(axes[0], metrics)):
        color = _COLORS[i % len(_COLORS)]
        v = data[m].to_numpy(float)
        low, high = data[f"{m}_low"].astype(float), data[f"{m}_high"].astype(float)
        both = np.isfinite(low.to_numpy()) & np.isfinite(high.to_numpy())
        ax.plot(xs, v, "o-", color=color)
        # every interval with two ends is a whisker (seen even with no neighbour) and a band
        # between neighbours that have one; the legend entry belongs to the whiskers
        ax.fill_between(xs, low, high, where=both, color=color, alpha=0.15, lw=0)
        if both.any():
            err = np.clip([v[both] - low[both], high[both] - v[both]], 0, None)
            ax.errorbar(xs[both], v[both], yerr=err, fmt="none", ecolor=color, capsize=3,
                        lw=1, label="95% interval")
        _open_ends(ax, data[x], low, high, color)
        if len(xs) <= 12:
            ax.set_xticks(xs)  # the values swept, and only those
        ax.tick_params(labelsize=8)
        ax.set_ylabel(f"mean {m} ({_unit(m)})", fontsize=8)
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            order = sorted(range(len(labels)), key=lambda k: labels[k] != "95% interval")
            ax.legend([handles[k] for k in order], [labels[k] for k in order], fontsize=7, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2,
                      frameon=False, borderaxespad=0.2)  # above the panel: covers no data
    # one x label for the panels side by side (each its own overprinted its neighbour's)
    if len(metrics) > 1:
        fig.supxlabel(xlabel or x, fontsize=9)
    else:
        axes[0, 0].set_xlabel(xlabel or x, fontsize=9)
    fig.suptitle(title or f"{', '.join(metrics)} against {x}", fontsize=10)
    fig.tight_layout()
    spread_xticks(fig)
    fig.tight_layout()
    plt.close(fig)
    return fig


def _open_ends(ax: Any, xs: Any, low: Any, high: Any, color: str) -> None:
    """Draw an interval end the data cannot bound (``±inf``) as a hatched band running off the
    axes with an arrow, instead of leaving it out (which would look like no uncertainty)."""
    import numpy as np  # lazy: heavy

    top, bottom = ~np.isfinite(high.to_numpy()), ~np.isfinite(low.to_numpy())
    if not (top.any() or bottom.any()):
        return
    y0, y1 = ax.get_ylim()
    span = float(np.ptp(np.asarray(xs, dtype=float))) or 1.0
    half = 0.02 * span  # the band's half-width: 2 % of the x range
    label = "no bound (open end)"
    for mask, edge, other, sign in ((top, y1, low, 1), (bottom, y0, high, -1)):
        for xv, o in zip(np.asarray(xs)[mask], np.asarray(other, dtype=float)[mask]):
            start = o if np.isfinite(o) else (y0 if sign > 0 else y1)
            ax.fill_between([xv - half, xv + half], start, edge, color=color, alpha=0.15,
                            hatch="//", edgecolor=color, linewidth=0, label=label)
            label = None  # one legend entry, on a band that is drawn
            ax.annotate("", xy=(xv, edge), xytext=(xv, edge - sign * 0.08 * (y1 - y0)),
                        arrowprops={"arrowstyle": "->", "color": color, "linestyle": "--"})
    ax.set_ylim(y0, y1)


def plot_coverage(rows: Sequence[dict], *, q: float = 99, confidence: float = 0.95,
                  title: str | None = None, figsize: tuple[float, float] = (7.0, 3.4)):
    """Coverage of the q-th percentile's interval against the sample size: the exact interval,
    the percentile bootstrap, and the bootstrap's cap ``1 - (q/100)**n`` (it never returns more
    than the sample maximum, which is below the true percentile with that chance).

    Args:
        rows: ``{"n", "exact", "bootstrap"}`` per sample size (shares in 0..1), e.g. from
            ``agentlab.experiments.coverage.quantile_coverage``.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=figsize)
    grid = np.geomspace(min(ns), max(ns), 200)
    ax.plot(grid, 1 - (q / 100) ** grid, color="#9e9e9e", ls="--",
            label=f"bootstrap cap 1 - {q / 100:g}^n")
    ax.axhline(confidence, color="black", lw=0.8, ls=":", label=f"nominal {confidence:.0%}")
    ax.plot(ns, [r["exact"] for r in rows], "o-", color=_COLORS[0], label="exact interval (kit)")
    ax.plot(ns, [r["bootstrap"] for r in rows], "s-", color=_COLORS[1],
            label="percentile bootstrap")
    ax.set_xscale("log")
    ax.minorticks_off()
    ax.set_xticks(ns, [str(n) for n in ns])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("sample size n (calls, log scale)")
    ax.set_ylabel(f"share of intervals holding the true p{q:g}", fontsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or f"how often a {confidence:.0%} interval of a p{q:g} contains the truth",
                 fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig

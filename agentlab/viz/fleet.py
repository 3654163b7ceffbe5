"""Plots for chapter 13 (``notebooks/13_fleet.ipynb``): throughput over time, tool latency tails.

Both take plain data from the fleet's ledger (``agentlab.fleet.ledger.Ledger``): the times at
which runs ended, and every tool call's duration per tool, so they plot any fleet's numbers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .states import PERCENTILE_COLORS, STATE_COLORS

__all__ = ["throughput_series", "tool_percentiles", "plot_throughput", "plot_tool_percentiles"]


def throughput_series(finish_times: list[float], bin_s: float = 1.0) -> tuple[list, list]:
    """``(seconds since the first end, runs ended in that bin)`` for a throughput plot."""
    if not finish_times:
        return [], []
    t = np.asarray(sorted(finish_times)) - min(finish_times)
    edges = np.arange(0.0, t[-1] + bin_s, bin_s)
    counts, _ = np.histogram(t, bins=np.append(edges, edges[-1] + bin_s))
    return edges.tolist(), counts.tolist()


def tool_percentiles(durations_ms: dict[str, list[float]],
                     qs: tuple = (50, 95, 99)) -> dict[str, dict[str, float]]:
    """``{tool: {"calls": n, "p50": ms, "p95": ms, "p99": ms}}`` (numpy's linear percentiles)."""
    out = {}
    for tool, xs in sorted(durations_ms.items()):
        if xs:
            out[tool] = {"calls": len(xs), **{f"p{q}": float(np.percentile(xs, q)) for q in qs}}
    return out


def plot_throughput(finish_times: list[float], bin_s: float = 1.0, *, ax: Any = None,
                    events: dict[str, float] | None = None) -> Any:
    """Runs finished per ``bin_s`` over time; ``events`` marks moments (e.g. a worker killed).

    A finished run is drawn in the ``ok`` colour and an event in the ``failed`` one
    (``agentlab.viz.states``); each event's label sits above the bars, clear of them."""
    import matplotlib.pyplot as plt  # lazy: heavy
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 2.8))
    x, y = throughput_series(finish_times, bin_s)
    ax.bar(x, y, width=bin_s * 0.9, align="edge", color=STATE_COLORS["ok"], label="runs finished")
    top = max(y or [1])
    ax.set_ylim(0, top * 1.25 + 0.5)  # headroom: the event labels go above the tallest bar
    start = min(finish_times) if finish_times else 0.0
    for label, at in (events or {}).items():
        ax.axvline(at - start, color=STATE_COLORS["failed"], linestyle="--")
        ax.annotate(f" {label}", (at - start, top * 1.25 + 0.5), va="top",
                    color=STATE_COLORS["failed"], fontsize=8)
    ax.set_xlabel("seconds since the first run finished")
    ax.set_ylabel(f"runs finished / {bin_s:g} s")
    ax.set_title("fleet throughput")
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure


def plot_tool_percentiles(durations_ms: dict[str, list[float]], *, ax: Any = None) -> Any:
    """p50 / p95 / p99 of each tool's call duration across the fleet, as grouped bars in the
    percentile colours of chapter 09, with the legend beside the axes (never over a bar)."""
    import matplotlib.pyplot as plt  # lazy: heavy
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 2.8))
    table = tool_percentiles(durations_ms)
    names = list(table)
    for i, q in enumerate(("p50", "p95", "p99")):
        ax.bar(np.arange(len(names)) + (i - 1) * 0.27, [table[n][q] for n in names], width=0.27,
               label=q, color=PERCENTILE_COLORS[q])
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("call duration (ms)")
    ax.set_title("tool call duration across the fleet")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, title="percentile")
    if fig is not None:
        fig.tight_layout()
    return fig or ax.figure

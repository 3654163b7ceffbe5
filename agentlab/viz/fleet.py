"""Plots for chapter 13 (``notebooks/13_fleet.ipynb``): throughput over time, tool latency tails.

Both take plain data from the fleet's ledger (``agentlab.fleet.ledger.Ledger``): the times at
which runs ended, and every tool call's duration per tool, so they plot any fleet's numbers.
"""
from __future__ import annotations

from typing import Any

import numpy as np

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
    """Runs finished per ``bin_s`` over time; ``events`` marks moments (e.g. a worker killed)."""
    import matplotlib.pyplot as plt  # lazy: heavy
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 2.8))
    x, y = throughput_series(finish_times, bin_s)
    ax.bar(x, y, width=bin_s * 0.9, align="edge", color="#4c72b0")
    start = min(finish_times) if finish_times else 0.0
    for label, at in (events or {}).items():
        ax.axvline(at - start, color="#c44e52", linestyle="--")
        ax.annotate(label, (at - start, max(y or [1])), color="#c44e52", fontsize=8)
    ax.set_xlabel("seconds")
    ax.set_ylabel(f"runs finished / {bin_s:g} s")
    ax.set_title("fleet throughput")
    return fig or ax.figure


def plot_tool_percentiles(durations_ms: dict[str, list[float]], *, ax: Any = None) -> Any:
    """p50 / p95 / p99 of each tool's call duration across the fleet, as grouped bars."""
    import matplotlib.pyplot as plt  # lazy: heavy
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 2.8))
    table = tool_percentiles(durations_ms)
    names = list(table)
    for i, q in enumerate(("p50", "p95", "p99")):
        ax.bar(np.arange(len(names)) + (i - 1) * 0.27, [table[n][q] for n in names], width=0.27,
               label=q)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("ms")
    ax.set_title("tool call duration across the fleet")
    ax.legend()
    return fig or ax.figure

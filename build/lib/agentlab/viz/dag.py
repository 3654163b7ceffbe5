"""Plots for chapter 10 (``notebooks/10_dag_execution.ipynb``): the DAG and its schedules."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["plot_dag", "plot_schedules"]

_STATUS = {"ok": "#2e7d32", "failed": "#c62828", "skipped": "#bdbdbd"}


def plot_dag(graph: Any, *, durations_ms: Mapping[str, float] | None = None,
             highlight: Sequence[str] = (), figsize: tuple[float, float] | None = None):
    """Draw a ``DependencyGraph`` (or ``{id: [deps]}``) in levels, dependencies on the left.

    Args:
        durations_ms: shown under each node's name.
        highlight: ids drawn in orange with bold edges between them (e.g. the critical path).
    """
    import matplotlib.pyplot as plt

    from ..dag import DependencyGraph

    if not isinstance(graph, DependencyGraph):
        deps, graph = dict(graph), DependencyGraph()
        for k, v in deps.items():
            graph.add_tool(k, v)
    levels = graph.topological_sort()
    pos = {v: (x, -(y - (len(level) - 1) / 2)) for x, level in enumerate(levels)
           for y, v in enumerate(level)}
    tall = max(len(level) for level in levels) if levels else 1
    fig, ax = plt.subplots(figsize=figsize or (1.9 * len(levels) + 1.2, 0.75 * tall + 1.2))
    hot = set(highlight)
    on_path = {(a, b) for a, b in zip(highlight, list(highlight)[1:])}
    for v, deps in graph.edges.items():
        for d in deps:
            bold = (d, v) in on_path
            ax.annotate("", xy=pos[v], xytext=pos[d],
                        arrowprops=dict(arrowstyle="-|>", color="#ef6c00" if bold else "#78909c",
                                        lw=2.2 if bold else 1.0, shrinkA=18, shrinkB=18))
    for v, (x, y) in pos.items():
        text = v if not durations_ms else f"{v}\n{durations_ms[v]:.0f} ms"
        ax.text(x, y, text, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.35", fc="#ffe0b2" if v in hot else "#e3f2fd",
                          ec="#ef6c00" if v in hot else "#1565c0"))
    ax.set_xticks(range(len(levels)), [f"level {i}" for i in range(len(levels))], fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(-0.6, len(levels) - 0.4)
    ax.set_ylim(-tall / 2 - 0.1, tall / 2 + 0.1)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_title("dependency graph (arrow: dependency -> dependent)", fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_schedules(schedules: Mapping[str, Any], *, critical_path_ms: float | None = None,
                   order: Sequence[str] | None = None,
                   figsize: tuple[float, float] | None = None):
    """Gantt charts, one panel per ``Schedule`` (one row per call), on a shared time axis.

    Args:
        schedules: ``{label: Schedule}`` (``DependencyAwareExecutor.last_schedule`` or
            ``simulate_schedule``).
        critical_path_ms: drawn as a dashed line: no schedule can end before it.
        order: row order (call ids); default: the first schedule's order of start.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    first = next(iter(schedules.values()))
    rows = list(order or [c.call_id for c in sorted(first.calls, key=lambda c: c.start_ms)])
    end = max(s.makespan_ms for s in schedules.values()) or 1.0
    fig, axes = plt.subplots(len(schedules), 1, squeeze=False, sharex=True,
                             figsize=figsize or (7.5, (0.28 * len(rows) + 0.9) * len(schedules)))
    for ax, (label, sched) in zip(axes[:, 0], schedules.items()):
        for c in sched.calls:
            y = rows.index(c.call_id)
            ax.barh(y, max(c.end_ms - c.start_ms, end * 0.004), left=c.start_ms, height=0.6,
                    color=_STATUS.get(c.status, "#90a4ae"))
            if c.status == "skipped":   # zero-length: say so where it happened
                ax.text(c.start_ms, y, "skipped ", ha="right", va="center", fontsize=7,
                        color="#616161")
        ax.axvline(sched.makespan_ms, color="black", lw=1)
        if critical_path_ms is not None:
            ax.axvline(critical_path_ms, color="#ef6c00", ls="--", lw=1.5)
        ax.set_yticks(range(len(rows)), rows, fontsize=7 if len(rows) > 12 else 8)
        ax.set_ylim(len(rows) - 0.4, -0.6)
        ax.set_xlim(0, end * 1.05)
        ax.set_title(f"{label}: makespan {sched.makespan_ms:.0f} ms", fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("ms since the batch started")
    handles = [Patch(color=_STATUS["ok"], label="ran, ok"),
               Patch(color=_STATUS["failed"], label="failed"),
               Patch(color=_STATUS["skipped"], label="skipped (dependency failed)")]
    if critical_path_ms is not None:
        handles.append(plt.Line2D([], [], color="#ef6c00", ls="--", label="critical path"))
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))  # room for the legend
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles), frameon=False)
    plt.close(fig)
    return fig

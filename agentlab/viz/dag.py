"""Plots for chapter 10 (``notebooks/10_dag_execution.ipynb``): the DAG and its schedules."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..dag import DependencyGraph
from .states import call_state, state_handles, state_style

__all__ = ["plot_dag", "plot_schedules"]

_PATH = "#6a1b9a"   # the critical path: purple, never a call state's colour
_PATH_FILL = "#e1bee7"


def plot_dag(graph: Any, *, durations_ms: Mapping[str, float] | None = None,
             highlight: Sequence[str] = (), figsize: tuple[float, float] | None = None):
    """Draw a ``DependencyGraph`` (or ``{id: [deps]}``) in levels, dependencies on the left.

    Args:
        durations_ms: shown under each node's name.
        highlight: ids drawn in purple with bold edges between them (e.g. the critical path).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

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
                        arrowprops=dict(arrowstyle="-|>", color=_PATH if bold else "#78909c",
                                        lw=2.2 if bold else 1.0, shrinkA=18, shrinkB=18))
    for v, (x, y) in pos.items():
        text = v if not durations_ms else f"{v}\n{durations_ms[v]:.0f} ms"
        ax.text(x, y, text, ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.35", fc=_PATH_FILL if v in hot else "#e3f2fd",
                          ec=_PATH if hot and v in hot else "#1565c0"))
    ax.set_xticks(range(len(levels)), [f"level {i}" for i in range(len(levels))], fontsize=8)
    ax.set_yticks([])
    ax.set_xlim(-0.6, len(levels) - 0.4)
    ax.set_ylim(-tall / 2 - 0.1, tall / 2 + 0.1)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("level (calls in a level can run at the same time)")
    ax.set_title("dependency graph (arrow: dependency -> dependent"
                 + (", purple: critical path)" if hot else ")"), fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_schedules(schedules: Mapping[str, Any], *, critical_path_ms: float | None = None,
                   order: Sequence[str] | None = None, results: Sequence[Any] = (),
                   figsize: tuple[float, float] | None = None):
    """Gantt charts, one panel per ``Schedule`` (one row per call), on a shared time axis.

    Args:
        schedules: ``{label: Schedule}`` (``DependencyAwareExecutor.last_schedule`` or
            ``simulate_schedule``).
        critical_path_ms: drawn as a dashed line: no schedule can end before it.
        order: row order (call ids); default: the first schedule's order of start.
        results: the ``ToolResult`` list of the run, if at hand: a call that failed by timing
            out is then drawn as *timed out* (orange), as in chapter 03, not as *failed*.

    Colours follow ``agentlab.viz.states``: ok, failed, timed out, not run (skipped because a
    dependency failed).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    first = next(iter(schedules.values()))
    rows = list(order or [c.call_id for c in sorted(first.calls, key=lambda c: c.start_ms)])
    end = max(s.makespan_ms for s in schedules.values()) or 1.0
    fig, axes = plt.subplots(len(schedules), 1, squeeze=False, sharex=True,
                             figsize=figsize or (7.5, (0.28 * len(rows) + 0.9) * len(schedules)))
    by_id = {r.tool_call_id: r for r in results}
    seen: set[str] = {"ok"}
    for ax, (label, sched) in zip(axes[:, 0], schedules.items()):
        for c in sched.calls:
            y = rows.index(c.call_id)
            state = call_state(c)
            if state == "failed" and c.call_id in by_id:
                state = call_state(by_id[c.call_id])
            seen.add(state)
            ax.barh(y, max(c.end_ms - c.start_ms, end * 0.004), left=c.start_ms, height=0.6,
                    **state_style(state))
            if state == "not_run":   # zero-length: say so where it happened
                ax.text(c.start_ms, y, "not run ", ha="right", va="center", fontsize=7,
                        color="#616161")
        ax.axvline(sched.makespan_ms, color="black", lw=1)
        if critical_path_ms is not None:
            ax.axvline(critical_path_ms, color=_PATH, ls="--", lw=1.5)
        ax.set_yticks(range(len(rows)), rows, fontsize=7 if len(rows) > 12 else 8)
        ax.set_ylim(len(rows) - 0.4, -0.6)
        ax.set_xlim(0, end * 1.05)
        ax.set_title(f"{label}: makespan {sched.makespan_ms:.0f} ms", fontsize=10, loc="left")
    axes[-1, 0].set_xlabel("time since the batch started (ms)")
    handles = state_handles(seen, labels={"not_run": "not run (a dependency failed)"})
    if critical_path_ms is not None:
        handles.append(plt.Line2D([], [], color=_PATH, ls="--", label="critical path"))
    fig.tight_layout(rect=(0, 0.35 / fig.get_figheight(), 1, 1))  # room for the legend
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles), frameon=False)
    plt.close(fig)
    return fig

"""Plots for chapter 03 (``notebooks/03_tool_executor.ipynb``): tool-call Gantt charts and the
hung-tool pitfall (batch wall time against the timeout)."""
from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["plot_tool_gantt", "plot_hung_batch"]

_COLORS = {"ok": "#2e7d32", "tool_timeout": "#ef6c00", "failed": "#c62828"}


def plot_tool_gantt(runs: Mapping[str, Sequence], *, timeout_s: float | None = None,
                    title: str | None = None, figsize: tuple[float, float] = (7.5, 3.6)):
    """One Gantt panel per run: each tool call as a bar from its start to its end.

    Args:
        runs: ``{"serial": results, "parallel": results}``, each a list of ``ToolResult``
            (their ``started_at`` and ``duration_ms`` place the bars; calls that never ran
            are left out).
        timeout_s: if given, a dotted line at this many seconds after the batch start.
        title: figure title.

    Returns the matplotlib ``Figure``. Times are in ms from the first start of each run; green
    = success, orange = abandoned at its timeout, red = other failure. The dashed line marks
    when the batch was done (the end of its last bar).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    panels = [(label, [r for r in res if r.started_at]) for label, res in runs.items()]
    n_rows = sum(max(1, len(res)) for _, res in panels)
    fig, axes = plt.subplots(len(panels), 1, sharex=True, squeeze=False,
                             figsize=(figsize[0], max(figsize[1], 0.32 * n_rows + 1.4)),
                             gridspec_kw={"height_ratios": [max(1, len(r)) for _, r in panels]})
    for ax, (label, results) in zip(axes[:, 0], panels):
        t0 = min((r.started_at for r in results), default=0.0)
        end = 0.0
        for i, r in enumerate(results):
            start = (r.started_at - t0) * 1000
            kind = "ok" if r.success else ("tool_timeout" if r.error_code == "tool_timeout"
                                           else "failed")
            ax.barh(i, r.duration_ms, left=start, color=_COLORS[kind], height=0.6,
                    hatch="//" if kind == "tool_timeout" else None, edgecolor="white")
            ax.text(start + r.duration_ms + 4, i, f"{r.duration_ms:.0f} ms", va="center",
                    fontsize=7)
            end = max(end, start + r.duration_ms)
        ax.axvline(end, color="#455a64", ls="--", lw=1)
        ax.text(end, -0.7, f"done {end:.0f} ms ", fontsize=8, color="#455a64", ha="right",
                va="center")
        if timeout_s is not None:
            ax.axvline(timeout_s * 1000, color=_COLORS["tool_timeout"], ls=":", lw=1)
        ax.set_yticks(range(len(results)), [f"{r.name} #{r.tool_call_id}" for r in results],
                      fontsize=8)
        ax.set_ylim(len(results) - 0.4, -1.1)
        ax.set_ylabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time since the first call started (ms)")
    axes[-1, 0].set_xlim(0, axes[-1, 0].get_xlim()[1] * 1.08)  # room for the last labels
    handles = [Patch(color=_COLORS["ok"], label="success"),
               Patch(facecolor=_COLORS["tool_timeout"], hatch="//", edgecolor="white",
                     label="abandoned (tool_timeout)"),
               Patch(color=_COLORS["failed"], label="failed")]
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(title or "Tool calls over time", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    return fig


def plot_hung_batch(timeouts_s: Sequence[float], walls_s: Mapping[str, Sequence[float]], *,
                    hang_s: float | None = None, title: str | None = None,
                    figsize: tuple[float, float] = (6.0, 3.4)):
    """Batch wall time against the timeout, one line per executor, for a batch with a hung tool.

    Args:
        timeouts_s: the timeouts tried (x axis, seconds).
        walls_s: ``{"naive": [...], "agentlab": [...]}`` measured wall times (seconds).
        hang_s: how long the hung tool sleeps; drawn as a horizontal line.
        title: figure title.

    Returns the matplotlib ``Figure``. The diagonal is "wall time = timeout", what a
    correctly enforced timeout gives.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=figsize)
    xs = list(timeouts_s)
    ax.plot([0, max(xs) * 1.05], [0, max(xs) * 1.05], color="#bdbdbd", lw=5, alpha=0.6,
            zorder=0, label="wall = timeout")
    if hang_s is not None:
        ax.axhline(hang_s, color="#c62828", ls=":", lw=1, label=f"hung tool sleeps {hang_s:g} s")
    markers = iter("osD^v")
    for label, ys in walls_s.items():
        ax.plot(xs, list(ys), marker=next(markers, "o"), label=label)
    ax.set_xlabel("timeout (s)")
    ax.set_ylabel("batch wall time (s)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "A batch with one hung tool", fontsize=10)
    fig.tight_layout()
    return fig

"""Plots for chapter 03 (``notebooks/03_tool_executor.ipynb``): tool-call Gantt charts and the
hung-tool pitfall (batch wall time against the timeout).

- ``plot_tool_gantt``: one panel per run of ``ToolResult`` objects (serial vs parallel);
- ``plot_call_gantt``: the same chart from plain rows, for calls whose times were measured
  elsewhere (the chapter 03 widget draws the naive executor and abandoned threads with it);
- ``plot_hung_batch``: batch wall time against the timeout, one line per executor.

Bars use the call-state vocabulary of ``agentlab.viz.states``.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .states import STATE_COLORS, call_state, state_handles, state_style

__all__ = ["plot_tool_gantt", "plot_call_gantt", "gantt_rows", "plot_hung_batch"]


def gantt_rows(results: Sequence[Any]) -> list[dict]:
    """``ToolResult`` objects as Gantt rows: ``{"name", "segments": [(start_ms, end_ms, state)]}``.

    Times are ms since the first call started; calls that never ran (``started_at`` 0) are left
    out.
    """
    ran = [r for r in results if getattr(r, "started_at", 0.0)]
    t0 = min((r.started_at for r in ran), default=0.0)
    rows = []
    for r in ran:
        start = (r.started_at - t0) * 1000
        rows.append({"name": f"{r.name} #{r.tool_call_id}",
                     "segments": [(start, start + r.duration_ms, call_state(r))]})
    return rows


def plot_call_gantt(panels: Mapping[str, Sequence[Mapping]], *, timeout_ms: float | None = None,
                    done_ms: Mapping[str, float] | None = None, title: str | None = None,
                    figsize: tuple[float, float] = (7.5, 3.6)):
    """One Gantt panel per entry of ``panels``, on a shared time axis (ms).

    Args:
        panels: ``{label: rows}``; a row is ``{"name": str, "segments": [(start_ms, end_ms,
            state), ...]}`` with a state of ``agentlab.viz.states``.
        timeout_ms: a dotted orange line at the timeout.
        done_ms: ``{label: ms}`` when the caller got its results back (a dashed line); by
            default the end of the last segment that is not ``abandoned``.
        title: figure title.
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    items = list(panels.items())
    n_rows = sum(max(1, len(rows)) for _, rows in items)
    fig, axes = plt.subplots(len(items), 1, sharex=True, squeeze=False,
                             figsize=(figsize[0], max(figsize[1], 0.32 * n_rows + 1.4)),
                             gridspec_kw={"height_ratios": [max(1, len(r)) for _, r in items]})
    seen: set[str] = set()
    for ax, (label, rows) in zip(axes[:, 0], items):
        end = 0.0
        for i, row in enumerate(rows):
            for start, stop, state in row["segments"]:
                seen.add(state)
                ax.barh(i, max(stop - start, 0.0), left=start, height=0.6, **state_style(state))
                if state != "abandoned":
                    end = max(end, stop)
            first, last = row["segments"][0][0], row["segments"][-1][1]
            waited = sum(b - a for a, b, s in row["segments"] if s != "abandoned")
            ax.text(last, i, f" {waited:.0f} ms" + (" (then ran on)" if last - first > waited + 1
                                                   else ""), va="center", fontsize=7)
        if done_ms and label in done_ms:
            end = done_ms[label]
        ax.axvline(end, color="#455a64", ls="--", lw=1)
        ax.text(end, -0.7, f"results back at {end:.0f} ms ", fontsize=8, color="#455a64",
                ha="right", va="center")
        if timeout_ms is not None:
            ax.axvline(timeout_ms, color=STATE_COLORS["timed_out"], ls=":", lw=1.2)
        ax.set_yticks(range(len(rows)), [r["name"] for r in rows], fontsize=8)
        ax.set_ylim(len(rows) - 0.4, -1.1)
        ax.set_ylabel(label)
        ax.grid(axis="x", alpha=0.3)
    axes[-1, 0].set_xlabel("time since the first call started (ms)")
    axes[-1, 0].set_xlim(0, axes[-1, 0].get_xlim()[1] * 1.08)  # room for the last labels
    handles = state_handles(seen | {"ok"})
    if timeout_ms is not None:
        handles.append(plt.Line2D([], [], color=STATE_COLORS["timed_out"], ls=":",
                                  label=f"timeout {timeout_ms:.0f} ms"))
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles),
               frameon=False)
    fig.suptitle(title or "Tool calls over time", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    _fit_labels(fig, axes[:, 0])
    return fig


def _fit_labels(fig, axes) -> None:
    """Widen the shared time axis until every bar's label ends inside its axes (a label past
    the right edge is cut off in a picture the size of the figure, e.g. a widget snapshot)."""
    for _ in range(4):
        fig.canvas.draw()
        # a margin of 4 % of the axes: text widths do not scale exactly with the DPI, and the
        # widget draws at another DPI than this one
        over = max((t.get_window_extent().x1 - ax.get_window_extent().x1
                    + 0.04 * ax.get_window_extent().width for ax in axes for t in ax.texts),
                   default=0.0)
        if over <= 0:
            return
        ax = axes[-1]
        x0, x1 = ax.get_xlim()
        width_px = ax.get_window_extent().width
        ax.set_xlim(x0, x1 + over / width_px * (x1 - x0) * 1.1)


def plot_tool_gantt(runs: Mapping[str, Sequence], *, timeout_s: float | None = None,
                    title: str | None = None, figsize: tuple[float, float] = (7.5, 3.6)):
    """One Gantt panel per run: each tool call as a bar from its start to its end.

    Args:
        runs: ``{"serial": results, "parallel": results}``, each a list of ``ToolResult``
            (their ``started_at`` and ``duration_ms`` place the bars; calls that never ran
            are left out).
        timeout_s: if given, a dotted line at this many seconds after the batch start.
        title: figure title.

    Returns the matplotlib ``Figure``. Times are in ms from the first start of each run;
    green = ok, orange hatched = timed out (the executor stopped waiting), red = failed. The
    dashed line marks when the batch was done (the end of its last bar).
    """
    return plot_call_gantt({label: gantt_rows(res) for label, res in runs.items()},
                           timeout_ms=None if timeout_s is None else timeout_s * 1000,
                           title=title, figsize=figsize)


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
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    xs = list(timeouts_s)
    ax.plot([0, max(xs) * 1.05], [0, max(xs) * 1.05], color="#bdbdbd", lw=5, alpha=0.6,
            zorder=0, label="wall = timeout")
    if hang_s is not None:
        ax.axhline(hang_s, color=STATE_COLORS["failed"], ls=":", lw=1,
                   label=f"hung tool sleeps {hang_s:g} s")
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

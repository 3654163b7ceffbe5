"""Plots for chapter 01 (``notebooks/01_llm_client.ipynb``, ``00_quickstart.ipynb``).

- ``plot_retry_timeline``: every request of a call on a time axis, with the backoff waits;
- ``plot_bars``: grouped bars with their values written on them (log axes stay readable), for
  measured costs such as client time per call (01) or time per save (05).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .states import STATE_COLORS, call_state, state_handles

__all__ = ["plot_retry_timeline", "plot_bars"]

_WAIT = "#b0bec5"
_RETRIED_ALPHA = 0.45
#: Series colours of ``plot_bars``: none of them is a call-state colour.
_SERIES = ("#5c6bc0", "#26a69a", "#8d6e63", "#78909c", "#ab47bc")


def _label(a) -> str:
    if a.error_code is None:
        return "ok"
    return str(a.status) if a.status is not None else a.error_code.replace("provider_", "")


def plot_retry_timeline(attempts: Sequence | Mapping[str, Sequence], *, title: str | None = None,
                        figsize: tuple[float, float] = (7.5, 2.6)):
    """Draw attempts on a time axis: each request as a bar, the backoff wait after it in grey.

    Args:
        attempts: ``LLMClient.attempts`` (one call), ``LLMClient.history`` (one row per call),
            or ``{"label": attempts, ...}`` for rows side by side.
        title: figure title.

    Returns the matplotlib ``Figure``. Colours follow ``agentlab.viz.states`` (green ok, red
    failed, orange timed out); a failed attempt that was retried is drawn faded, the one raised
    to the caller solid; the label on each bar is the HTTP status or error kind.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib.patches import Patch  # lazy: heavy

    if isinstance(attempts, Mapping):
        rows = [(str(k), list(v)) for k, v in attempts.items()]
    else:
        by_call: dict[int, list] = {}
        for a in attempts:
            by_call.setdefault(a.call, []).append(a)
        rows = [(f"call {c}", v) for c, v in by_call.items()]
    fig, ax = plt.subplots(figsize=(figsize[0], max(figsize[1], 0.55 * len(rows) + 1.3)))
    end = max((a.started_at_s + a.duration_ms / 1000 + a.delay_s
               for _, row in rows for a in row), default=0.0) or 1.0
    min_w = end * 0.008  # in-process requests take ~1 ms: keep every bar visible
    states: set[str] = {"ok"}
    for y, (_, row) in enumerate(rows):
        last_x, below = -end, False
        for i, a in enumerate(row):
            dur = a.duration_ms / 1000
            state = call_state(a)
            retried = not a.ok and i < len(row) - 1
            states.add(state)
            ax.barh(y, max(dur, min_w), left=a.started_at_s, height=0.5,
                    color=STATE_COLORS[state], alpha=_RETRIED_ALPHA if retried else 1.0)
            if a.delay_s > 0:
                ax.barh(y, a.delay_s, left=a.started_at_s + dur, height=0.22, color=_WAIT)
            # the y axis is inverted (first row on top): y - 0.3 is just above the bar; labels
            # that would collide with the previous one go just below it instead
            x = a.started_at_s + max(dur, min_w) / 2
            below = (x - last_x < end * 0.06) and not below
            last_x = x
            ax.annotate(_label(a), (x, y + 0.3 if below else y - 0.3), ha="center",
                        va="top" if below else "bottom", fontsize=8)
    ax.set_yticks(range(len(rows)), [name for name, _ in rows])
    ax.set_ylim(len(rows) - 0.3, -0.9)
    ax.set_xlim(0, end * 1.05)
    ax.set_xlabel("seconds since the call started")
    ax.set_title(title or "Requests on the wire and backoff waits")
    ax.grid(axis="x", alpha=0.3)
    handles = state_handles(states) + [
        Patch(color=STATE_COLORS["failed"], alpha=_RETRIED_ALPHA, label="faded: retried"),
        Patch(color=_WAIT, label="backoff wait")]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight(), 1, 1))  # ~0.3 in for the legend
    plt.close(fig)  # the caller displays it; avoids a second copy under %matplotlib inline
    return fig


def plot_bars(values: Mapping[str, Mapping[str, float]] | Mapping[str, float], *, xlabel: str,
              ylabel: str, title: str, log: bool = False, fmt: str = "{:.3g}",
              colors: Sequence[str] = (),
              figsize: tuple[float, float] = (6.0, 3.0)):
    """Bars with their values written on top, so a log axis can still be read.

    Args:
        values: ``{group: value}`` (one bar per group) or ``{group: {series: value}}`` (one bar
            per series within each group, side by side, with a legend above the plot).
        xlabel: what the groups are, e.g. ``"store"``.
        ylabel: the value axis label, with its unit, e.g. ``"ms per save"``.
        log: logarithmic value axis (the labels give the numbers).
        fmt: how each value is written, e.g. ``"{:.2f} ms"``.
        colors: one colour per series (or per group when there are no series); by default
            colours that are not call-state colours (``agentlab.viz.states``).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    groups = list(values)
    nested = bool(groups) and isinstance(values[groups[0]], Mapping)
    series = list(dict.fromkeys(k for g in groups for k in values[g])) if nested else [None]
    width = 0.8 / len(series)
    colors = list(colors) or list(_SERIES)
    fig, ax = plt.subplots(figsize=figsize)
    top = 0.0
    for j, name in enumerate(series):
        xs = [i - 0.4 + width * (j + 0.5) for i in range(len(groups))]
        ys = [values[g].get(name, 0.0) if nested else values[g] for g in groups]
        color = colors[j % len(colors)] if nested else [colors[i % len(colors)]
                                                         for i in range(len(groups))]
        bars = ax.bar(xs, ys, width * 0.95, label=name, color=color)
        ax.bar_label(bars, [fmt.format(y) for y in ys], fontsize=7, padding=1)
        top = max([top] + ys)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_xlabel(xlabel)
    if log:
        ax.set_yscale("log")
        ax.set_ylim(top=top * 4)       # room for the value labels
    else:
        ax.set_ylim(0, top * 1.15 or 1.0)
    ax.set_ylabel(ylabel + (" (log scale)" if log else ""))
    ax.set_title(title, fontsize=10, loc="left", pad=20 if nested else 6)
    if nested:
        ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=len(series),
                  frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig

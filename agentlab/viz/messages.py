"""Plots for chapter 04 (``notebooks/04_message_manager.ipynb``): token budgets and compression."""
from __future__ import annotations

from typing import Mapping, Sequence

from ..errors import ConfigError
from .labels import turn_if_crowded
from .states import TOKEN_COLORS

__all__ = ["plot_token_usage", "plot_compression", "plot_append_cost", "plot_survivors",
           "ROLE_COLORS"]

#: One colour per message role, shared by the plots and the budget widget (none of them is a
#: call-state colour of ``agentlab.viz.states``).
ROLE_COLORS = {"system": "#7e57c2", "user": "#42a5f5", "assistant": "#26a69a", "tool": "#a1887f",
               "note": "#9e9e9e"}


def plot_token_usage(tokens: Sequence[int] | Mapping[str, Sequence[int]], *,
                     threshold: int | None = None, max_tokens: int | None = None,
                     compressions: Sequence[int] = (), tokens_before: Sequence[int] | None = None,
                     xlabel: str = "step of the run", title: str | None = None,
                     figsize: tuple[float, float] = (7.5, 3.2)):
    """Prompt tokens per step, with the compression threshold, the budget and compression events.

    Args:
        tokens: one series (a list) or several (``{"label": list}``), one value per step: the
            prompt size after the step (after any compression it caused).
        threshold: tokens at which compression starts (dashed line).
        max_tokens: the context budget (solid line).
        compressions: steps at which a compression happened (marked with dotted lines).
        tokens_before: the prompt size just before each of those compressions (e.g.
            ``[r.tokens_before for r in manager.compressions]``): the line then rises to it and
            drops at the step, so the plot shows the history crossing the threshold.
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    series = dict(tokens) if isinstance(tokens, Mapping) else {"prompt tokens": tokens}
    if tokens_before is not None and len(tokens_before) != len(compressions):
        raise ConfigError("invalid_argument", f"tokens_before has {len(tokens_before)} values for "
                          f"{len(compressions)} compressions; give one per compression step")
    peaks = dict(zip(compressions, tokens_before or ()))
    fig, ax = plt.subplots(figsize=figsize)
    for label, values in series.items():
        xs, ys = [], []
        for i, v in enumerate(values):
            if i in peaks:                     # rise to the size that triggered it, then drop
                xs.append(i)
                ys.append(peaks[i])
            xs.append(i)
            ys.append(v)
        ax.plot(xs, ys, label=label, lw=1.4)
    if peaks:
        ax.plot(list(peaks), list(peaks.values()), "v", ms=4, color="#c62828",
                label="size before compression")
    if max_tokens is not None:
        ax.axhline(max_tokens, color="#c62828", lw=1.2, label=f"budget ({max_tokens:,})")
    if threshold is not None:
        ax.axhline(threshold, color="#c62828", ls="--", lw=1, label=f"threshold ({threshold:,})")
    for i, step in enumerate(compressions):
        ax.axvline(step, color="#757575", ls=":", lw=0.9, label="compression" if i == 0 else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("prompt tokens")
    ax.set_ylim(0, max([max_tokens or 0] + [max(v, default=0) for v in series.values()]
                       + list(peaks.values())) * 1.08 or 1)
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=min(len(handles), 5),
              frameon=False)
    ax.set_title(title or "Prompt size over a run", fontsize=10, loc="left", pad=18)
    fig.tight_layout()
    return fig


def plot_compression(records: Sequence, *, threshold: int | None = None,
                     title: str | None = None, figsize: tuple[float, float] = (7.5, 3.0)):
    """One bar pair per compression: tokens before (light) and after (dark), messages removed on top.

    Args:
        records: ``MessageManager.compressions`` (``CompressionRecord`` objects).
        threshold: the compression threshold in tokens (dashed line): every light bar crosses it.
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    records = list(records)
    fig, ax = plt.subplots(figsize=figsize)
    xs = range(1, len(records) + 1)
    ax.bar(xs, [r.tokens_before for r in records], color=TOKEN_COLORS["input"],
           label="tokens before")
    ax.bar(xs, [r.tokens_after for r in records], color=TOKEN_COLORS["output"], width=0.5,
           label="tokens after")
    if threshold is not None:
        ax.axhline(threshold, color="#c62828", ls="--", lw=1, label=f"threshold ({threshold:,})")
    tags = [ax.annotate(f"-{r.messages_removed}" if r.messages_removed else "trunc.",
                        (x, r.tokens_before), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8)
            for x, r in zip(xs, records)]
    ax.set_xlabel("compression # (label: messages removed)")
    ax.set_ylabel("prompt tokens")
    peak = max([r.tokens_before for r in records], default=1)
    ax.set_ylim(0, peak * 1.12)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, frameon=False)
    ax.set_title(title or "What each compression did", fontsize=10, loc="left", pad=12)
    fig.tight_layout()
    if turn_if_crowded(tags):  # many compressions: side by side the labels overprint
        ax.set_ylim(0, peak * 1.22)
        fig.tight_layout()
    return fig


def plot_append_cost(lengths: Sequence[int], costs_s: Mapping[str, Sequence[float]], *,
                     title: str | None = None, figsize: tuple[float, float] = (6.5, 3.4)):
    """Cost of one append against history length, log-log, with the fitted slope of each line.

    Args:
        lengths: history lengths (messages).
        costs_s: ``{"label": seconds per append at each length}``.

    A grey dashed line of slope 1 (cost proportional to the history) starts at the first point
    of the steepest series: a line parallel to it grows linearly, a flat one not at all.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    import numpy as np  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    slopes = {}
    for label, costs in costs_s.items():
        k = slopes[label] = float(np.polyfit(np.log(lengths), np.log(costs), 1)[0])
        ax.loglog(lengths, [c * 1e3 for c in costs], "o-", label=f"{label}: slope {k:.2f}")
    steep = max(slopes, key=slopes.get)
    c0 = costs_s[steep][0] * 1e3
    ax.loglog(lengths, [c0 * n / lengths[0] for n in lengths], "--", color="#9e9e9e", lw=1,
              label="slope 1 (cost grows with n)")
    ax.set_xlabel("messages already in the history")
    ax.set_ylabel("ms per append")
    ax.set_xticks(list(lengths), [str(n) for n in lengths])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="center left")
    ax.set_title(title or "Cost of one append vs history length (log-log)")
    fig.tight_layout()
    return fig


def plot_survivors(rows: Sequence[Mapping], *, title: str | None = None,
                   figsize: tuple[float, float] = (7.5, 2.4)):
    """Each message of a run as a bar (height = tokens): solid if it survived, faded if removed.

    Args:
        rows: ``agentlab.widgets.survivors(...)`` rows (``index, role, tokens, status``).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib.patches import Patch  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    for r in rows:
        kept = r["status"] != "removed"
        ax.bar(r["index"], r["tokens"], width=1.0, color=ROLE_COLORS.get(r["role"], "#000"),
               alpha=1.0 if kept else 0.18, hatch="//" if r["status"] == "truncated" else None,
               edgecolor="white" if kept else "none", linewidth=0.3)
    ax.set_xlabel("message index in the run (faded = removed by compression)")
    ax.set_ylabel("tokens")
    ax.legend(handles=[Patch(color=c, label=role) for role, c in ROLE_COLORS.items()
                       if role != "note"], fontsize=7, ncol=4, loc="lower right",
              bbox_to_anchor=(1.0, 1.0), frameon=False)
    ax.set_title(title or "Which messages survive", fontsize=10, loc="left", pad=12)
    fig.tight_layout()
    return fig

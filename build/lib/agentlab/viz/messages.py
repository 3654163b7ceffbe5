"""Plots for chapter 04 (``notebooks/04_message_manager.ipynb``): token budgets and compression."""
from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["plot_token_usage", "plot_compression", "plot_append_cost", "plot_survivors",
           "ROLE_COLORS"]

#: One colour per message role, shared by the plots and the budget widget.
ROLE_COLORS = {"system": "#6a1b9a", "user": "#1565c0", "assistant": "#2e7d32", "tool": "#ef6c00",
               "note": "#9e9e9e"}


def plot_token_usage(tokens: Sequence[int] | Mapping[str, Sequence[int]], *,
                     threshold: int | None = None, max_tokens: int | None = None,
                     compressions: Sequence[int] = (), xlabel: str = "step of the run",
                     title: str | None = None, figsize: tuple[float, float] = (7.5, 3.2)):
    """Prompt tokens per step, with the compression threshold, the budget and compression events.

    Args:
        tokens: one series (a list) or several (``{"label": list}``), one value per step.
        threshold: tokens at which compression starts (dashed line).
        max_tokens: the context budget (solid line).
        compressions: steps at which a compression happened (marked with dotted lines).
    """
    import matplotlib.pyplot as plt

    series = dict(tokens) if isinstance(tokens, Mapping) else {"prompt tokens": tokens}
    fig, ax = plt.subplots(figsize=figsize)
    for label, values in series.items():
        ax.plot(range(len(values)), list(values), label=label, lw=1.6)
    if max_tokens is not None:
        ax.axhline(max_tokens, color="#c62828", lw=1.2, label=f"budget ({max_tokens:,})")
    if threshold is not None:
        ax.axhline(threshold, color="#c62828", ls="--", lw=1, label=f"threshold ({threshold:,})")
    for i, step in enumerate(compressions):
        ax.axvline(step, color="#757575", ls=":", lw=0.9, label="compression" if i == 0 else None)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("prompt tokens")
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(title or "Prompt size over a run")
    fig.tight_layout()
    return fig


def plot_compression(records: Sequence, *, title: str | None = None,
                     figsize: tuple[float, float] = (7.5, 3.0)):
    """One bar pair per compression: tokens before (light) and after (dark), messages removed on top.

    Args:
        records: ``MessageManager.compressions`` (``CompressionRecord`` objects).
    """
    import matplotlib.pyplot as plt

    records = list(records)
    fig, ax = plt.subplots(figsize=figsize)
    xs = range(1, len(records) + 1)
    ax.bar(xs, [r.tokens_before for r in records], color="#ffcc80", label="tokens before")
    ax.bar(xs, [r.tokens_after for r in records], color="#ef6c00", width=0.5, label="tokens after")
    for x, r in zip(xs, records):
        tag = f"-{r.messages_removed}" if r.messages_removed else "trunc."
        ax.annotate(tag, (x, r.tokens_before), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("compression # (label: messages removed)")
    ax.set_ylabel("prompt tokens")
    ax.set_ylim(0, max([r.tokens_before for r in records], default=1) * 1.15)
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or "What each compression did")
    fig.tight_layout()
    return fig


def plot_append_cost(lengths: Sequence[int], costs_s: Mapping[str, Sequence[float]], *,
                     title: str | None = None, figsize: tuple[float, float] = (6.5, 3.4)):
    """Cost of one append against history length, log-log, with the fitted growth exponent.

    Args:
        lengths: history lengths (messages).
        costs_s: ``{"label": seconds per append at each length}``.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=figsize)
    for label, costs in costs_s.items():
        k = float(np.polyfit(np.log(lengths), np.log(costs), 1)[0])
        ax.loglog(lengths, [c * 1e3 for c in costs], "o-", label=f"{label} (cost ~ n^{k:.2f})")
    ax.set_xlabel("messages already in the history")
    ax.set_ylabel("ms per append")
    ax.set_xticks(list(lengths), [str(n) for n in lengths])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "Cost of one append vs history length")
    fig.tight_layout()
    return fig


def plot_survivors(rows: Sequence[Mapping], *, title: str | None = None,
                   figsize: tuple[float, float] = (7.5, 2.4)):
    """Each message of a run as a bar (height = tokens): solid if it survived, faded if removed.

    Args:
        rows: ``agentlab.widgets.survivors(...)`` rows (``index, role, tokens, status``).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=figsize)
    for r in rows:
        kept = r["status"] != "removed"
        ax.bar(r["index"], r["tokens"], width=1.0, color=ROLE_COLORS.get(r["role"], "#000"),
               alpha=1.0 if kept else 0.18, hatch="//" if r["status"] == "truncated" else None,
               edgecolor="white" if kept else "none", linewidth=0.3)
    ax.set_xlabel("message index in the run (faded = removed by compression)")
    ax.set_ylabel("tokens")
    ax.legend(handles=[Patch(color=c, label=role) for role, c in ROLE_COLORS.items()
                       if role != "note"], fontsize=7, ncol=4, loc="upper right")
    ax.set_title(title or "Which messages survive")
    fig.tight_layout()
    return fig

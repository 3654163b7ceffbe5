"""Plots for chapter 16 (``notebooks/16_time_travel.ipynb``): a run's timeline beside a fork's.

``plot_timeline(runs, fork_turn=..., selected=...)``: tokens used so far at each revision, one
line per run (the original, then forks), the revision picked in the widget ringed, and the fork
point as a dashed line. The numbers are ``agentlab.timetravel.history`` rows.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

__all__ = ["plot_timeline"]

_COLORS = ("#1565c0", "#e65100", "#2e7d32", "#6a1b9a")


def plot_timeline(runs: Mapping[str, Sequence[Any]], *, fork_turn: int | None = None,
                  selected: int | None = None, figsize: tuple[float, float] = (7.0, 2.8)):
    """``runs``: ``{label: [Revision, ...]}``; ``selected``: a revision of the first run."""
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    for k, ((label, revs), color) in enumerate(zip(runs.items(), _COLORS)):
        turns, tokens = [r.turn for r in revs], [r.tokens for r in revs]
        ax.plot(turns, tokens, "-o", color=color, label=label, ms=5, lw=1.6)
        for r in revs:
            ax.annotate(str(r.revision), (r.turn, r.tokens), textcoords="offset points",
                        xytext=(-4, 6 if k == 0 else -13), fontsize=7, color=color)
        end = revs[-1]
        ax.annotate(end.state, (end.turn, end.tokens), textcoords="offset points",
                    xytext=(6, -10), fontsize=8, color=color)
    first = next(iter(runs.values()))
    if selected is not None:
        pick = [r for r in first if r.revision == selected]
        if pick:
            ax.plot([pick[0].turn], [pick[0].tokens], "o", ms=13, mfc="none", mec="#c62828", mew=2)
    if fork_turn is not None:
        ax.axvline(fork_turn, color="#37474f", ls="--", lw=1)
        ax.text(fork_turn, ax.get_ylim()[1] * 0.97, " fork point", va="top", fontsize=8)
    ax.set_title("a run's revisions" + (" and its fork" if len(runs) > 1 else ""), loc="left",
                 fontsize=10)
    ax.set_xlabel("turn (numbers: revision)")
    ax.set_ylabel("tokens so far")
    ax.legend(loc="upper left", fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    return fig

"""Plots for chapter 11 (``notebooks/11_checkpoints.ipynb``): what checkpoints cost on disk.

- ``plot_checkpoint_sizes``: size of each checkpoint against the turn it was saved at, one line
  per store or run (rows of ``CheckpointManager.list_checkpoints()``).
"""
from __future__ import annotations

from typing import Any

__all__ = ["plot_checkpoint_sizes"]

_MARKERS = {"start": "s", "interval": "o", "completed": "*", "error": "X", "exhausted": "X",
            "cancelled": "X"}


def plot_checkpoint_sizes(series: Any, *, title: str | None = None,
                          figsize: tuple[float, float] = (7.0, 3.2)):
    """Checkpoint size (KB) per turn.

    Args:
        series: rows of ``list_checkpoints()`` (each with ``turn`` and ``size_bytes``), or a dict
            ``{label: rows}`` to compare stores or runs. The marker shows why a checkpoint was
            saved (square: start, dot: interval, star: completed, cross: failure).
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    if not isinstance(series, dict):
        series = {"checkpoints": series}
    if not any(series.values()):
        raise ValueError("no checkpoints to plot")
    fig, ax = plt.subplots(figsize=figsize)
    for label, rows in series.items():
        rows = [r for r in rows if "turn" in r and "size_bytes" in r]
        line, = ax.plot([r["turn"] for r in rows], [r["size_bytes"] / 1024 for r in rows], "-",
                        lw=1.4, label=label)
        for r in rows:
            ax.plot(r["turn"], r["size_bytes"] / 1024, _MARKERS.get(r.get("saved_due_to"), "o"),
                    color=line.get_color(), ms=8 if r.get("saved_due_to") == "completed" else 5)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Line2D([], [], marker=m, ls="", color="gray", label=why)
                for why, m in (("start", "s"), ("interval", "o"), ("completed", "*"))]
    ax.legend(handles=handles, fontsize=8, loc="upper left", framealpha=0.9)
    ax.set_xlabel("turn the checkpoint was saved at")
    ax.set_ylabel("size (KB)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.set_title(title or "checkpoint size per turn", fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Plots for chapter 05 (``notebooks/05_state_store.ipynb``): what a crash mid-write leaves.

- ``plot_crash_writes``: one row per store; the bytes of the value's file on disk after the
  writer was killed, against the size the new value should have had, coloured by what
  ``load()`` returns now (the old value, the new one, or an error: a torn write).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .states import STATE_COLORS

__all__ = ["plot_crash_writes"]

_OUTCOME = {"new value": "ok", "old value": "ok", "torn": "failed", "missing": "not_run"}


def plot_crash_writes(rows: Sequence[Mapping], *, title: str | None = None,
                      figsize: tuple[float, float] = (7.5, 2.9)):
    """Bytes on disk after a (possibly killed) save, one row per store.

    Args:
        rows: ``agentlab.widgets.crash_write(...)`` results: ``store``, ``file_bytes`` (the
            value's file now), ``new_bytes`` (the whole new value), ``tmp_bytes`` (hidden
            temporary files left over), ``outcome`` (``"new value"``, ``"old value"``,
            ``"torn"`` or ``"missing"``), ``limit_bytes`` (where the writer was killed, or None).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib.patches import Patch  # lazy: heavy

    fig, ax = plt.subplots(figsize=figsize)
    top = max([r["new_bytes"] for r in rows] + [r["file_bytes"] for r in rows] + [1]) / 1024
    drawn = set()  # what is drawn, so that the legend names nothing else
    for y, r in enumerate(rows):
        color = STATE_COLORS[_OUTCOME[r["outcome"]]]
        drawn.add("torn" if r["outcome"] == "torn" else "loads")
        ax.barh(y, r["new_bytes"] / 1024, height=0.6, facecolor="none", edgecolor="#616161",
                ls="--", lw=1)
        ax.barh(y - 0.12, max(r["file_bytes"] / 1024, top * 0.008), height=0.3, color=color)
        sizes = f"value file {r['file_bytes']:,} B"
        if r.get("tmp_bytes"):
            drawn.add("tmp")
            ax.barh(y + 0.18, r["tmp_bytes"] / 1024, height=0.18, color="#9e9e9e")
            sizes += f", temp file {r['tmp_bytes']:,} B"
        verdict = {"torn": "load() fails: the file is cut short (torn write)",
                   "old value": "load() returns the old value",
                   "new value": "load() returns the new value",
                   "missing": "load() finds nothing"}[r["outcome"]]
        # beside the axes, one block per row: never over a bar, the kill line or each other
        ax.annotate(f"{verdict}\n{sizes}", (1.02, y), xycoords=("axes fraction", "data"),
                    va="center", fontsize=8, color=color, annotation_clip=False)
    limits = {r["limit_bytes"] for r in rows if r.get("limit_bytes")}
    for lim in limits:
        ax.axvline(lim / 1024, color=STATE_COLORS["failed"], ls=":", lw=1.2)
    ax.set_yticks(range(len(rows)), [r["store"] for r in rows], fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, top * 1.05)
    ax.set_xlabel("size on disk (KiB)")
    handles = [Patch(facecolor="none", edgecolor="#616161", ls="--", label="new value, whole")]
    handles += [h for key, h in (
        ("loads", Patch(color=STATE_COLORS["ok"], label="value file, loads")),
        ("torn", Patch(color=STATE_COLORS["failed"], label="value file, torn")),
        ("tmp", Patch(color="#9e9e9e", label="hidden temp file left"))) if key in drawn]
    if limits:
        handles.append(plt.Line2D([], [], color=STATE_COLORS["failed"], ls=":",
                                  label="writer killed here"))
    fig.legend(handles=handles, fontsize=8, loc="lower center", ncol=3,
               frameon=False)  # under the plot, where nothing is drawn
    ax.set_title(title or "After the save", fontsize=10, loc="left")
    fig.tight_layout(rect=(0, 0.17, 1, 1))
    plt.close(fig)
    return fig

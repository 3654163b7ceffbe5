"""Widget pictures keep what a figure draws outside its nominal size (issue 24: notebook 03's
snapshot cut its legend, placed below the axes, at the picture's edge)."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.image import imread  # noqa: E402

from agentlab.widgets.panel import figure_png, snapshot_png  # noqa: E402


def _legend_below(below: bool = True) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(4, 2))
    ax.barh(["a", "b"], [1, 2], label="ok")
    ax.barh(["c"], [3], label="timed out")
    if below:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.6), ncol=2)
    else:
        ax.legend(loc="lower right")
    return fig


def _rows(png: bytes) -> int:
    return imread(io.BytesIO(png)).shape[0]


def test_a_legend_below_the_axes_is_inside_the_picture():
    fig = _legend_below()
    nominal_px = int(2 * 80)  # 2 in at the picture's 80 dpi
    assert _rows(figure_png(fig, dpi=80)) > nominal_px + 20  # grown to hold the legend
    plt.close(fig)


def test_the_snapshot_holds_the_figure_with_its_legend():
    fig = _legend_below()
    whole = _rows(snapshot_png("t", [], "", fig, dpi=80))
    plt.close(fig)
    fig = _legend_below(below=False)
    inside = _rows(snapshot_png("t", [], "", fig, dpi=80))
    plt.close(fig)
    assert whole > inside + 20

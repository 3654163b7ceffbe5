"""Labels that never print over each other, and legends that name only what is drawn.

A plot is checked the way a reader sees it: after ``fig.canvas.draw()``, by the boxes the
texts really take on the canvas. ``overlapping_texts(fig)`` lists the pairs of drawn texts
(tick labels in view, axis labels, titles, annotations, legend entries) whose boxes overlap;
``legend_without_artist(fig)`` the legend entries with nothing drawn for them. The tests run
both over every plot of the package. ``spread_xticks(fig)`` and ``turn_if_crowded(texts)`` are
what the plots use to keep their labels apart.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

__all__ = ["drawn_texts", "overlapping_texts", "legend_without_artist", "spread_xticks",
           "turn_if_crowded"]


def _renderer(fig: Any) -> Any:
    """The figure's renderer, after a draw (a closed figure gets an Agg canvas of its own)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: heavy

    if not hasattr(fig.canvas, "get_renderer"):
        FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _ticks_in_view(axis: Any) -> list:
    """The tick labels an axis draws: matplotlib keeps labels for ticks outside the view too."""
    lo, hi = sorted(axis.get_view_interval())
    pad = (hi - lo) * 1e-9
    out = []
    for ticks, locs in ((axis.get_major_ticks(), axis.get_majorticklocs()),
                        (axis.get_minor_ticks(), axis.get_minorticklocs())):
        for tick, loc in zip(ticks, locs):
            if lo - pad <= loc <= hi + pad:
                out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def drawn_texts(fig: Any) -> list:
    """Every text a reader sees in ``fig``: visible, not empty, tick labels only in view."""
    from matplotlib.text import Text  # lazy: heavy

    _renderer(fig)
    ticks, every_tick_label = [], set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            every_tick_label |= {id(label) for tick in axis.get_major_ticks()
                                 + axis.get_minor_ticks() for label in (tick.label1, tick.label2)}
            if ax.get_visible():
                ticks += _ticks_in_view(axis)
    others = [t for t in fig.findobj(Text)
              if id(t) not in every_tick_label and t.get_text().strip() and t.get_visible()
              and (getattr(t, "axes", None) is None or t.axes.get_visible())]
    return [t for t in ticks if t.get_text().strip()] + others


def _overlap_px2(a: Any, b: Any) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(w, 0.0) * max(h, 0.0)


def overlapping_texts(fig: Any, min_px2: float = 2.0) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap by more than ``min_px2`` square pixels."""
    texts = drawn_texts(fig)
    boxes = [t.get_window_extent() for t in texts]
    pairs = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if _overlap_px2(boxes[i], boxes[j]) > min_px2:
                pairs.append((texts[i].get_text(), texts[j].get_text()))
    return pairs


def _drawn(artist: Any, ax: Any) -> bool:
    """True if ``artist`` is visible and covers some of ``ax`` (finite, non-empty box)."""
    if not artist.get_visible():
        return False
    from matplotlib.collections import Collection  # lazy: heavy

    try:
        if isinstance(artist, Collection):  # scatter, fill_between: where its data is drawn
            box = artist.get_datalim(ax.transData).transformed(ax.transData)
        else:
            box = artist.get_window_extent()
    except Exception:  # noqa: BLE001 - an artist that cannot say where it is is not seen
        return False
    if not all(math.isfinite(v) for v in (box.x0, box.x1, box.y0, box.y1)):
        return False
    clip = ax.bbox
    inside = _overlap_px2(box, clip)
    return inside > 0 or (box.width > 0 and box.height == 0 and clip.y0 <= box.y0 <= clip.y1) \
        or (box.height > 0 and box.width == 0 and clip.x0 <= box.x0 <= clip.x1)


def _empty(artist: Any) -> bool:
    """An artist with no data: a legend proxy such as ``ax.plot([], [], label=...)``."""
    if hasattr(artist, "get_xydata"):
        return len(artist.get_xydata()) == 0
    if hasattr(artist, "get_paths") and hasattr(artist, "get_offsets"):
        return not len(artist.get_paths()) and not len(artist.get_offsets())
    return False


def legend_without_artist(fig: Any) -> list[str]:
    """Labels of legend entries (axes legends) for which nothing with that label is drawn.

    An entry counts as drawn when an artist of its axes carrying the same label (a line, a
    patch, a collection, or an errorbar/bar container's parts) is visible inside the axes. An
    entry whose only artists hold no data is a proxy (a key for unlabelled artists drawn in
    the same style) and is not judged here.
    """
    _renderer(fig)
    missing = []
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        labelled: dict[str, list] = {}
        for a in ax.get_children():
            labelled.setdefault(a.get_label(), []).append(a)
        for c in ax.containers:
            labelled.setdefault(c.get_label(), []).extend(
                a for a in c.get_children() if a is not None)
        for text in legend.get_texts():
            label = text.get_text()
            artists = [a for a in labelled.get(label, []) if not _empty(a)]
            if not artists:
                continue  # a proxy (``handles=[Patch(...)]``, ``plot([], [])``): a key only
            if not any(_drawn(a, ax) for a in artists):
                missing.append(label)
    return missing


def spread_xticks(fig: Any) -> None:
    """Turn the x tick labels of any axes whose labels overlap (45 degrees, then upright)."""
    for ax in fig.axes:
        for angle in (45, 90):
            labels = [t for t in _ticks_in_view(ax.xaxis) if t.get_text().strip()]
            _renderer(fig)
            boxes = [t.get_window_extent() for t in labels]
            if not any(_overlap_px2(a, b) > 0 for a, b in zip(boxes, boxes[1:])):
                break
            for t in ax.get_xticklabels():
                t.set_rotation(angle)
                t.set_horizontalalignment("right" if angle < 90 else "center")
                t.set_rotation_mode("anchor" if angle < 90 else "default")


def turn_if_crowded(texts: list) -> bool:
    """Stand ``texts`` (labels in a row, e.g. on top of bars) upright if any two overlap.

    Returns True if they were turned. The caller keeps room above them (``ylim``)."""
    if len(texts) < 2:
        return False
    fig = texts[0].figure
    _renderer(fig)
    boxes = sorted((t.get_window_extent() for t in texts), key=lambda b: b.x0)
    if not any(_overlap_px2(a, b) > 0 or a.x1 > b.x0 for a, b in zip(boxes, boxes[1:])):
        return False
    for t in texts:
        t.set_rotation(90)
    return True

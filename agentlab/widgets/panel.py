"""``Panel``: the box every agentlab widget is built in, so that it shows something real on open.

A notebook opened from a fresh clone is untrusted, and JupyterLab then renders each output as the
richest *safe* type in its display bundle: the widget view is not safe, so without help a widget
shows up as ``VBox(children=(HBox(...``. (Measured in JupyterLab 4.6 with ipywidgets 8.1; see
``/work/shared/NOTEBOOKS.md`` and ``scripts/check_notebooks_browser.py``.)

A ``Panel`` is an ``ipywidgets.VBox`` whose display bundle carries three things side by side:

- ``application/vnd.jupyter.widget-view+json``: the live widget (kernel running, or a trusted
  notebook with saved widget state);
- ``image/png``: a snapshot of what the widget shows -- its control values, its text and its plot,
  drawn when the cell ran -- which untrusted notebooks, GitHub and nbconvert render;
- ``text/plain``: one line saying to run the cell (terminals, plain viewers).

Widgets call ``panel.show(out, text=..., figure=...)`` to update their output; it clears the
``Output`` widget, prints the text, displays the figure and remembers both for the snapshot.

The snapshot is drawn when the cell runs and says so (with the time): later clicks are not in
it. A panel's last child, drawn first, is an empty HTML line that a saved notebook fills in
(``save_hook.py``): a panel rebuilt from the file without a kernel says, in red, to run the cell.
"""
from __future__ import annotations

import base64
import io
import textwrap
import time
from typing import Any, Iterator, Sequence

import ipywidgets as w
from IPython.display import Image, display

from .save_hook import RESTORED_CLASS

__all__ = ["Panel", "control_values", "snapshot_png", "figure_png"]

#: What a reader without a running kernel reads instead of the widget.
RUN_HINT = "run this cell to use the widget"
#: Widget types whose ``value`` is not a setting (buttons, outputs, labels, HTML panes).
_NOT_CONTROLS = (w.Button, w.Output, w.HTML, w.HTMLMath, w.Label, w.Image)
_MAX_TEXT_LINES = 24
_DPI = 80            # the snapshot: readable, and about 20 KB once quantized
_SHOW_DPI = 90       # plots inside the live widget (their PNG is also kept in the widget state)
_COLORS = 64         # plots and text need few colours: a 64-colour palette PNG is 3-4x smaller


def _walk(widget: Any) -> Iterator[Any]:
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_fmt(v) for v in value) + ")"
    text = str(value).replace("\n", " ")
    return text if len(text) <= 40 else text[:39] + "…"


def control_values(widget: Any) -> list[str]:
    """``"description: value"`` for every control in ``widget`` (depth first), for the snapshot.

    Selection widgets show their label; multi-line text boxes are left out (their content is
    usually shown in the widget's text), and so are buttons and output panes.
    """
    rows = []
    for c in _walk(widget):
        if isinstance(c, _NOT_CONTROLS) or isinstance(c, w.Textarea) or not hasattr(c, "value"):
            continue
        name = getattr(c, "description", "") or type(c).__name__
        value = getattr(c, "label", None) if hasattr(c, "options") else None
        rows.append(f"{name}: {_fmt(c.value if value is None else value)}")
    return rows


def _quantized(png: bytes) -> bytes:
    from PIL import Image as PILImage  # lazy: heavy (Pillow comes with matplotlib)

    im = PILImage.open(io.BytesIO(png)).convert("RGB")
    out = io.BytesIO()
    im.quantize(colors=_COLORS, method=PILImage.Quantize.MEDIANCUT).save(out, format="PNG",
                                                                          optimize=True)
    return out.getvalue()


def figure_png(figure: Any, dpi: int = _SHOW_DPI) -> bytes:
    """A matplotlib figure as a small PNG (white background, 64-colour palette), cropped to what
    it draws: a legend placed below the axes is kept whole (it was cut off at the edge)."""
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=dpi, facecolor="white", bbox_inches="tight",
                   pad_inches=0.1)
    return _quantized(buf.getvalue())


def _figures(figure: Any) -> list:
    if figure is None:
        return []
    return list(figure) if isinstance(figure, (list, tuple)) else [figure]


def snapshot_png(title: str, controls: Sequence[str], text: str = "", figure: Any = None, *,
                 width_in: float | None = None, dpi: int = _DPI) -> bytes:
    """Draw a widget's state as one PNG: a title band with its controls, its text, its plots.

    Args:
        title: the widget's name, shown first.
        controls: ``control_values(widget)``.
        text: what the widget printed (at most 24 lines are drawn, then "...").
        figure: the matplotlib ``Figure`` the widget displays (or a list of them, stacked),
            pasted pixel for pixel below the text.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # lazy: heavy
    from matplotlib.figure import Figure  # lazy: heavy

    image = _stacked(_figures(figure), dpi)
    width_px = image.shape[1] if image is not None else int((width_in or 7.5) * dpi)
    chars = max(40, int(width_px / (dpi * 0.085)))          # ~0.085 in per 9 pt mono char
    taken = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    head = textwrap.wrap(f"\u25b6 {title}  -  snapshot taken when the cell ran ({taken}); "
                         f"{RUN_HINT}", chars - 4)  # wrapped: never cut at the picture's edge
    knobs = textwrap.wrap("   ".join(controls), chars) if controls else []
    body = text.rstrip("\n").splitlines()
    if len(body) > _MAX_TEXT_LINES:
        body = body[:_MAX_TEXT_LINES - 1] + [f"... ({len(body) - _MAX_TEXT_LINES + 1} more lines)"]
    body = [ln if len(ln) <= chars else ln[:chars - 1] + "…" for ln in body]
    line_px = 9 * 1.45 * dpi / 72
    band_px = (len(head) + len(knobs)) * line_px + 10
    text_px = len(body) * line_px + (8 if body else 0)
    img_px = image.shape[0] if image is not None else 0
    height_px = int(band_px + text_px + img_px + 4)
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, facecolor="white")
    FigureCanvasAgg(fig)

    def put(y_px: float, s: str, **kw: Any) -> None:
        fig.text(6 / width_px, 1 - y_px / height_px, s, va="top", ha="left", fontsize=9, **kw)

    fig.patches.append(_band(fig, band_px / height_px))
    y = 4.0
    for ln in head:
        put(y, ln, weight="bold", color="#0d47a1")
        y += line_px
    for ln in knobs:
        put(y, ln, color="#263238")
        y += line_px
    y = band_px + 4
    for ln in body:
        put(y, ln, family="monospace", color="#212121")
        y += line_px
    if image is not None:
        fig.figimage(image, xo=0, yo=0, origin="upper")
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=dpi, facecolor="white")
    return _quantized(out.getvalue())


def _stacked(figures: list, dpi: int) -> Any:
    """The figures rendered at ``dpi`` and stacked, left-aligned on white (an RGB array)."""
    import numpy as np  # lazy: heavy
    from matplotlib.image import imread  # lazy: heavy

    images = []
    for fig in figures:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, facecolor="white", bbox_inches="tight",
                    pad_inches=0.1)  # whole legends, as figure_png
        buf.seek(0)
        images.append(imread(buf)[..., :3])
    if not images:
        return None
    stack = np.ones((sum(im.shape[0] for im in images), max(im.shape[1] for im in images), 3),
                    dtype=images[0].dtype)
    y0 = 0
    for im in images:
        stack[y0:y0 + im.shape[0], :im.shape[1]] = im
        y0 += im.shape[0]
    return stack


def _band(fig: Any, height: float) -> Any:
    from matplotlib.patches import Rectangle  # lazy: heavy

    return Rectangle((0, 1 - height), 1, height, transform=fig.transFigure, color="#e3f2fd",
                     zorder=-1)


class Panel(w.VBox):
    """A ``VBox`` that displays as the live widget, a PNG snapshot of it, and a one-line hint.

    Args:
        children: the widget's controls and output panes, top to bottom.
        title: what the widget is, e.g. ``"retry explorer (chapter 01)"``; starts the snapshot.

    ``show()`` is how a widget updates what it displays; ``text`` and ``figure`` hold what it
    showed last (tests read them to check that a control changed the output).
    """

    def __init__(self, children: Sequence[Any] = (), *, title: str, **kwargs: Any) -> None:
        # last child (indices of the others unchanged), drawn first (flex order -1)
        note = w.HTML("", _dom_classes=(RESTORED_CLASS,), layout=w.Layout(order="-1"))
        super().__init__([*children, note], **kwargs)
        self.title = title
        self.text = ""
        self.figure: Any = None
        self.updates = 0

    def show(self, out: w.Output | None = None, text: str = "", figure: Any = None) -> None:
        """Replace what ``out`` shows with ``text`` (printed) and ``figure`` (displayed; a
        ``Figure`` or a list of them).

        Figures are displayed as small PNGs (``figure_png``: the Output widget's content is
        stored in the notebook's widget state too) and closed, so ``%matplotlib inline`` does
        not show them a second time below the widget.
        """
        self.text, self.figure = text, figure
        self.updates += 1
        figures = _figures(figure)
        if out is not None:
            with out:
                out.clear_output(wait=True)
                if text:
                    print(text)
                for fig in figures:
                    display(Image(figure_png(fig)))
        if figures:
            import matplotlib.pyplot as plt  # lazy: heavy
            for fig in figures:
                plt.close(fig)

    def snapshot_png(self) -> bytes:
        """The PNG put in the display bundle: ``snapshot_png`` of this panel's current state."""
        return snapshot_png(self.title, control_values(self), self.text, self.figure)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict:
        data = super()._repr_mimebundle_(**kwargs) or {}
        data["text/plain"] = f"\u25b6 {self.title}: {RUN_HINT} (needs a running Jupyter kernel)"
        try:
            data["image/png"] = base64.b64encode(self.snapshot_png()).decode("ascii")
        except Exception as exc:  # a snapshot must never stop the widget itself from displaying
            data["text/plain"] += f" [no snapshot: {type(exc).__name__}: {exc}]"
        return data

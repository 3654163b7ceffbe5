"""Plots for chapter 01 (``notebooks/01_llm_client.ipynb``, ``00_quickstart.ipynb``)."""
from __future__ import annotations

from typing import Mapping, Sequence

__all__ = ["plot_retry_timeline"]

_RETRYABLE = {"rate_limited", "provider_timeout", "provider_unavailable", "conflict"}
_COLORS = {"ok": "#2e7d32", "retryable": "#ef6c00", "fatal": "#c62828", "wait": "#b0bec5"}


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

    Returns the matplotlib ``Figure``. Green = success, orange = retryable failure,
    red = failure raised to the caller; the label on each bar is the HTTP status or error kind.
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

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
    for y, (_, row) in enumerate(rows):
        last_x, below = -end, False
        for i, a in enumerate(row):
            dur = a.duration_ms / 1000
            kind = "ok" if a.ok else ("retryable" if a.error_code in _RETRYABLE and
                                      i < len(row) - 1 else "fatal")
            ax.barh(y, max(dur, min_w), left=a.started_at_s, height=0.5, color=_COLORS[kind])
            if a.delay_s > 0:
                ax.barh(y, a.delay_s, left=a.started_at_s + dur, height=0.22, color=_COLORS["wait"])
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
    fig.legend(handles=[Patch(color=_COLORS["ok"], label="success"),
                        Patch(color=_COLORS["retryable"], label="failed, retried"),
                        Patch(color=_COLORS["fatal"], label="failed, raised"),
                        Patch(color=_COLORS["wait"], label="backoff wait")],
               loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.3 / fig.get_figheight(), 1, 1))  # ~0.3 in for the legend
    plt.close(fig)  # the caller displays it; avoids a second copy under %matplotlib inline
    return fig

"""Plots for chapter 12 (``notebooks/12_observability.ipynb``): what one agent run did.

- ``plot_trace``: the span waterfall (run > turn > model call / tool call), one bar per span;
- ``plot_turn_cost``: input/output tokens per turn (bars) and cost per turn (line);
- ``plot_runs_cost``: the same over many runs (means, with the cost's min-max range);
- ``plot_tool_latency``: every tool call's latency per tool, with p50, p95 and p99 and their
  exact 95 % intervals; an end too few calls cannot bound is an arrow off the axis
  (``MIN_CALLS``: the calls a bounded interval needs, ``agentlab.quantiles.min_samples``).

Each accepts an ``AgentObserver``, or the text of its ``export_json()``. Tool calls are drawn
in the call-state colours of ``agentlab.viz.states``; runs, turns and model calls in greys and
blues (``KIND_COLORS``).
"""
from __future__ import annotations

import math
import random
from typing import Any, Sequence

from ..observe import AgentObserver, Span
from ..quantiles import min_samples, percentile_interval
from .states import KIND_COLORS, STATE_COLORS, TOKEN_COLORS, call_state, state_handles

__all__ = ["plot_trace", "plot_turn_cost", "plot_runs_cost", "plot_tool_latency", "MIN_CALLS"]

_OTHER = "#ce93d8"
_ERROR = STATE_COLORS["failed"]
#: Calls a percentile needs before its exact 95 % interval is bounded at both ends (6, 72, 368):
#: the one rule of chapters 09, 12 and 14 (``agentlab.quantiles.min_samples``).
MIN_CALLS = {q: min_samples(q) for q in (50, 95, 99)}
_STYLES = ((50, "-", 0.24), (95, "--", 0.30), (99, ":", 0.36))  # q, line style, interval offset


def _observer(source: Any) -> Any:
    if isinstance(source, str):
        return AgentObserver.from_json(source)
    return source


def _spans(source: Any) -> list:
    if isinstance(source, (list, tuple)):
        return [s if isinstance(s, Span) else Span(**s) for s in source]
    return list(_observer(source).spans)


def _tree_order(spans: list) -> list[tuple[Any, int]]:
    """Depth-first order (each parent then its children by start), with each span's depth."""
    ids = {s.span_id for s in spans}
    children: dict[Any, list] = {}
    for s in spans:
        children.setdefault(s.parent_id if s.parent_id in ids else None, []).append(s)
    out: list[tuple[Any, int]] = []

    def walk(parent_id: Any, depth: int) -> None:
        for s in sorted(children.get(parent_id, []), key=lambda s: s.start_offset_ms):
            out.append((s, depth))
            walk(s.span_id, depth + 1)
    walk(None, 0)
    return out


_ROW_FONT_PT = 9  # row labels of the waterfall: readable at the notebook's width


def _row_label(span: Any) -> str:
    """A row's name: a turn with its number ("turn 3"), others by name, cut at 30 characters."""
    name = span.name
    number = span.attributes.get("agentlab.turn", span.attributes.get("turn"))
    if span.kind == "turn" and name == "turn" and number is not None:
        name = f"turn {number}"
    return name if len(name) <= 30 else name[:29] + "…"


def _fit_left_margin(fig: Any, labels: list) -> None:
    """Move the axes' left edge just right of the widest row label (measured once drawn), so
    that no label runs into the bars whatever its length and font size."""
    fig.canvas.draw()
    right_px = max((t.get_window_extent().x1 for t in labels), default=0.0)
    pos = fig.axes[0].get_position()
    left = min((right_px + 0.12 * fig.dpi) / (fig.get_figwidth() * fig.dpi), 0.6)
    fig.axes[0].set_position([left, pos.y0, pos.x1 - left, pos.height])


def plot_trace(source: Any, *, title: str | None = None, max_spans: int = 60,
               figsize: tuple[float, float] | None = None):
    """The span waterfall: x is time since the run span started (ms), one row per span,
    indented by depth; runs, turns and model calls by kind, tool calls by state (ok, failed,
    timed out); failed spans outlined in red, unfinished ones hatched. The title gives the run
    span's own duration (not the observer's lifetime, which starts when it was created).

    Args:
        source: an ``AgentObserver``, its ``export_json()`` text, or a list of spans.
        max_spans: draw at most this many rows (the first ones in tree order).
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib import transforms  # lazy: heavy
    from matplotlib.patches import Patch  # lazy: heavy

    rows = _tree_order(_spans(source))[:max_spans]
    if not rows:
        raise ValueError("no spans to draw: wrap the run in observer.span(...) or record calls")
    run = next((s for s, depth in rows if depth == 0 and s.kind == "run"), None)
    t0 = run.start_offset_ms if run is not None else min(s.start_offset_ms for s, _ in rows)
    end_all = max(s.start_offset_ms + (s.duration_ms or 0.0) for s, _ in rows)
    width_in, height_in = figsize or (8.0, 0.3 * len(rows) + 1.3)
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    fig.subplots_adjust(left=0.28, right=0.98, bottom=0.55 / height_in, top=1 - 0.6 / height_in)
    # row labels sit in the left margin (x in figure inches, indented by depth, y on the row)
    at = transforms.blended_transform_factory(fig.dpi_scale_trans, ax.transData)
    tool_states: set[str] = set()
    labels = []
    for y, (s, depth) in enumerate(rows):
        start = s.start_offset_ms - t0
        width = s.duration_ms if s.duration_ms is not None else end_all - s.start_offset_ms
        failed = s.status == "error"
        if s.kind == "tool":
            state = call_state({"success": not failed,
                                "error_code": s.attributes.get("error.type")})
            tool_states.add(state)
            color = STATE_COLORS[state]
        else:
            color = KIND_COLORS.get(s.kind, _OTHER)
        ax.barh(y, max(width, (end_all - t0) * 0.002), left=start, height=0.7, color=color,
                edgecolor=_ERROR if failed else "none", linewidth=1.6 if failed else 0,
                hatch="//" if s.duration_ms is None else None)
        label = _row_label(s)
        labels.append(ax.text(0.08 + 0.14 * min(depth, 6), y, label, transform=at, ha="left",
                              va="center", fontsize=_ROW_FONT_PT, clip_on=False,
                              color=_ERROR if failed else "black"))
    _fit_left_margin(fig, labels)
    ax.set_yticks([])
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xlim(0, (end_all - t0) * 1.02 or 1.0)
    ax.set_xlabel("time since run start (ms)")
    ax.grid(axis="x", alpha=0.3)
    kinds = [("run", "run"), ("turn", "turn"), ("llm", "model call")]
    handles = [Patch(color=KIND_COLORS[k], label=lab) for k, lab in kinds]
    handles += state_handles(tool_states or {"ok"},
                             labels={"ok": "tool call ok", "failed": "tool failed",
                                     "timed_out": "tool timed out"})
    ax.legend(handles=handles, fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0),
              ncol=len(handles), frameon=False, handlelength=1.2, columnspacing=0.8)
    took = f", run {run.duration_ms:.0f} ms" if run is not None and run.duration_ms else ""
    ax.set_title(title or f"trace: {len(rows)} spans{took}", fontsize=10, loc="left", pad=14)
    plt.close(fig)
    return fig


def _tokens_and_cost(rows: Sequence[dict], title: str, figsize: tuple[float, float],
                     suffix: str = ""):
    """Stacked input/output token bars per turn and, on a right axis from 0, the cost per turn
    (a line; a min-max band when rows have ``min_usd``/``max_usd``; a note when unpriced)."""
    import matplotlib.pyplot as plt  # lazy: heavy

    turns = [r["turn"] for r in rows]
    prompt = [r["prompt_tokens"] for r in rows]
    completion = [r["completion_tokens"] for r in rows]
    fig, ax = plt.subplots(figsize=figsize)
    ax.bar(turns, prompt, color=TOKEN_COLORS["input"], label="input tokens" + suffix)
    bars = ax.bar(turns, completion, bottom=prompt, color=TOKEN_COLORS["output"],
                  label="output tokens" + suffix)
    if all("runs" in r for r in rows):
        ax.bar_label(bars, [f"{r['runs']} runs" for r in rows], fontsize=6, padding=1)
    ax.set_xlabel("turn")
    ax.set_ylabel("tokens")
    ax.set_xticks(turns)
    ax.set_ylim(0, max(p + c for p, c in zip(prompt, completion)) * 1.15 or 1.0)
    handles, labels = ax.get_legend_handles_labels()
    costs = [r["cost_usd"] for r in rows]
    if all(c is not None for c in costs):
        ax2 = ax.twinx()
        top = max(costs)
        if all(r.get("max_usd") is not None for r in rows):
            ax2.fill_between(turns, [r["min_usd"] for r in rows], [r["max_usd"] for r in rows],
                             color=TOKEN_COLORS["cost"], alpha=0.15, label="cost, min to max")
            top = max(r["max_usd"] for r in rows)
        ax2.plot(turns, costs, "o-", color=TOKEN_COLORS["cost"], label="cost (USD)" + suffix)
        ax2.set_ylabel("cost per turn (USD)", color=TOKEN_COLORS["cost"])
        ax2.set_ylim(0, top * 1.25 or 1.0)
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    else:
        ax.text(0.99, 0.97, "cost unknown: no price for the model", transform=ax.transAxes,
                ha="right", va="top", fontsize=8, color=_ERROR)
    ax.legend(handles, labels, fontsize=7, loc="upper left", framealpha=0.9)
    ax.set_title(title, fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_turn_cost(source: Any, *, title: str | None = None,
                   figsize: tuple[float, float] = (7.0, 3.2)):
    """Input and output tokens per turn (stacked bars, left axis) and cost per turn in USD
    (line, right axis; absent when a model has no price)."""
    obs = _observer(source)
    rows = obs.per_turn()
    if not rows:
        raise ValueError("no model calls with a turn number: pass turn= to record_llm_call")
    return _tokens_and_cost(rows, title or f"tokens and cost per turn ({obs.model})", figsize)


def plot_runs_cost(rows: Sequence[dict], *, model: str = "", title: str | None = None,
                   figsize: tuple[float, float] = (7.0, 3.0)):
    """Mean input and output tokens per turn over many runs (bars) and the cost per turn (USD,
    right axis: the mean as a line, min to max as a band); each bar says how many runs reached
    that turn.

    Args:
        rows: ``agentlab.widgets.cost_per_turn(observers)``: ``turn``, ``runs``,
            ``prompt_tokens``, ``completion_tokens``, ``mean_usd``, ``min_usd``, ``max_usd``.
    """
    if not rows:
        raise ValueError("no turns to plot")
    runs = max(r["runs"] for r in rows)
    return _tokens_and_cost([{**r, "cost_usd": r["mean_usd"]} for r in rows],
                            title or f"tokens and cost per turn over {runs} runs"
                            + (f" ({model})" if model else ""), figsize, suffix=" (mean)")


def plot_tool_latency(source: Any, *, title: str | None = None,
                      figsize: tuple[float, float] | None = None, seed: int = 0):
    """One row per tool: each call's latency as a dot (in its state's colour), p50, p95 and p99
    as ticks, and under each its exact 95 % interval as a thin line in the tick's style; an
    upper end the calls cannot bound (fewer than ``MIN_CALLS[q]``) is an arrow running off the
    right edge, never clipped to the slowest call. The row label gives the number of calls and
    which percentiles are unbounded.

    Args:
        source: an ``AgentObserver``, its ``export_json()`` text, or a list of them (many runs
            pooled, e.g. the chapter 12 latency explorer).
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    sources = source if isinstance(source, (list, tuple)) else [source]
    calls: dict[str, list[tuple[float, str]]] = {}
    for obs in map(_observer, sources):
        for t in obs.tool_calls:
            calls.setdefault(t.name, []).append((t.duration_ms, call_state(t)))
    if not calls:
        raise ValueError("no tool calls recorded")
    names: Sequence[str] = sorted(calls)
    rng = random.Random(seed)
    fig, ax = plt.subplots(figsize=figsize or (7.0, 0.6 * len(names) + 1.3))
    seen = set()
    for y, name in enumerate(names):
        pts = calls[name]
        seen |= {st for _, st in pts}
        ys = [y + rng.uniform(-0.18, 0.18) for _ in pts]
        ax.scatter([d for d, _ in pts], ys, s=16 if len(pts) < 200 else 6, alpha=0.7,
                   c=[STATE_COLORS[st] for _, st in pts], linewidths=0)
    right = max(d for pts in calls.values() for d, _ in pts) * 1.08
    for y, name in enumerate(names):
        ms = [d for d, _ in calls[name]]
        for q, style, dy in _STYLES:
            v, low, high = percentile_interval(ms, q)
            ax.plot([v, v], [y - 0.32, y + 0.2], style, color="black", lw=1.4)
            low = 0.0 if low == -math.inf else low
            if high == math.inf:
                ax.annotate("", xy=(right, y + dy), xytext=(low, y + dy),
                            arrowprops={"arrowstyle": "->", "ls": style, "lw": 0.9})
            else:
                ax.plot([low, high], [y + dy, y + dy], style, color="black", lw=0.9)
    for q, style, _ in _STYLES:
        ax.plot([], [], style, color="black", label=f"p{q}")
    ax.plot([], [], "-", color="white", label="thin: 95% interval, arrow: no upper bound")
    handles, _ = ax.get_legend_handles_labels()
    handles += state_handles(seen)

    def row_label(n: str) -> str:
        k = len(calls[n])
        open_ = [f"p{q}" for q in (50, 95, 99) if k < MIN_CALLS[q]]
        return f"{n} ({k} call{'s' if k != 1 else ''})" + (
            f"\n{'/'.join(open_)} unbounded" if open_ else "")
    ax.set_yticks(range(len(names)), [row_label(n) for n in names], fontsize=9)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("latency (ms)")
    ax.set_xlim(0, right)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=handles, fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0),
              ncol=min(len(handles), 4), frameon=False, handlelength=1.5, columnspacing=0.8)
    ax.set_title(title or f"tool latency per call ({sum(map(len, calls.values()))} calls)",
                 fontsize=10, loc="left", pad=34)     # above the legend rows
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Plots for chapter 12 (``notebooks/12_observability.ipynb``): what one agent run did.

- ``plot_trace``: the span waterfall (run > turn > model call / tool call), one bar per span;
- ``plot_turn_cost``: input/output tokens per turn (bars) and cost per turn (line);
- ``plot_tool_latency``: every tool call's latency per tool, with p50 and p95.

Each accepts an ``AgentObserver``, or the text of its ``export_json()``.
"""
from __future__ import annotations

from typing import Any, Sequence

from ..timeouts import percentile

__all__ = ["plot_trace", "plot_turn_cost", "plot_tool_latency"]

_KIND_COLORS = {"run": "#90a4ae", "turn": "#64b5f6", "llm": "#ffb74d", "tool": "#81c784"}
_OTHER = "#ce93d8"
_ERROR = "#c62828"


def _observer(source: Any) -> Any:
    from ..observe import AgentObserver

    if isinstance(source, str):
        return AgentObserver.from_json(source)
    return source


def _spans(source: Any) -> list:
    from ..observe import Span

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


def plot_trace(source: Any, *, title: str | None = None, max_spans: int = 60,
               figsize: tuple[float, float] | None = None):
    """The span waterfall: x is time since the run started (ms), one row per span, indented
    by depth; colour by kind (run, turn, model call, tool call); failed spans outlined in red,
    unfinished ones hatched.

    Args:
        source: an ``AgentObserver``, its ``export_json()`` text, or a list of spans.
        max_spans: draw at most this many rows (the first ones in tree order).
    """
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    rows = _tree_order(_spans(source))[:max_spans]
    if not rows:
        raise ValueError("no spans to draw: wrap the run in observer.span(...) or record calls")
    t0 = min(s.start_offset_ms for s, _ in rows)
    end_all = max(s.start_offset_ms + (s.duration_ms or 0.0) for s, _ in rows)
    width_in, height_in = figsize or (8.0, 0.26 * len(rows) + 1.3)
    fig, ax = plt.subplots(figsize=(width_in, height_in))
    left = 0.28
    fig.subplots_adjust(left=left, right=0.98, bottom=0.55 / height_in, top=1 - 0.6 / height_in)
    axes_w = (0.98 - left) * width_in  # labels sit in the left margin, indented by depth
    x0, indent = -(left * width_in - 0.08) / axes_w, 0.12 / axes_w
    for y, (s, depth) in enumerate(rows):
        start = s.start_offset_ms - t0
        width = s.duration_ms if s.duration_ms is not None else end_all - s.start_offset_ms
        color = _KIND_COLORS.get(s.kind, _OTHER)
        failed = s.status == "error"
        ax.barh(y, max(width, (end_all - t0) * 0.002), left=start, height=0.7, color=color,
                edgecolor=_ERROR if failed else "none", linewidth=1.6 if failed else 0,
                hatch="//" if s.duration_ms is None else None)
        label = s.name if len(s.name) <= 30 else s.name[:29] + "…"
        ax.text(x0 + indent * min(depth, 6), y, label, transform=ax.get_yaxis_transform(),
                ha="left", va="center", fontsize=7, color=_ERROR if failed else "black")
    ax.set_yticks([])
    ax.set_ylim(len(rows) - 0.4, -0.6)
    ax.set_xlim(0, (end_all - t0) * 1.02 or 1.0)
    ax.set_xlabel("time since run start (ms)")
    ax.grid(axis="x", alpha=0.3)
    kinds = [("run", "run"), ("turn", "turn"), ("llm", "model call"), ("tool", "tool call")]
    handles = [Patch(color=_KIND_COLORS[k], label=lab) for k, lab in kinds]
    handles.append(Patch(facecolor="white", edgecolor=_ERROR, label="failed"))
    ax.legend(handles=handles, fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0),
              ncol=len(handles), frameon=False, handlelength=1.2, columnspacing=0.8)
    ax.set_title(title or f"trace: {len(rows)} spans", fontsize=10, loc="left", pad=14)
    plt.close(fig)
    return fig


def plot_turn_cost(source: Any, *, title: str | None = None,
                   figsize: tuple[float, float] = (7.0, 3.2)):
    """Input and output tokens per turn (stacked bars, left axis) and cost per turn in USD
    (line, right axis; absent when a model has no price)."""
    import matplotlib.pyplot as plt

    obs = _observer(source)
    rows = obs.per_turn()
    if not rows:
        raise ValueError("no model calls with a turn number: pass turn= to record_llm_call")
    turns = [r["turn"] for r in rows]
    prompt = [r["prompt_tokens"] for r in rows]
    completion = [r["completion_tokens"] for r in rows]
    fig, ax = plt.subplots(figsize=figsize)
    ax.bar(turns, prompt, color="#64b5f6", label="input tokens")
    ax.bar(turns, completion, bottom=prompt, color="#1565c0", label="output tokens")
    ax.set_xlabel("turn")
    ax.set_ylabel("tokens")
    ax.set_xticks(turns)
    handles, labels = ax.get_legend_handles_labels()
    costs = [r["cost_usd"] for r in rows]
    if all(c is not None for c in costs):
        ax2 = ax.twinx()
        ax2.plot(turns, costs, "o-", color="#ef6c00", label="cost (USD)")
        ax2.set_ylabel("cost per turn (USD)", color="#ef6c00")
        ax2.set_ylim(0, max(costs) * 1.25 or 1.0)
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    else:
        ax.text(0.99, 0.97, "cost unknown: no price for the model", transform=ax.transAxes,
                ha="right", va="top", fontsize=8, color=_ERROR)
    ax.legend(handles, labels, fontsize=8, loc="upper left", framealpha=0.9)
    ax.set_title(title or f"tokens and cost per turn ({obs.model})", fontsize=10, loc="left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_tool_latency(source: Any, *, title: str | None = None,
                      figsize: tuple[float, float] | None = None, seed: int = 0):
    """One row per tool: each call's latency as a dot (failed calls red), p50 and p95 as ticks."""
    import random

    import matplotlib.pyplot as plt


    obs = _observer(source)
    calls: dict[str, list[tuple[float, bool]]] = {}
    for t in obs.tool_calls:
        calls.setdefault(t.name, []).append((t.duration_ms, t.success))
    if not calls:
        raise ValueError("no tool calls recorded")
    names: Sequence[str] = sorted(calls)
    rng = random.Random(seed)
    fig, ax = plt.subplots(figsize=figsize or (7.0, 0.6 * len(names) + 1.3))
    for y, name in enumerate(names):
        pts = calls[name]
        ys = [y + rng.uniform(-0.18, 0.18) for _ in pts]
        ax.scatter([d for d, _ in pts], ys, s=16, alpha=0.75,
                   c=["#2e7d32" if ok else _ERROR for _, ok in pts])
        ms = [d for d, _ in pts]
        for q, style in ((50, "-"), (95, "--")):
            v = percentile(ms, q)
            ax.plot([v, v], [y - 0.32, y + 0.32], style, color="black", lw=1.4)
    ax.plot([], [], "-", color="black", label="p50")
    ax.plot([], [], "--", color="black", label="p95")
    ax.scatter([], [], s=16, c=_ERROR, label="failed call")
    ax.set_yticks(range(len(names)), [f"{n} ({len(calls[n])})" for n in names], fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel("latency (ms)")
    ax.set_xlim(left=0)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=3, frameon=False)
    ax.set_title(title or "tool latency per call", fontsize=10, loc="left", pad=14)
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Plots for chapters 06-08: the turn timeline, tokens per turn, stream timing.

Each function takes data the runtime already records (``AgentResult.turn_log``) and returns a
matplotlib ``Figure``. Taught in ``notebooks/06_runtime_loop``, ``07_streaming`` and
``08_research_agent``.
"""
from __future__ import annotations

from typing import Any, Sequence

from .states import KIND_COLORS, TOKEN_COLORS, call_state, state_handles, state_style, worst_state

__all__ = ["plot_turn_timeline", "plot_turn_tokens", "plot_stream_timing"]


def _turns(result: Any) -> list[dict]:
    return list(getattr(result, "turn_log", result))


def plot_turn_timeline(result: Any, title: str = "Turn timeline"):
    """One row per turn: the model call, then the tools, on the run's clock (ms).

    The tools bar takes the colour of its worst call (``agentlab.viz.states``: red if one failed,
    orange if one timed out) and is labelled with the number of calls, how many failed and how
    long they took; in-process tools take a fraction of a millisecond, so their bar is drawn at
    least 1% of the axis wide (the label gives the real time).

    Args:
        result: an ``AgentResult`` (its ``turn_log`` and ``tool_calls_made``), or a list of
            ``turn_log`` rows.
    """
    import matplotlib.pyplot as plt  # lazy: heavy
    from matplotlib.patches import Patch  # lazy: heavy

    turns = _turns(result)
    calls = list(getattr(result, "tool_calls_made", []))
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(turns) + 1.4))
    span = max((t.get("end_ms", t["start_ms"] + t.get("llm_ms", 0.0)) for t in turns),
               default=1.0) or 1.0
    seen = set()
    for i, t in enumerate(turns):
        start, llm = t["start_ms"], t.get("llm_ms", 0.0)
        end = t.get("end_ms", start + llm)
        ax.barh(i, llm, left=start, color=KIND_COLORS["llm"])
        if not t.get("tool_calls"):
            continue
        mine = [c for c in calls if c.get("turn") == t["turn"]]
        state = worst_state(mine) if mine else "ok"
        seen.add(state)
        tools_ms = t.get("tools_ms", max(0.0, end - start - llm))
        ax.barh(i, max(tools_ms, span * 0.01), left=start + llm, **state_style(state))
        failed = sum(call_state(c) != "ok" for c in mine)
        note = f", {failed} failed" if failed else ""
        ax.text(start + llm + max(tools_ms, span * 0.01), i,
                f" {t['tool_calls']} call(s){note}, {tools_ms:.1f} ms", va="center", fontsize=8)
    ax.set_yticks(range(len(turns)), [f"turn {t['turn']}" for t in turns])
    ax.set_ylim(len(turns) - 0.5, -0.5)
    ax.set_xlim(0, span * 1.25)               # room for the labels right of the last bar
    ax.set_xlabel("time since run start (ms)")
    ax.set_title(title, fontsize=10, loc="left", pad=14)
    handles = [Patch(color=KIND_COLORS["llm"], label="model call")]
    handles += state_handles(seen or {"ok"}, labels={"ok": "tools, all ok",
                                                      "failed": "tools, one failed",
                                                      "timed_out": "tools, one timed out"})
    ax.legend(handles=handles, loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=7,
              ncol=len(handles), frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_turn_tokens(result: Any, title: str = "Tokens per turn"):
    """Stacked bars: prompt and completion tokens of each model call."""
    import matplotlib.pyplot as plt  # lazy: heavy

    turns = _turns(result)
    x = [t["turn"] for t in turns]
    prompt = [t.get("prompt_tokens", 0) for t in turns]
    completion = [t.get("completion_tokens", 0) for t in turns]
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    ax.bar(x, prompt, color=TOKEN_COLORS["input"], label="prompt (input) tokens")
    ax.bar(x, completion, bottom=prompt, color=TOKEN_COLORS["output"],
           label="completion (output) tokens")
    ax.set_xlabel("turn")
    ax.set_ylabel("tokens")
    ax.set_xticks(x)
    ax.set_title(title, fontsize=10, loc="left", pad=18)
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2,
              frameon=False)  # above the axes: never over a bar or its value
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_stream_timing(rows: Sequence[dict], title: str = "Time to first token vs total"):
    """Per turn: time to the first text delta and to the end of the model call (ms).

    ``rows``: dicts with ``turn``, ``first_token_ms`` (None when no text was streamed) and
    ``total_ms``.
    """
    import matplotlib.pyplot as plt  # lazy: heavy

    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    x = [r["turn"] for r in rows]
    total = ax.bar([i - 0.2 for i in x], [r["total_ms"] for r in rows], width=0.4,
                   color=KIND_COLORS["llm"], label="model call complete")
    first = ax.bar([i + 0.2 for i in x], [r["first_token_ms"] or 0 for r in rows], width=0.4,
                   color="#283593", label="first text delta")
    ax.bar_label(total, [f"{r['total_ms']:.0f}" for r in rows], fontsize=7, padding=1)
    ax.bar_label(first, ["no text" if r["first_token_ms"] is None else f"{r['first_token_ms']:.0f}"
                         for r in rows], fontsize=7, padding=1)
    ax.set_xticks(x)
    ax.set_xlabel("turn")
    ax.set_ylabel("time after the request (ms)")
    ax.set_ylim(0, max([r["total_ms"] for r in rows], default=1.0) * 1.18)
    ax.set_title(title, fontsize=10, loc="left", pad=24)  # clear of the legend above
    ax.legend(fontsize=8, loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2,
              frameon=False)  # above the axes: never over a bar or its value
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Plots for chapters 06-08: the turn timeline, tokens per turn, stream timing.

Each function takes data the runtime already records (``AgentResult.turn_log``) and returns a
matplotlib ``Figure``. Taught in ``notebooks/06_runtime_loop``, ``07_streaming`` and
``08_research_agent``.
"""
from __future__ import annotations

from typing import Any, Sequence

__all__ = ["plot_turn_timeline", "plot_turn_tokens", "plot_stream_timing"]


def _turns(result: Any) -> list[dict]:
    return list(getattr(result, "turn_log", result))


def plot_turn_timeline(result: Any, title: str = "Turn timeline"):
    """One row per turn: the model call, then the tools, on the run's clock (ms)."""
    import matplotlib.pyplot as plt

    turns = _turns(result)
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(turns) + 1.4))
    for i, t in enumerate(turns):
        start, llm = t["start_ms"], t.get("llm_ms", 0.0)
        end = t.get("end_ms", start + llm)
        ax.barh(i, llm, left=start, color="tab:blue", label="model call" if i == 0 else None)
        tools = max(0.0, end - start - llm)
        if t.get("tool_calls"):
            ax.barh(i, tools, left=start + llm, color="tab:orange",
                    label="tools" if not any(x.get("tool_calls") for x in turns[:i]) else None)
            ax.text(end, i, f" {t['tool_calls']} call(s)", va="center", fontsize=8)
    ax.set_yticks(range(len(turns)), [f"turn {t['turn']}" for t in turns])
    ax.invert_yaxis()
    ax.set_xlabel("time since run start (ms)")
    ax.set_title(title)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_turn_tokens(result: Any, title: str = "Tokens per turn"):
    """Stacked bars: prompt and completion tokens of each model call."""
    import matplotlib.pyplot as plt

    turns = _turns(result)
    x = [t["turn"] for t in turns]
    prompt = [t.get("prompt_tokens", 0) for t in turns]
    completion = [t.get("completion_tokens", 0) for t in turns]
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    ax.bar(x, prompt, color="tab:blue", label="prompt")
    ax.bar(x, completion, bottom=prompt, color="tab:green", label="completion")
    ax.set_xlabel("turn")
    ax.set_ylabel("tokens")
    ax.set_xticks(x)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def plot_stream_timing(rows: Sequence[dict], title: str = "Time to first token vs total"):
    """Per turn: time to the first text delta and to the end of the model call (ms).

    ``rows``: dicts with ``turn``, ``first_token_ms`` (None when no text was streamed) and
    ``total_ms``.
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    x = [r["turn"] for r in rows]
    ax.bar([i - 0.2 for i in x], [r["total_ms"] for r in rows], width=0.4, color="tab:gray",
           label="model call complete")
    ax.bar([i + 0.2 for i in x], [r["first_token_ms"] or 0 for r in rows], width=0.4,
           color="tab:green", label="first text delta")
    ax.set_xticks(x)
    ax.set_xlabel("turn")
    ax.set_ylabel("ms after the request")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig

"""Widgets for chapter 04: move the budget and the threshold, see which messages survive.

``budget_explorer(history)`` is the widget; ``survivors()`` and ``format_survivors()`` are what
it runs, callable directly so a notebook can print a deterministic result beside it.
"""
from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..messages import MessageManager
from ..tokens import count_message_tokens
from ..viz.messages import plot_survivors
from .panel import Panel

__all__ = ["survivors", "format_survivors", "budget_explorer"]


def survivors(history: list[dict], max_tokens: int, compression_threshold: float = 0.75, *,
              system_prompt: str = "You are a researcher.", keep_recent: int = 6) -> dict[str, Any]:
    """Feed ``history`` to a ``MessageManager`` step by step (a call, then all its results) and
    report what is left.

    Returns ``{"rows", "messages", "manager"}``: one row per message of ``history``
    (``index, role, tokens, status`` with status ``kept``, ``removed`` or ``truncated``), the
    final ``get_messages()``, and the manager itself.
    """
    mm = MessageManager(system_prompt, max_tokens=max_tokens,
                        compression_threshold=compression_threshold, keep_recent=keep_recent)
    step: list[dict] = []
    for m in history:
        if m["role"] != "tool" and step:
            mm.extend(step)
            step = []
        step.append(m)
    mm.extend(step)
    final = mm.get_messages()
    # What survives is a subsequence of the history (the system prompt and the note aside),
    # so one forward pass matches them; a truncated message keeps its role and its beginning.
    rest = [f for f in final if f.get("role") != "system"]
    rows, j = [], 0
    for i, m in enumerate(history):
        status = "removed"
        if j < len(rest):
            status = _match(rest[j], m)
            j += status != "removed"
        rows.append({"index": i, "role": m["role"], "tokens": count_message_tokens(m, mm.model),
                     "status": status})
    return {"rows": rows, "messages": final, "manager": mm}


def _match(kept: dict, original: dict) -> str:
    if kept == original:
        return "kept"
    text, orig = kept.get("content"), original.get("content")
    if (kept.get("role") == original.get("role") and isinstance(text, str) and isinstance(orig, str)
            and "\n[... truncated" in text and orig.startswith(text.split("\n[... truncated")[0])):
        return "truncated"
    return "removed"


def format_survivors(result: dict[str, Any]) -> str:
    """A short text summary of ``survivors()``: counts, the head of the history, compressions."""
    rows, msgs, mm = result["rows"], result["messages"], result["manager"]
    kept = sum(r["status"] != "removed" for r in rows)
    head = ", ".join(m["role"] + ("(task)" if i == 1 and m["role"] == "user" else "")
                     for i, m in enumerate(msgs[:4]))
    return "\n".join([
        f"budget {mm.max_tokens:,} tokens, compress above {mm.threshold_tokens:,}, "
        f"down to {mm.target_tokens:,}",
        f"messages kept: {kept}/{len(rows)} "
        f"(truncated: {sum(r['status'] == 'truncated' for r in rows)}); "
        f"prompt now {mm.count_tokens():,} tokens",
        f"compressions: {len(mm.compressions)}; history starts: {head}, ...",
    ])


def budget_explorer(history: list[dict], *, max_tokens: int = 6000,
                    threshold: float = 0.75) -> Panel:
    """Sliders for the budget and the threshold; shows which messages of ``history`` survive.

    Taught in ``notebooks/04_message_manager.ipynb``. Returns a ``Panel`` (an ipywidgets
    ``VBox``).
    """
    budget = w.IntSlider(value=max_tokens, min=1000, max=40000, step=500,
                         description="max_tokens", continuous_update=False)
    thr = w.FloatSlider(value=threshold, min=0.3, max=1.0, step=0.05,
                        description="threshold", continuous_update=False)
    out = w.Output()
    panel = Panel([w.HBox([budget, thr]), out], title="budget explorer (chapter 04)")

    def redraw(_=None):
        res = survivors(history, budget.value, thr.value)
        panel.show(out, format_survivors(res), plot_survivors(res["rows"]))

    budget.observe(redraw, "value")
    thr.observe(redraw, "value")
    redraw()
    return panel

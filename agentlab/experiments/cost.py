"""What a sweep may cost, before it starts (notebook 14; prices from ``agentlab.models``).

The bound is simple and hard: a cell makes at most ``max_turns`` model calls, each with a
prompt of at most ``context_tokens`` (the ``MessageManager`` budget) and an answer of at most
``max_output_tokens`` (sent as ``max_completion_tokens``), so

    worst case per cell = max_turns x (context_tokens x input price
                                       + max_output_tokens x output price)

The runner reserves that much for every cell it starts, never starts one that could take
the sweep over its cap, and each cell's client refuses a call that would pass the cell's own
budget (``LimitedLLM``), so the cap holds whatever the model does. The simulator counts
tokens like the real API, so a dry run on it shows what the real sweep would cost; after a
partial run the estimate also uses the mean cost of the cells already finished.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from .pricing import cost_usd

__all__ = ["worst_case_usd", "CostEstimate", "estimate_cost"]


def worst_case_usd(settings: dict, uses_llm: bool) -> float:
    """The most one cell with these settings can spend (0 for a cell without model calls)."""
    if not uses_llm:
        return 0.0
    per_call = cost_usd(settings["model"], settings["context_tokens"],
                        settings["max_output_tokens"])
    return settings["max_turns"] * per_call


@dataclass
class CostEstimate:
    """The plan's cost: worst case of the cells still to run, spend of the finished ones."""

    cells: int
    to_run: int
    worst_case_usd: float
    per_cell_max_usd: float
    spent_usd: float = 0.0
    finished: int = 0
    cap_usd: float | None = None
    by_config: dict[str, float] = field(default_factory=dict)

    @property
    def expected_usd(self) -> float:
        """Remaining cells at the mean cost of the finished ones (NaN before any finished)."""
        if not self.finished:
            return math.nan
        return self.spent_usd / self.finished * self.to_run

    @property
    def fits_cap(self) -> bool:
        return self.cap_usd is None or self.spent_usd + self.worst_case_usd <= self.cap_usd

    def lines(self) -> list[str]:
        """The estimate as a few lines of text (printed by ``agentlab sweep --dry-run``)."""
        out = [f"cost (prices from agentlab.models): worst case ${self.worst_case_usd:.4f} "
               f"for the {self.to_run} cell(s) to run (at most ${self.per_cell_max_usd:.4f} each)"]
        if self.finished:
            out.append(f"  already spent ${self.spent_usd:.4f} on {self.finished} finished "
                       f"cell(s); at that rate the rest costs about ${self.expected_usd:.4f}")
        for label, usd in self.by_config.items():
            out.append(f"  {label}: worst case ${usd:.4f}")
        if self.cap_usd is not None:
            verdict = "fits" if self.fits_cap else "does NOT fit: cells beyond it are skipped"
            out.append(f"  cost cap ${self.cap_usd:.4f}: the worst case {verdict}")
        return out


def estimate_cost(cells: Sequence[Any], uses_llm: dict[str, bool],
                  records: dict[str, dict] | None = None,
                  cap_usd: float | None = None) -> CostEstimate:
    """Estimate for ``cells``; ``records`` are the finished ones (from the journal)."""
    records = records or {}
    todo = [c for c in cells if c.cell_id not in records]
    worst = {c.cell_id: worst_case_usd(c.settings, uses_llm[c.task["scenario"]]) for c in todo}
    by_config: dict[str, float] = {}
    for c in todo:
        by_config[c.config] = by_config.get(c.config, 0.0) + worst[c.cell_id]
    done = [records[c.cell_id] for c in cells if c.cell_id in records]
    spent = sum(float(r.get("run", {}).get("cost_usd") or 0.0) for r in done
                if math.isfinite(float(r.get("run", {}).get("cost_usd") or 0.0)))
    return CostEstimate(cells=len(cells), to_run=len(todo), worst_case_usd=sum(worst.values()),
                        per_cell_max_usd=max(worst.values(), default=0.0), spent_usd=spent,
                        finished=len(done), cap_usd=cap_usd, by_config=by_config)

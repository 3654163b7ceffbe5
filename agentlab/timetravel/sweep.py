"""Counterfactual sweeps: fork many runs at the same revision with each setting of a grid,
and compare the outcomes pair by pair (chapter 14's statistics, chapter 16's forks).

Taught in ``notebooks/16_time_travel.ipynb``. "From turn 2 of these 30 runs, what if the second
page had been lost?" Replaying the runs from scratch with the change would also change
everything before it (another model answer, another search); a fork starts from the very
revision each run reached, so everything before the fork point is identical by construction
and the pairs differ by the setting alone.

``counterfactual_sweep(cm, run_ids, revision, grid, make_runtime)``:

1. for each run and each ``grid`` setting (a label and an edit, ``None`` for "as it was"),
   ``fork`` the run at ``revision`` with that edit and ``continue_fork`` it on
   ``make_runtime(overrides)`` (a runtime with ``cm`` attached, built with the fork's model
   and config overrides);
2. one row per fork: the parent run, the setting, the fork's state, ``success`` (1 when it
   finished), turns, tokens, cost, and what ``measure(result)`` adds;
3. each setting against the ``baseline`` (the first), per metric: ``paired_difference``
   (a t-interval of the mean difference; the difference of two shares with an exact McNemar
   test for 0/1 metrics), p-values Holm-adjusted over the whole family.

``SweepResult.table()`` prints it; two sweeps of the same runs give the same table (fork ids,
which are new run ids, are in the rows but not in the table).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from ..errors import ConfigError
from ..experiments.stats import PairedDifference, holm, paired_difference
from .edits import Edit
from .fork import continue_fork, fork

__all__ = ["SweepResult", "counterfactual_sweep", "METRICS"]

#: The metrics every row has (``measure`` may add more).
METRICS = ("success", "turns", "tokens", "cost_usd")


@dataclass
class SweepResult:
    """The rows of a sweep and each setting's paired comparison with the baseline."""

    revision: int
    baseline: str
    rows: list[dict] = field(default_factory=list)
    comparisons: list[PairedDifference] = field(default_factory=list)
    p_holm: list[float] = field(default_factory=list)

    def values(self, setting: str, metric: str) -> list[float]:
        """``metric`` of each run's fork with ``setting``, in the order of the runs."""
        return [float(r[metric]) for r in self.rows if r["setting"] == setting]

    def table(self) -> list[str]:
        """One line per comparison: metric, setting - baseline, estimate [interval], Holm p."""
        n_runs = len({r["parent_run_id"] for r in self.rows})
        lines = [f"{n_runs} runs forked at revision {self.revision}; each setting - "
                 f"{self.baseline!r}, 95% intervals, p Holm-adjusted over "
                 f"{sum(not math.isnan(p) for p in self.p_holm)} comparisons",
                 f"{'metric':<10} {'setting':<16} {'baseline':>10} {'setting':>10} "
                 f"{'difference [95% interval]':>34} {'p (Holm)':>9}"]
        for c, p in zip(self.comparisons, self.p_holm):
            interval = f"{c.estimate:+.4g} [{c.low:+.4g}, {c.high:+.4g}]"
            lines.append(f"{c.metric:<10} {c.b[:16]:<16} {c.a_value:>10.4g} {c.b_value:>10.4g} "
                         f"{interval:>34} {p:>9.3g}")
        return lines


def _row(parent: str, setting: str, run_id: str, result: Any,
         measure: Callable[[Any], dict] | None) -> dict:
    cost = result.cost_usd if result.cost_usd is not None else math.nan
    row = {"parent_run_id": parent, "setting": setting, "fork_run_id": run_id,
           "state": result.state.value, "success": float(result.ok), "turns": result.turns,
           "tokens": result.total_tokens, "cost_usd": cost}
    row.update(measure(result) if measure is not None else {})
    return row


def counterfactual_sweep(cm: Any, run_ids: Iterable[str], revision: int,
                         grid: dict[str, Edit | list[Edit] | None],
                         make_runtime: Callable[[dict], Any], *,
                         metrics: Iterable[str] = ("success", "turns", "tokens"),
                         measure: Callable[[Any], dict] | None = None,
                         confidence: float = 0.95) -> SweepResult:
    """Fork every run at ``revision`` with every setting of ``grid``; compare with the first.

    Args:
        grid: ``{label: edit}``, ordered; the first label is the baseline (often ``None``:
            the run continued as it was).
        make_runtime: ``overrides -> AgentRuntime`` with ``cm`` attached; ``overrides`` is the
            fork's ``{"model": ..., "config": {...}}`` (empty when the edit changes messages).
        metrics: the columns compared (``METRICS`` or keys ``measure`` returns).
    """
    runs, labels = list(run_ids), list(grid)
    if len(labels) < 2 or not runs:
        raise ConfigError("invalid_argument", "a sweep needs runs and at least two settings "
                          "(the first is the baseline)")
    out = SweepResult(revision, labels[0])
    for parent in runs:  # 1. the forks, run by run (one failing run cannot skew a setting)
        for label in labels:
            f = fork(cm, parent, revision, edit=grid[label])
            result = continue_fork(cm, f, make_runtime(dict(f.overrides)))
            out.rows.append(_row(parent, label, f.run_id, result, measure))
    with warnings.catch_warnings(record=True) as caught:  # 3. paired, then Holm over all
        warnings.simplefilter("always")
        for metric in metrics:
            base = out.values(labels[0], metric)
            for label in labels[1:]:
                out.comparisons.append(paired_difference(
                    base, out.values(label, metric), metric=metric, confidence=confidence,
                    labels=(labels[0], label)))
    for w in {str(w.message): w for w in caught}.values():  # each warning once, not per metric
        warnings.warn(w.message, w.category, stacklevel=2)
    out.p_holm = holm([c.p_value for c in out.comparisons])
    return out

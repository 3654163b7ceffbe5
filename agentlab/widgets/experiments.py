"""Widget for chapter 14 (``notebooks/14_experiments.ipynb``): rerun a small sweep from controls.

``sweep_explorer(tasks)`` is the widget: pick compression thresholds and a number of seeds, press
"run sweep", and a small ``Experiment`` of the research agent runs in this process; the summary
table (means with 95 % intervals) and ``viz.plot_sweep_summary`` are shown. ``small_sweep()`` is
what it runs, callable directly so a notebook can print a deterministic table next to the widget.
"""
from __future__ import annotations

from typing import Any, Sequence

import ipywidgets as w

from ..experiments import Experiment
from ..viz.experiments import plot_sweep_summary
from .panel import Panel

__all__ = ["format_sweep", "small_sweep", "sweep_explorer"]

THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def small_sweep(tasks: Sequence[Any], thresholds: Sequence[float], seeds: int) -> Any:
    """Run the research agent at each compression threshold, ``seeds`` seeds per task, in this
    process; returns ``Results.summary(["success", "total_tokens"])`` by threshold (a DataFrame).
    """
    res = Experiment(grid={"compression_threshold": list(thresholds)}, seeds=seeds,
                     tasks=list(tasks), name="widget").run(workers=1, progress=False)
    return res.summary(["success", "total_tokens"], by=("compression_threshold",))


def format_sweep(summary: Any) -> str:
    """The columns the widget shows: runs, success rate, mean tokens with its 95 % interval."""
    cols = ["compression_threshold", "runs", "success", "total_tokens", "total_tokens_low",
            "total_tokens_high"]
    return summary[cols].round(2).to_string(index=False)


def sweep_explorer(tasks: Sequence[Any], *, thresholds: Sequence[float] = (0.6, 0.9),
                   seeds: int = 3, run: bool = True) -> Panel:
    """Threshold picker, seed slider and a "run sweep" button over ``tasks`` (Experiment tasks).

    ``run=True`` runs the sweep once for the initial settings, so the widget (and its saved
    snapshot) shows a result before anyone presses the button. Returns a ``Panel``.
    """
    pick = w.SelectMultiple(options=list(THRESHOLDS), value=tuple(thresholds),
                            description="threshold")
    n_seeds = w.IntSlider(value=seeds, min=1, max=8, description="seeds")
    button, out = w.Button(description="run sweep"), w.Output()
    panel = Panel([w.HBox([pick, n_seeds, button]), out],
                  title="sweep explorer (chapter 14)")

    def rerun(_: Any = None) -> None:
        if not pick.value:
            panel.show(out, "pick at least one threshold")
            return
        summary = small_sweep(tasks, sorted(pick.value), n_seeds.value)
        fig = plot_sweep_summary(summary, "compression_threshold", ["total_tokens", "success"],
                                 xlabel="threshold (share of token budget)", figsize=(9, 3.2))
        panel.show(out, format_sweep(summary), fig)

    button.on_click(rerun)
    if run:
        rerun()
    return panel

"""Widget for chapter 09 (``notebooks/09_adaptive_timeouts.ipynb``): the multiplier slider.

``multiplier_explorer(traces)`` is the widget: pick a tool and a multiplier; the trace is
replayed against an ``AdaptiveTimeoutManager`` with that multiplier (``sim.tool_latency.replay``,
no sleeping) and the learned timeout is drawn over the tool's latency histogram, with the false
kills and the time wasted on killed calls. ``explain_multiplier()`` is what it runs, callable
directly so a notebook can print a deterministic result next to the widget.
"""
from __future__ import annotations

import math
from typing import Any

import ipywidgets as w

from ..sim.tool_latency import Bimodal, Hanging, LogNormal, Slowdown, replay
from ..timeouts import AdaptiveTimeoutManager
from ..viz.timeouts import plot_latency_percentiles
from .panel import Panel

__all__ = ["default_traces", "explain_multiplier", "multiplier_explorer"]


def default_traces(n: int = 500) -> dict[str, list[float]]:
    """The chapter 09 workload: four tools whose medians span three orders of magnitude,
    with hangs (``inf``), a cache (bimodal) and a slow-down; ``n`` seeded draws each (ms)."""
    models = {"db_query": Hanging(Bimodal(5, 300, hit_rate=0.8, seed=2), hang_rate=0.01, seed=12),
              "web_search": Hanging(LogNormal(800, sigma=0.5, seed=1), hang_rate=0.02, seed=11),
              "report": LogNormal(12000, sigma=0.45, seed=3),
              "flaky_api": Hanging(Slowdown(LogNormal(300, 0.4, seed=4), start_call=250,
                                            factor=6), hang_rate=0.02, seed=14)}
    return {name: m.samples(n) for name, m in models.items()}


def explain_multiplier(trace: list[float], tool: str, multiplier: float = 1.5, *,
                       min_timeout: float = 0.5) -> dict[str, Any]:
    """Replay ``trace`` (ms; ``inf`` = hung) against a manager with this ``multiplier``.

    Returns ``{"tool", "multiplier", "timeout_s", "false_kills", "hung_killed", "wasted_s",
    "calls", "finished"}`` (``finished``: the durations of the calls that did not hang).
    """
    manager = AdaptiveTimeoutManager(min_timeout=min_timeout, multiplier=multiplier)
    r = replay(manager, trace, tool)
    return {"tool": tool, "multiplier": multiplier, "timeout_s": manager.get_timeout(tool),
            "false_kills": r.false_kills, "hung_killed": r.hung_killed,
            "wasted_s": r.wasted_ms / 1000, "calls": r.calls,
            "finished": [d for d in trace if math.isfinite(d)]}


def _summary(res: dict[str, Any]) -> str:
    return (f"{res['tool']}: x{res['multiplier']:g}: timeout {res['timeout_s']:.2f} s after "
            f"{res['calls']} calls; false kills {res['false_kills']}, hung calls killed "
            f"{res['hung_killed']}, waited {res['wasted_s']:.0f} s on killed calls")


def multiplier_explorer(traces: dict[str, list[float]] | None = None, *,
                        min_timeout: float = 0.5) -> Panel:
    """A multiplier slider and a tool picker over ``traces`` (default: ``default_traces()``).

    Returns a ``Panel`` (an ipywidgets ``VBox``).
    """
    traces = traces or default_traces()
    mult = w.FloatSlider(1.5, min=0.5, max=4.0, step=0.25, description="multiplier",
                         continuous_update=False)
    tool = w.Dropdown(options=list(traces), value=next(iter(traces)), description="tool")
    out = w.Output()
    panel = Panel([w.HBox([mult, tool]), out], title="multiplier explorer (chapter 09)")

    def redraw(_: Any = None) -> None:
        res = explain_multiplier(traces[tool.value], tool.value, mult.value,
                                 min_timeout=min_timeout)
        fig = plot_latency_percentiles({res["tool"]: res["finished"]},
                                       {res["tool"]: res["timeout_s"]}, figsize=(7, 2.6))
        panel.show(out, _summary(res), fig)

    mult.observe(redraw, "value")
    tool.observe(redraw, "value")
    redraw()
    return panel

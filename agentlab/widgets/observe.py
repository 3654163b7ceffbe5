"""Widget for chapter 12 (``notebooks/12_observability.ipynb``): percentiles over many runs.

One run of the research agent makes six tool calls: one to three per tool, far too few for a
p95, let alone a p99. ``latency_explorer()`` runs the agent many times -- each run with its own
``AgentObserver``, each tool sleeping a seeded latency -- and pools the observers: per-tool
p50/p95/p99 with their exact 95 % intervals (``agentlab.quantiles``; ``+inf`` where the calls
cannot bound the percentile: fewer than 72 for a p95, 368 for a p99) and the number of calls
behind each, and tokens and cost per turn across the runs. ``observe_runs()``,
``tool_percentiles()`` and ``cost_per_turn()`` are what it runs, callable directly so a notebook
can print a deterministic result next to the widget.
"""
from __future__ import annotations

import functools
import tempfile
import time
from typing import Any, Callable

import ipywidgets as w

from .. import research, sim
from ..observe import AgentObserver
from ..runtime import AgentRuntime, RuntimeConfig
from ..sim.tool_latency import LatencyModel, LogNormal
from ..quantiles import percentile_interval
from ..viz.observe import MIN_CALLS, plot_runs_cost, plot_tool_latency
from .panel import Panel

__all__ = ["TOOL_LATENCY_MS", "observe_runs", "tool_percentiles", "format_percentiles",
           "cost_per_turn", "latency_explorer"]

#: Median (ms) and spread of each research tool's simulated latency: real sleeps, small enough
#: that 50 runs take a few seconds; ``read_url`` has the longest tail.
TOOL_LATENCY_MS = {"web_search": (4.0, 0.5), "read_url": (6.0, 0.8), "write_file": (1.5, 0.3)}


def _with_latency(registry: Any, models: dict[str, LatencyModel]) -> Any:
    """Re-register each tool of ``registry`` named in ``models`` so it first sleeps a draw."""
    for name, model in models.items():
        fn, opts = registry.get_function(name), registry.get_options(name)

        @functools.wraps(fn)
        def slow(*args: Any, _fn: Callable = fn, _m: LatencyModel = model, **kw: Any) -> Any:
            time.sleep(_m.sample() / 1000)
            return _fn(*args, **kw)

        registry.register(slow, name=name, replace=True, side_effects=opts["side_effects"],
                          timeout=opts["timeout"])
    return registry


def observe_runs(runs: int = 50, *, seed: int = 0, tool_fault_rate: float = 0.0,
                 model: str = "gpt-4o", start: int = 0) -> list[AgentObserver]:
    """Run the research agent ``runs`` times (run ``i`` seeded ``seed + i``, from ``start``),
    each with its own ``AgentObserver``; return the observers in run order."""
    out = []
    with tempfile.TemporaryDirectory(prefix="agentlab-12-") as folder:
        for i in range(start, start + runs):
            s = seed + i
            tools = research.research_tools(folder)
            if tool_fault_rate:
                research.with_tool_faults(tools, tool_fault_rate, seed=s, hang_s=0.05,
                                          timeout=0.02)
            _with_latency(tools, {n: LogNormal(med, sigma, seed=1000 * s + k)
                                  for k, (n, (med, sigma)) in enumerate(TOOL_LATENCY_MS.items())})
            obs = AgentObserver(f"run-{i}", model=model, seed=s)
            AgentRuntime(sim.Simulator(sim.Researcher(), seed=s).llm(model=model), tools,
                         system_prompt=research.SYSTEM_PROMPT, observer=obs,
                         config=RuntimeConfig(max_turns=15, max_total_time=60.0)
                         ).run(research.DEMO_TASK)
            out.append(obs)
    return out


def tool_percentiles(observers: list[AgentObserver]) -> dict[str, dict[str, Any]]:
    """Per tool, pooled over the runs: ``calls``, ``failed``, and for q in 50, 95, 99 ``pq``
    with its exact 95 % interval ``pq_low``, ``pq_high`` (ms; ``+inf`` when the tool has fewer
    calls than ``MIN_CALLS[q]``: the percentile is known to be above ``pq_low``, no more).
    """
    pooled: dict[str, list] = {}
    for obs in observers:
        for t in obs.tool_calls:
            pooled.setdefault(t.name, []).append(t)
    stats = {}
    for name in sorted(pooled):
        ms = [t.duration_ms for t in pooled[name]]
        row: dict[str, Any] = {"calls": len(ms), "failed": sum(not t.success for t in pooled[name])}
        for q in (50, 95, 99):
            row[f"p{q}"], row[f"p{q}_low"], row[f"p{q}_high"] = percentile_interval(ms, q)
        stats[name] = row
    return stats


def format_percentiles(stats: dict[str, dict[str, Any]], runs: int) -> str:
    """A small table of ``tool_percentiles``: each percentile with its interval, and a line on
    how many calls a bounded interval needs."""
    def cell(r: dict, q: int) -> str:
        v, low, high = r[f"p{q}"], r[f"p{q}_low"], r[f"p{q}_high"]
        end = "+inf" if high == float("inf") else f"{high:.1f}"
        start = "-inf" if low == float("-inf") else f"{low:.1f}"
        return f"{v:.1f} [{start}, {end}]".rjust(21)
    lines = [f"{runs} runs pooled; latency in ms with exact 95 % intervals ('+inf': too few "
             f"calls to bound it; p95 needs {MIN_CALLS[95]} calls, p99 {MIN_CALLS[99]})",
             f"{'tool':<11}{'calls':>6}{'failed':>7}{'p50':>21}{'p95':>21}{'p99':>21}"]
    for name, r in stats.items():
        lines.append(f"{name:<11}{r['calls']:>6}{r['failed']:>7}"
                     + "".join(cell(r, q) for q in (50, 95, 99)))
    return "\n".join(lines)


def cost_per_turn(observers: list[AgentObserver]) -> list[dict[str, Any]]:
    """Per turn number: how many runs reached it, mean input/output tokens, mean/min/max cost
    (cost None when the model has no price)."""
    by_turn: dict[int, list[dict]] = {}
    for obs in observers:
        for row in obs.per_turn():
            by_turn.setdefault(row["turn"], []).append(row)
    out = []
    for turn in sorted(by_turn):
        rows = by_turn[turn]
        costs = [r["cost_usd"] for r in rows]
        priced = all(c is not None for c in costs)
        out.append({"turn": turn, "runs": len(rows),
                    "prompt_tokens": sum(r["prompt_tokens"] for r in rows) / len(rows),
                    "completion_tokens": sum(r["completion_tokens"] for r in rows) / len(rows),
                    "mean_usd": sum(costs) / len(rows) if priced else None,
                    "min_usd": min(costs) if priced else None,
                    "max_usd": max(costs) if priced else None})
    return out


def latency_explorer(runs: int = 50, *, seed: int = 0) -> Panel:
    """Sliders for the number of runs and the tool fault rate, a price table picker; shows the
    pooled per-tool latency (p50/p95/p99, with the calls behind each) and cost per turn.

    Runs are cached: moving the slider back costs nothing, forward only the new runs. Returns
    a ``Panel`` (an ipywidgets ``VBox``); building it runs ``runs`` runs (a few seconds).
    """
    n = w.IntSlider(runs, min=5, max=200, step=5, description="runs", continuous_update=False)
    faults = w.FloatSlider(0.0, min=0.0, max=0.3, step=0.05, description="tool fault rate",
                           continuous_update=False)
    model = w.Dropdown(options=["gpt-4o", "gpt-4o-mini"], value="gpt-4o", description="model")
    out = w.Output()
    panel = Panel([w.HBox([n, faults, model]), out], title="latency explorer (chapter 12)")
    cache: dict[tuple, list[AgentObserver]] = {}

    def redraw(_: Any = None) -> None:
        key = (faults.value, model.value)
        done = cache.setdefault(key, [])
        if len(done) < n.value:
            done += observe_runs(n.value - len(done), seed=seed, tool_fault_rate=faults.value,
                                 model=model.value, start=len(done))
        observers = done[:n.value]
        text = format_percentiles(tool_percentiles(observers), len(observers))
        panel.show(out, text, [plot_tool_latency(observers, title=f"tool latency, "
                                                 f"{len(observers)} runs pooled"),
                               plot_runs_cost(cost_per_turn(observers), model=model.value)])

    for control in (n, faults, model):
        control.observe(redraw, "value")
    redraw()
    return panel

"""Widget for chapter 10 (``notebooks/10_dag_execution.ipynb``): edit a DAG, see its schedules.

``dag_editor()`` is the widget: one line per call (``name duration_ms: dependency, ...``), a
worker count, and the schedules of both strategies (level by level, ready queue) against the
critical path. ``plan_dag()`` is what it runs (``simulate_schedule``: no sleeping), callable
directly so a notebook can print a deterministic result next to the widget.
"""
from __future__ import annotations

import re
from typing import Any

import ipywidgets as w

from ..dag import DependencyGraph, critical_path, simulate_schedule
from ..errors import AgentError, ConfigError
from ..viz.dag import plot_dag, plot_schedules
from .panel import Panel

__all__ = ["DEFAULT_DAG", "parse_dag", "plan_dag", "format_plan", "dag_editor"]

#: The chapter 10 research batch (durations in ms).
DEFAULT_DAG = """\
search 200
weather 150
read1 100: search
read2 400: search
extract1 300: read1
extract2 50: read2
summarize 100: extract1, extract2"""
_LINE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s+(\d+(?:\.\d+)?)\s*(?::\s*(.*))?$")


def parse_dag(text: str) -> tuple[dict[str, float], dict[str, list[str]]]:
    """``"name duration_ms: dep, dep"`` lines -> ``(durations, dependencies)``.

    Blank lines and ``#`` comments are skipped; a malformed line raises ``ConfigError`` naming
    it. Unknown dependencies and cycles are left to ``DependencyGraph`` to report.
    """
    durations: dict[str, float] = {}
    deps: dict[str, list[str]] = {}
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            raise ConfigError("invalid_argument", f"line {n} ({raw.strip()!r}) is not "
                              "'name duration_ms: dependency, ...'")
        name, ms, rest = m.group(1), float(m.group(2)), m.group(3) or ""
        if name in durations:
            raise ConfigError("invalid_argument", f"line {n}: {name!r} is defined twice")
        durations[name] = ms
        deps[name] = [d.strip() for d in rest.split(",") if d.strip()]
    if not durations:
        raise ConfigError("invalid_argument", "no calls: write one line per call")
    return durations, deps


def plan_dag(text: str, workers: int = 2) -> dict[str, Any]:
    """Parse ``text``, find the critical path, simulate both strategies on ``workers`` workers.

    Returns ``{"durations", "dependencies", "levels", "critical_ms", "critical_path",
    "schedules"}`` (``schedules``: ``{label: Schedule}``), or ``{"error": message}`` when the
    text is malformed or the graph has a cycle or an unknown dependency.
    """
    try:
        durations, deps = parse_dag(text)
        graph = DependencyGraph()
        for v, ds in deps.items():
            graph.add_tool(v, ds)
        levels = graph.topological_sort()
        cp_ms, cp_path = critical_path(durations, deps)
        schedules = {f"{s}, {workers} worker{'s' * (workers != 1)}":
                     simulate_schedule(durations, deps, workers, strategy=s)
                     for s in ("levels", "ready")}
    except AgentError as exc:
        return {"error": f"[{exc.code}] {exc.message}"}
    return {"durations": durations, "dependencies": deps, "levels": levels,
            "critical_ms": cp_ms, "critical_path": cp_path, "schedules": schedules}


def format_plan(plan: dict[str, Any]) -> str:
    """The critical path and each strategy's makespan against it."""
    if "error" in plan:
        return "cannot schedule this graph: " + plan["error"]
    lines = [f"critical path {plan['critical_ms']:.0f} ms: " + " -> ".join(plan["critical_path"]),
             f"levels: {plan['levels']}"]
    for label, sched in plan["schedules"].items():
        ratio = sched.makespan_ms / plan["critical_ms"] if plan["critical_ms"] else 1.0
        lines.append(f"{label}: makespan {sched.makespan_ms:.0f} ms "
                     f"({ratio:.2f} x the critical path)")
    return "\n".join(lines)


def dag_editor(text: str = DEFAULT_DAG, *, workers: int = 2) -> Panel:
    """Edit the calls, their durations and dependencies; move the worker count.

    Returns a ``Panel`` (an ipywidgets ``VBox``).
    """
    box = w.Textarea(value=text, description="calls", continuous_update=False,
                     layout=w.Layout(width="60%", height="11em"))
    help_ = w.HTML("<small>one call per line: <code>name duration_ms: dependency, ...</code>"
                   "</small>")
    n = w.IntSlider(workers, min=1, max=8, description="workers", continuous_update=False)
    out = w.Output()
    panel = Panel([w.HBox([box, w.VBox([help_, n])]), out], title="DAG editor (chapter 10)")

    def redraw(_: Any = None) -> None:
        plan = plan_dag(box.value, n.value)
        if "error" in plan:
            panel.show(out, format_plan(plan))
            return
        figs = [plot_dag(plan["dependencies"], durations_ms=plan["durations"],
                         highlight=plan["critical_path"]),
                plot_schedules(plan["schedules"], critical_path_ms=plan["critical_ms"],
                               order=list(plan["durations"]))]
        panel.show(out, format_plan(plan), figs)

    box.observe(redraw, "value")
    n.observe(redraw, "value")
    redraw()
    return panel

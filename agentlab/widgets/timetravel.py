"""Widget for chapter 16 (``notebooks/16_time_travel.ipynb``): a run's timeline; fork it.

``timeline_explorer(cm, run_id, out_dir)`` is the widget: pick a revision of a research run and
see the conversation and the tool log as they were then; pick an edit and *Fork* runs the fork
to its end and draws it beside the original. What it runs is callable directly, so a notebook
prints deterministic results next to it: ``research_runtime`` (chapter 08's agent, checkpointed
every turn, its tool bodies optionally counted), ``revision_view``, ``fork_beside`` and
``format_fork_beside``.
"""
from __future__ import annotations

import inspect
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import ipywidgets as w

from .. import sim
from ..research import SYSTEM_PROMPT, research_tools
from ..runtime import AgentRuntime, RuntimeConfig
from ..timetravel.compat import tool_version
from ..timetravel import (AppendMessage, CapabilitySnapshot, ReplaceToolResult, SetConfig,
                          continue_fork, fork, history, load_revision)
from ..viz.timetravel import plot_timeline
from .panel import Panel

__all__ = ["EDITS", "count_calls", "research_runtime", "revision_view", "fork_beside",
           "format_fork_beside", "timeline_explorer"]

#: The edits the widget offers, by label.
EDITS = {
    "second page lost": ReplaceToolResult("Error: page not found", tool="read_url", nth=1),
    "user: 'only cancellation'": AppendMessage("Only cover cancellation, please."),
    "max_turns 4": SetConfig(max_turns=4),
}


def count_calls(registry: Any, ran: Counter) -> Any:
    """Wrap every tool of ``registry`` (in place) so each run of its body adds 1 to ``ran``."""
    lock = threading.Lock()
    for name in registry.list_tools():
        fn, opts = registry.get_function(name), registry.get_options(name)

        def counted(*args: Any, _fn: Any = fn, _name: str = name, **kwargs: Any) -> Any:
            with lock:
                ran[_name] += 1
            return _fn(*args, **kwargs)

        counted.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        counted.__doc__, counted.__annotations__ = fn.__doc__, getattr(fn, "__annotations__", {})
        # counting is instrumentation, not a new tool: the same version as the wrapped one
        counted.__version__ = tool_version(fn)  # type: ignore[attr-defined]
        registry.register(counted, name=name, replace=True, side_effects=opts["side_effects"],
                          timeout=opts["timeout"])
    return registry


def research_runtime(cm: Any, out_dir: str | Path, *, overrides: dict | None = None,
                     ran: Counter | None = None) -> AgentRuntime:
    """Chapter 08's research agent with ``cm`` attached and its capability snapshot saved."""
    registry = research_tools(out_dir)
    if ran is not None:
        count_calls(registry, ran)
    return AgentRuntime(sim.Simulator(sim.Researcher()).llm(), registry,
                        system_prompt=SYSTEM_PROMPT, checkpoints=cm,
                        extensions=[CapabilitySnapshot()],
                        config=RuntimeConfig(**(overrides or {}).get("config", {})))


def _short(text: Any, n: int = 64) -> str:
    s = " ".join(str(text or "").split())
    return s if len(s) <= n else s[:n - 1] + "…"


def revision_view(cm: Any, run_id: str, revision: int) -> str:
    """The conversation and the durable tool log of ``run_id`` as they were at ``revision``."""
    cp = load_revision(cm, run_id, revision)
    lines = [f"revision {cp.revision}: turn {cp.turn}, {cp.metadata.get('saved_due_to')}, "
             f"{len(cp.messages)} messages"]
    for i, m in enumerate(cp.messages):
        calls = ", ".join(f"{tc['function']['name']}({_short(tc['function']['arguments'], 40)})"
                          for tc in m.get("tool_calls") or [])
        lines.append(f"  [{i:>2}] {m['role']:<9} {calls or _short(m.get('content'))}")
    logged = [r for r in cm.completed_tool_calls(run_id).values()
              if r.get("turn") is not None and r["turn"] <= cp.turn]
    lines.append(f"tool log as of then: {len(logged)} calls")
    lines += [f"  turn {r['turn']}: {r['name']:<10} {'ok' if r['success'] else 'failed'}  "
              f"{_short(r['result'], 44)}" for r in logged]
    return "\n".join(lines)


def fork_beside(cm: Any, run_id: str, revision: int, edit: str, out_dir: str | Path) -> dict:
    """Fork ``run_id`` at ``revision`` with ``EDITS[edit]``, run it; both histories."""
    f = fork(cm, run_id, revision, edit=EDITS[edit])
    result = continue_fork(cm, f, research_runtime(cm, out_dir, overrides=f.overrides))
    return {"fork": f, "result": result, "original": history(cm, run_id),
            "forked": history(cm, f.run_id), "revision": revision}


def format_fork_beside(res: dict) -> str:
    """The original and the fork, side by side: final revision, state, tokens, answer."""
    a, b = res["original"][-1], res["forked"][-1]
    rows = [("", "original", "fork"), ("revisions", len(res["original"]), len(res["forked"])),
            ("state", a.state, b.state), ("turns", a.turn, b.turn), ("tokens", a.tokens, b.tokens)]
    lines = [f"fork of revision {res['revision']} ({res['fork'].edit}); parent recorded: "
             f"revision {res['forked'][0].parent['revision']}"]
    lines += [f"  {k:<10} {x!s:>12} {y!s:>12}" for k, x, y in rows]
    lines.append(f"  fork's answer: {_short(res['result'].content, 90)}")
    return "\n".join(lines)


def timeline_explorer(cm: Any, run_id: str, out_dir: str | Path, *, revision: int = 3,
                      edit: str = "second page lost") -> Panel:
    """The revision slider, the edit menu and *Fork* (see the module doc). Runs once (a fork)
    when it is built, so its snapshot shows a fork beside the original."""
    revs = history(cm, run_id)
    pick = w.IntSlider(revision, min=1, max=revs[-1].revision, description="revision",
                       continuous_update=False)
    menu = w.Dropdown(options=list(EDITS), value=edit, description="edit")
    button = w.Button(description="Fork and run", button_style="primary", icon="code-branch")
    out = w.Output()
    panel = Panel([w.HBox([pick, menu]), button, out], title="timeline explorer (chapter 16)")

    def look(_: Any = None) -> None:
        panel.show(out, revision_view(cm, run_id, pick.value),
                   plot_timeline({"original": history(cm, run_id)}, selected=pick.value))

    def forked(_: Any = None) -> None:
        button.disabled = True
        try:
            res = fork_beside(cm, run_id, pick.value, menu.value, out_dir)
            turn = res["forked"][0].turn
            panel.show(out, format_fork_beside(res) + "\n\n" + revision_view(cm, run_id, pick.value),
                       plot_timeline({"original": res["original"], "fork": res["forked"]},
                                     fork_turn=turn, selected=pick.value))
        except Exception as exc:  # e.g. an edit that does not fit this revision
            panel.show(out, f"{type(exc).__name__}: {getattr(exc, 'message', exc)}")
        finally:
            button.disabled = False

    pick.observe(look, names="value")
    button.on_click(forked)
    forked()
    return panel

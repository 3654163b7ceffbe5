"""The run panel (chapters 06 and 00): drive ``AgentRuntime`` with controls, watch it live.

``run_panel()`` is the widget: max turns, parallel tools on/off, fault rates for the model and
the tools, a seed, a run button, a live event log, the result summary and the turn timeline.
``run_with_settings()`` is what its button runs, callable directly so a notebook can print a
deterministic result next to the widget.
"""
from __future__ import annotations

import html
from typing import Any, Callable

import ipywidgets as w

from .. import research, sim
from ..runtime import AgentRuntime, RuntimeConfig
from ..sim.researcher import Researcher
from ..viz.runtime import plot_turn_timeline
from .panel import Panel

__all__ = ["run_with_settings", "format_event", "summarize_result", "run_panel",
           "FAULT_TIMEOUT_S", "FAULT_HANG_S"]

#: The tool timeout when tool faults are injected, and how long an injected hang lasts. Both
#: are wall-clock, so they are far apart and far above a normal call (1-10 ms): with 0.1 s, a
#: ``write_file`` (two fsyncs) on a loaded laptop took >0.1 s now and then and timed out, and
#: the same seed printed another run (notebook 08: 9 turns instead of 8). Each injected hang
#: costs ``FAULT_TIMEOUT_S`` of run time.
FAULT_TIMEOUT_S = 0.5
FAULT_HANG_S = 2.0


def run_with_settings(max_turns: int = 15, parallel: bool = True, model_fault_rate: float = 0.0,
                      tool_fault_rate: float = 0.0, seed: int = 0, *, task: str | None = None,
                      output_dir: str = "output", time_scale: float = 0.02,
                      on_event: Callable[[dict], Any] | None = None) -> tuple[Any, list[dict]]:
    """Run the research agent on the simulator with these settings; return (result, events).

    ``model_fault_rate`` is split evenly over 429, 5xx, timeouts, malformed arguments and
    truncated streams; ``tool_fault_rate`` over tool exceptions and hung tools.
    """
    each = model_fault_rate / 5
    simulator = sim.Simulator(
        Researcher(), seed=seed,
        latency=sim.Latency(first_token_ms=300, tokens_per_second=80, time_scale=time_scale),
        faults=sim.Faults(rate_limit=each, server_error=each, timeout=each,
                          malformed_arguments=each, truncated_stream=each, retry_after=0.01,
                          seed=seed) if model_fault_rate else None)
    tools = research.research_tools(output_dir)
    if tool_fault_rate:
        research.with_tool_faults(tools, tool_fault_rate, seed=seed, hang_s=FAULT_HANG_S,
                                  timeout=FAULT_TIMEOUT_S)
    rt = AgentRuntime(simulator.llm(max_retries=3, retry_base_delay=0.01, seed=seed), tools,
                      system_prompt=research.SYSTEM_PROMPT,
                      config=RuntimeConfig(max_turns=max_turns, parallel_tool_calls=parallel,
                                           max_total_time=60.0))
    events = []
    for ev in rt.run_stream(task or research.DEMO_TASK):
        events.append(ev)
        if on_event is not None:
            on_event(ev)
    return events[-1]["result"], events


def format_event(ev: dict) -> str:
    """One line per event (text deltas are shown as they come, without a newline)."""
    kind = ev["type"]
    if kind == "text":
        return ev["content"]
    if kind == "turn_start":
        return f"-- turn {ev['turn']}"
    if kind == "tool_start":
        args = ", ".join(f"{k}={str(v)[:40]!r}" for k, v in (ev.get("arguments") or {}).items())
        return f"   > {ev['name']}({args})"
    if kind == "tool_end":
        status = "ok" if ev["ok"] else f"FAILED ({ev['error_code']})"
        return f"   < {ev['name']}: {status}"
    if kind == "turn_end":
        return f"   turn {ev['turn']} done: {ev['tool_calls']} tool call(s)"
    if kind == "error":
        return f"   ! [{ev['code']}] {ev['message'][:100]}"
    if kind == "done":
        return f"== done: {ev['state']} ({ev['stopped_reason']})"
    return f"   {kind}"


def summarize_result(result: Any) -> str:
    """state | reason | turns | tokens | tool calls ok/total (failed) | run errors.

    Failed tool calls are counted next to the successes; *run errors* are the run's own
    ``result.errors`` (a model call that failed after its retries, a limit hit), which a failed
    tool call is not: the model got its error text and went on.
    """
    calls = result.tool_calls_made
    ok = sum(1 for c in calls if c["success"])
    failed = f" ({len(calls) - ok} failed)" if len(calls) > ok else ""
    return (f"{result.state.value} | {result.stopped_reason} | {result.turns} turns | "
            f"{result.total_tokens} tokens | {ok}/{len(calls)} tool calls ok{failed} | "
            f"run errors: {len(result.errors)}")


def run_panel(task: str | None = None, output_dir: str = "output", *,
              autorun: bool = True) -> Panel:
    """The run panel widget (see the module docstring).

    Taught in ``notebooks/06_runtime_loop.ipynb`` and ``00_quickstart.ipynb``. With
    ``autorun`` it runs once with its default settings when it is built (about a second on the
    simulator), so the notebook shows a real run before anyone clicks. Returns a ``Panel``.
    """
    style = {"description_width": "130px"}
    max_turns = w.IntSlider(15, min=1, max=30, description="max turns", style=style)
    parallel = w.Checkbox(True, description="parallel tool calls")
    model_faults = w.FloatSlider(0.0, min=0, max=0.6, step=0.05, description="model fault rate",
                                 style=style)
    tool_faults = w.FloatSlider(0.0, min=0, max=0.6, step=0.05, description="tool fault rate",
                                style=style)
    seed = w.IntText(0, description="seed", style=style)
    button = w.Button(description="Run", button_style="primary", icon="play")
    log = w.Output(layout={"height": "240px", "overflow": "auto", "border": "1px solid #ccc"})
    summary = w.HTML()
    plot = w.Output()
    lines: list[str] = []       # the log as text lines, for the snapshot
    in_text = [False]           # the last event was a text delta: the next one continues it
    panel = Panel([w.HBox([w.VBox([max_turns, parallel, model_faults, tool_faults, seed,
                                   button])]), summary, log, plot],
                  title="run panel (chapters 06 and 00)")

    def show(ev: dict) -> None:
        line = format_event(ev)
        if ev["type"] == "text" and in_text[0]:
            lines[-1] += line
        else:
            lines.append(line)
        in_text[0] = ev["type"] == "text"
        with log:
            print(line, end="" if ev["type"] == "text" else "\n")

    def on_click(_: Any) -> None:
        button.disabled = True
        log.clear_output()
        lines.clear()
        summary.value = "<i>running...</i>"
        try:
            result, _events = run_with_settings(max_turns.value, parallel.value, model_faults.value,
                                                tool_faults.value, seed.value, task=task,
                                                output_dir=output_dir, on_event=show)
            text = summarize_result(result)
            summary.value = f"<b>{html.escape(text)}</b>"
            failed = [ln.strip() for ln in lines if "FAILED" in ln]
            panel.show(plot, "", plot_turn_timeline(result))
            panel.text = "\n".join([text, *failed[:6], "...", *lines[-4:]] if failed
                                   else [text, "...", *lines[-6:]])
        finally:
            button.disabled = False

    button.on_click(on_click)
    if autorun:
        on_click(None)
    return panel

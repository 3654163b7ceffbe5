"""The run panel (chapters 06 and 00): drive ``AgentRuntime`` with controls, watch it live.

``run_panel()`` is the widget: max turns, parallel tools on/off, fault rates for the model and
the tools, a seed, a run button, a live event log, the result summary and the turn timeline.
``run_with_settings()`` is what its button runs, callable directly so a notebook can print a
deterministic result next to the widget.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["run_with_settings", "format_event", "summarize_result", "run_panel"]


def run_with_settings(max_turns: int = 15, parallel: bool = True, model_fault_rate: float = 0.0,
                      tool_fault_rate: float = 0.0, seed: int = 0, *, task: str | None = None,
                      output_dir: str = "output", time_scale: float = 0.02,
                      on_event: Callable[[dict], Any] | None = None) -> tuple[Any, list[dict]]:
    """Run the research agent on the simulator with these settings; return (result, events).

    ``model_fault_rate`` is split evenly over 429, 5xx, timeouts, malformed arguments and
    truncated streams; ``tool_fault_rate`` over tool exceptions and hung tools.
    """
    from agentlab import research, sim
    from agentlab.runtime import AgentRuntime, RuntimeConfig
    from agentlab.sim.researcher import Researcher

    each = model_fault_rate / 5
    simulator = sim.Simulator(
        Researcher(), seed=seed,
        latency=sim.Latency(first_token_ms=300, tokens_per_second=80, time_scale=time_scale),
        faults=sim.Faults(rate_limit=each, server_error=each, timeout=each,
                          malformed_arguments=each, truncated_stream=each, retry_after=0.01,
                          seed=seed) if model_fault_rate else None)
    tools = research.research_tools(output_dir)
    if tool_fault_rate:
        research.with_tool_faults(tools, tool_fault_rate, seed=seed, hang_s=0.3, timeout=0.1)
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
    """state | reason | turns | tokens | tool calls ok/total | errors."""
    ok = sum(1 for c in result.tool_calls_made if c["success"])
    return (f"{result.state.value} | {result.stopped_reason} | {result.turns} turns | "
            f"{result.total_tokens} tokens | {ok}/{len(result.tool_calls_made)} tool calls ok | "
            f"{len(result.errors)} error(s)")


def run_panel(task: str | None = None, output_dir: str = "output"):
    """The run panel widget (see the module docstring)."""
    import ipywidgets as w
    import matplotlib.pyplot as plt
    from IPython.display import display

    from agentlab.viz.runtime import plot_turn_timeline

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

    def show(ev: dict) -> None:
        with log:
            line = format_event(ev)
            print(line, end="" if ev["type"] == "text" else "\n")

    def on_click(_: Any) -> None:
        button.disabled = True
        log.clear_output()
        plot.clear_output()
        summary.value = "<i>running...</i>"
        try:
            result, _events = run_with_settings(max_turns.value, parallel.value, model_faults.value,
                                                tool_faults.value, seed.value, task=task,
                                                output_dir=output_dir, on_event=show)
            summary.value = f"<b>{summarize_result(result)}</b>"
            with plot:
                display(plot_turn_timeline(result))
                plt.close("all")
        finally:
            button.disabled = False

    button.on_click(on_click)
    controls = w.VBox([max_turns, parallel, model_faults, tool_faults, seed, button])
    return w.VBox([w.HBox([controls]), summary, log, plot])

"""Widget for chapter 08 (``notebooks/08_research_agent.ipynb``): ask the research agent.

``research_explorer()`` is the widget: pick a question (or type one), set the tool fault rate,
run the research agent live on the offline simulator and corpus, watch its turns, then read the
trace, the head of its report and its tokens and cost per turn. ``ask_researcher()`` is what it
runs, callable directly so a notebook can print a deterministic result next to the widget.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

import ipywidgets as w

from .. import research, sim
from ..observe import AgentObserver
from ..runtime import AgentRuntime, RuntimeConfig
from ..viz.observe import plot_turn_cost
from .panel import Panel
from .runtime import FAULT_HANG_S, FAULT_TIMEOUT_S, format_event, summarize_result

__all__ = ["QUESTIONS", "ask_researcher", "format_research", "research_explorer"]

#: Questions the corpus (``data/corpus``) can answer.
QUESTIONS = [
    research.DEMO_TASK,
    "Research timeouts and cancellation in asyncio and write a short report.",
    "Research asyncio queues for producer-consumer pipelines and write a report.",
    "Research how to test asyncio code and write a report.",
    "Research threads, processes and asyncio as concurrency models and write a report.",
]


def ask_researcher(question: str, *, tool_fault_rate: float = 0.0, seed: int = 0,
                   model: str = "gpt-4o", output_dir: str | Path | None = None,
                   on_event: Callable[[dict], Any] | None = None) -> dict[str, Any]:
    """Run the research agent on ``question`` (simulated model, offline corpus).

    Returns ``{"result", "observer", "trace", "report"}``: the ``AgentResult``, the
    ``AgentObserver`` that recorded it (tokens and cost per turn at ``model``'s list price),
    the article-style trace lines and the report text ("" when none was written).
    """
    out = Path(output_dir) if output_dir is not None else Path(tempfile.mkdtemp(prefix="agentlab-"))
    tools = research.research_tools(out)
    if tool_fault_rate:
        research.with_tool_faults(tools, tool_fault_rate, seed=seed, hang_s=FAULT_HANG_S,
                                  timeout=FAULT_TIMEOUT_S)
    obs = AgentObserver("research", model=model, seed=seed)
    rt = AgentRuntime(sim.Simulator(sim.Researcher(), seed=seed).llm(model=model), tools,
                      system_prompt=research.SYSTEM_PROMPT, observer=obs,
                      config=RuntimeConfig(max_turns=15, max_total_time=60.0))
    result = None
    for ev in rt.run_stream(question):
        if on_event is not None:
            on_event(ev)
        if ev["type"] == "done":
            result = ev["result"]
    written = [c for c in result.tool_calls_made if c["name"] == "write_file" and c["success"]]
    report = ""
    if written:
        path = out / written[-1]["arguments"].get("filename", "")
        report = path.read_text(encoding="utf-8") if path.is_file() else ""
    return {"result": result, "observer": obs, "trace": research.format_trace(result),
            "report": report}


def format_research(res: dict[str, Any], report_lines: int = 8) -> str:
    """The summary line, the trace, the report's first lines and the run's cost."""
    cost = res["observer"].generate_report().cost_usd
    lines = [summarize_result(res["result"]), *res["trace"], ""]
    if res["report"]:
        lines += res["report"].splitlines()[:report_lines] + ["..."]
    else:
        lines.append("(no report written)")
    lines.append("cost: unknown (no price for the model)" if cost is None
                 else f"cost: ${cost:.4f} at {res['observer'].model} list prices")
    return "\n".join(lines)


def research_explorer(questions: list[str] | None = None, *, output_dir: str | Path | None = None
                      ) -> Panel:
    """A question picker running the research agent live; see the module docstring.

    Returns a ``Panel`` (an ipywidgets ``VBox``) that answers the first question when built.
    """
    questions = list(questions or QUESTIONS)
    pick = w.Combobox(value=questions[0], options=questions, description="question",
                      ensure_option=False, layout=w.Layout(width="98%"))
    faults = w.FloatSlider(0.0, min=0.0, max=0.5, step=0.05, description="tool fault rate")
    model = w.Dropdown(options=["gpt-4o", "gpt-4o-mini"], value="gpt-4o", description="price as")
    button = w.Button(description="Ask", button_style="primary", icon="play")
    log = w.Output(layout={"height": "160px", "overflow": "auto", "border": "1px solid #ccc"})
    out = w.Output()
    panel = Panel([pick, w.HBox([faults, model]), button, log, out],
                  title="research explorer (chapter 08)")

    def on_event(ev: dict) -> None:
        if ev["type"] != "text":
            with log:
                print(format_event(ev))

    def run(_: Any = None) -> None:
        button.disabled = True
        log.clear_output()
        try:
            res = ask_researcher(pick.value.strip() or questions[0], tool_fault_rate=faults.value,
                                 model=model.value, output_dir=output_dir, on_event=on_event)
            panel.show(out, format_research(res), plot_turn_cost(res["observer"]))
        finally:
            button.disabled = False

    button.on_click(run)
    model.observe(run, "value")  # the price changes the cost shown: ask again (was: silent)
    run()
    return panel

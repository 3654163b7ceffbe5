"""Checks for exercise 08, add a tool (``notebooks/exercises/08_add_a_tool.ipynb``).

The student writes ``add_count_pages(registry)``: it registers a tool ``count_pages(topic)``
that answers ``"N pages mention <topic>"``, N being the number of corpus pages whose title or
body contains ``topic`` (case-insensitive), with a Google-style docstring so the schema
describes the tool and its parameter. The check then runs the research agent with the extended
registry and looks for the tool in the trace and its answer in the report.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Callable

from .cases import Case, run_cases

__all__ = ["check_added_tool", "reference_count_pages", "run_research_with"]


def reference_count_pages(topic: str) -> str:
    """The reference answer for ``count_pages(topic)``."""
    from ..research import corpus  # lazy: heavy

    t = topic.lower()
    n = sum(1 for p in corpus().pages.values() if t in (p.title + "\n" + p.body).lower())
    return f"{n} pages mention {topic}"


def run_research_with(add_tool: Callable[[Any], Any], output_dir: str | Path | None = None):
    """Run the research agent (simulator ``Researcher``) with ``add_tool(registry)`` applied.

    Returns ``(result, report_text)``; the report text is "" when none was written.
    """
    from .. import sim  # lazy: heavy
    from ..research import DEMO_TASK, SYSTEM_PROMPT, research_tools  # lazy: heavy
    from ..runtime import AgentRuntime  # lazy: heavy
    from ..sim.researcher import Researcher  # lazy: heavy

    out = Path(output_dir or tempfile.mkdtemp(prefix="agentlab-ex08-"))
    registry = research_tools(out)
    add_tool(registry)
    rt = AgentRuntime(sim.Simulator(Researcher()).llm(), registry, system_prompt=SYSTEM_PROMPT)
    result = rt.run(DEMO_TASK)
    reports = sorted(out.glob("*.md"))
    return result, reports[0].read_text(encoding="utf-8") if reports else ""


def check_added_tool(add_tool: Callable[[Any], Any]) -> str:
    """Check ``add_tool(registry)`` (see the module docstring)."""
    from ..research import research_tools  # lazy: heavy

    def registry():
        reg = research_tools(tempfile.mkdtemp(prefix="agentlab-ex08-"))
        add_tool(reg)
        return reg

    def schema():
        fn = (registry().get_schema("count_pages") or {}).get("function", {})
        params = fn.get("parameters", {})
        return (bool(fn.get("description")), params.get("required"),
                params.get("properties", {}).get("topic", {}).get("type"),
                bool(params.get("properties", {}).get("topic", {}).get("description")))

    run = {}

    def agent():
        if not run:
            run["result"], run["report"] = run_research_with(add_tool)
        return run["result"], run["report"]

    return run_cases("add a tool", [
        Case("count_pages is registered next to the four research tools",
             lambda: sorted(registry().list_tools()),
             ["ask_user", "count_pages", "read_url", "web_search", "write_file"],
             hint="registry.register(count_pages) or decorate it with @registry.tool()."),
        Case("its schema describes the tool and its `topic` parameter", schema,
             (True, ["topic"], "string", True),
             hint="a docstring first line, a type hint `topic: str`, and an `Args:` section."),
        Case("it counts pages", lambda: [registry().get_function("count_pages")(t)
                                         for t in ("timeout", "TaskGroup", "no such thing")],
             [reference_count_pages(t) for t in ("timeout", "TaskGroup", "no such thing")],
             hint="loop over research.corpus().pages.values(); compare lower-cased text."),
        Case("the agent calls it and it succeeds",
             lambda: [(c["name"], c["success"]) for c in agent()[0].tool_calls_made
                      if c["name"] == "count_pages"], [("count_pages", True)],
             hint="the Researcher calls every tool it does not know once, before writing."),
        Case("its answer is in the report", lambda: "pages mention" in agent()[1], True,
             hint="return the text 'N pages mention <topic>'."),
    ])

"""Widget for chapter 07 (``notebooks/07_streaming.ipynb``): text as it arrives.

``stream_viewer()`` is the widget: latency sliders for the simulated model, a run button, the
text printed delta by delta while the agent streams, then time to first text against the time
the model call took, per turn. ``stream_run()`` is what it runs, callable directly so a notebook
can print a deterministic result next to the widget.
"""
from __future__ import annotations

import json
import time
from typing import Any, Callable

import ipywidgets as w

from .. import sim
from ..runtime import AgentRuntime
from ..tools import ToolRegistry
from ..viz.runtime import plot_stream_timing
from .panel import Panel

__all__ = ["stream_run", "format_stream_run", "stream_viewer"]

_ANSWER = "All items are fine. " + "Each lookup answered quickly and returned one hit. " * 4


def _talker(messages: list[dict], tools: list[dict]) -> Any:
    """A sentence before each of two lookups, then a longer answer (as in notebook 07)."""
    if len(messages) < 6:
        return [sim.text(f"Checking item {len(messages)}. "),
                sim.call("lookup", {"key": f"k{len(messages)}"})]
    return sim.text(_ANSWER)


def _lookup_registry(tool_ms: float) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str, limit: int = 1) -> str:
        """Look a key up.

        Args:
            key: what to look up.
            limit: how many results.
        """
        time.sleep(tool_ms / 1000)
        return json.dumps({"key": key, "hits": limit})

    return reg


def stream_run(first_token_ms: float = 300, tokens_per_second: float = 40, *,
               time_scale: float = 0.2, tool_ms: float = 50,
               on_event: Callable[[dict], Any] | None = None) -> dict[str, Any]:
    """Stream one agent run on the simulator; time each model call.

    Returns ``{"text", "events", "marks", "result"}``: the streamed text, every event, and per
    turn ``{"turn", "first_token_ms", "total_ms"}`` measured from the runtime's ``llm_start``,
    first ``text`` and ``llm_end`` hooks (real ms: the latency is scaled by ``time_scale``).
    """
    lat = sim.Latency(first_token_ms=first_token_ms, tokens_per_second=tokens_per_second,
                      time_scale=time_scale)
    rt = AgentRuntime(sim.Simulator(sim.Function(_talker), latency=lat).llm(),
                      _lookup_registry(tool_ms))
    marks: list[dict] = []

    def first_text(ev: dict) -> None:
        if marks and marks[-1]["first_token_ms"] is None:
            marks[-1]["first_token_ms"] = (time.perf_counter() - marks[-1]["t0"]) * 1000

    rt.on("llm_start", lambda ev: marks.append({"turn": ev["turn"], "t0": time.perf_counter(),
                                                "first_token_ms": None}))
    rt.on("text", first_text)
    rt.on("llm_end", lambda ev: marks[-1].update(total_ms=(time.perf_counter()
                                                           - marks[-1]["t0"]) * 1000))
    events = []
    for ev in rt.run_stream("check the items"):
        events.append(ev)
        if on_event is not None:
            on_event(ev)
    text = "".join(e["content"] for e in events if e["type"] == "text")
    return {"text": text, "events": events, "result": events[-1].get("result"),
            "marks": [{k: v for k, v in m.items() if k != "t0"} for m in marks]}


def format_stream_run(res: dict[str, Any]) -> str:
    """Per turn: time to the first text and to the end of the model call."""
    return "\n".join(
        f"turn {m['turn']}: first text after "
        + ("-" if m["first_token_ms"] is None else f"{m['first_token_ms']:.0f} ms")
        + f", model call done after {m.get('total_ms', 0):.0f} ms" for m in res["marks"])


def stream_viewer(*, time_scale: float = 0.2) -> Panel:
    """Latency sliders and a run button; the text appears delta by delta, then the timings.

    Returns a ``Panel`` (an ipywidgets ``VBox``) that streams one run when it is built.
    """
    first = w.IntSlider(300, min=50, max=1500, step=50, description="first token (ms)",
                        style={"description_width": "120px"})
    speed = w.IntSlider(40, min=10, max=200, step=10, description="tokens per s",
                        style={"description_width": "120px"})
    button = w.Button(description="Stream a run", button_style="primary", icon="play")
    live = w.Output(layout={"border": "1px solid #ccc", "min_height": "3em"})
    out = w.Output()
    panel = Panel([w.HBox([first, speed]), button, live, out], title="stream viewer (chapter 07)")

    def on_event(ev: dict) -> None:
        with live:
            if ev["type"] == "text":
                print(ev["content"], end="")
            elif ev["type"] in ("tool_start", "turn_end"):
                print(f" [{ev['type']}]", end="")

    def run(_: Any = None) -> None:
        button.disabled = True
        live.clear_output()
        try:
            res = stream_run(first.value, speed.value, time_scale=time_scale, on_event=on_event)
            fig = plot_stream_timing(res["marks"], title="Time to first text vs the whole call "
                                     f"(latency scaled x{time_scale:g})")
            panel.show(out, format_stream_run(res), fig)
            panel.text = res["text"] + "\n\n" + panel.text
        finally:
            button.disabled = False

    button.on_click(run)
    run()
    return panel

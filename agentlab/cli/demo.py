"""``agentlab demo``: the research agent of chapter 08, shown turn by turn as it works.

Offline it runs on the built-in simulator (the article's trace, latencies scaled down); with
``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` it uses that endpoint (``research.demo_llm``). The
first line says which model and endpoint; then each turn appears as it happens: the model
call and how long it took, the tool calls it asked for, each tool's outcome and time, the
answer streamed as it arrives, and a summary.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, TextIO

from ..research import DEMO_TASK, demo_llm, format_call, run_demo

__all__ = ["add_parser", "run", "Progress", "describe_endpoint", "endpoint_failure"]

#: Error codes that mean "the endpoint itself did not work", not "the agent went wrong".
ENDPOINT_CODES = ("provider_unavailable", "provider_timeout", "auth_failed", "bad_request")


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the research agent and watch it work",
                          description=__doc__.splitlines()[0].split(": ", 1)[1])
    demo.add_argument("--output-dir", default="output", help="where the report is written")
    demo.add_argument("--time-scale", type=float, default=0.05,
                      help="simulator latency scale (1 = the article's pace, about 15 s)")
    demo.add_argument("--max-retries", type=int, default=3,
                      help="retries per model call on a real endpoint (default 3)")
    demo.set_defaults(func=run)


def describe_endpoint(llm: Any) -> str:
    """One line naming the model and where it runs."""
    described = getattr(llm, "endpoint", None)
    if described:
        return described
    base = str(getattr(getattr(llm, "client", None), "base_url", "") or "")
    if "sim.local" in base:
        return (f"{llm.model} on the built-in simulator (offline; set OPENAI_API_KEY or "
                "OPENAI_BASE_URL for a real model)")
    return f"{llm.model} at {base}"


def endpoint_failure(result: Any, llm: Any) -> str | None:
    """A one-line message when the run failed because the endpoint did not answer or refused
    (unreachable, timed out, wrong key, unknown model), else None."""
    if result.state.name != "ERROR" or result.tool_calls_made:
        return None
    err = next((e for e in result.errors if e.get("code") in ENDPOINT_CODES), None)
    if err is None:
        return None
    url = str(getattr(getattr(llm, "client", None), "base_url", "") or "the endpoint")
    what = {"provider_unavailable": f"cannot reach the model at {url}",
            "provider_timeout": f"the model at {url} did not answer in time",
            "auth_failed": f"the endpoint at {url} refused the key",
            "bad_request": f"the endpoint at {url} rejected the request"}[err["code"]]
    return f"{what}: {err['message']}"


class Progress:
    """Writes hook events as readable progress lines, flushing as it goes (the summary at the
    end lists the run's errors, so they are not repeated here)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.turn = 0
        self._line_open = False
        self._texting = False
        self._started = 0  # tool calls started in this turn
        self._ended = 0

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()
        self._line_open = not text.endswith("\n")

    def end_line(self) -> None:
        if self._line_open:
            self._write("\n")

    def __call__(self, event: dict) -> None:
        kind = event["type"]
        if kind == "turn_start":
            self.end_line()
            self.turn, self._texting, self._started, self._ended = event["turn"], False, 0, 0
            self._write(f"Turn {self.turn}: calling LLM... ")
        elif kind == "text":
            if not self._texting:
                self._write("\n")
                self._texting = True
            self._write(event["content"])
        elif kind == "llm_end":
            ms = f"({event.get('duration_ms', 0):.0f} ms)"
            if self._texting:
                self._write("\n   ")
            if not event.get("tool_calls"):
                self._write(f"[no tool_calls] -> Done {ms}\n")
            else:
                self._write(f"{ms} -> ")
        elif kind == "tool_start":
            if self._started and not self._line_open:
                self._write("   -> ")
            elif self._started:
                self._write(" + ")
            self._started += 1
            self._write(format_call(event["name"], event.get("arguments") or {}))
        elif kind == "tool_end":
            if self._line_open:
                self._write(" [parallel]\n" if self._started - self._ended > 1 else "\n")
            self._ended += 1
            outcome = "ok" if event.get("ok") else f"FAILED ({event.get('error_code')})"
            self._write(f"   {event['name']} {outcome} {event.get('duration_ms', 0):.1f} ms\n")
        elif kind == "error":  # listed once in the summary (or as the one-line failure)
            self.end_line()


def run(args: argparse.Namespace) -> int:
    llm = demo_llm(time_scale=args.time_scale, max_retries=args.max_retries)
    print(f"agentlab demo: {describe_endpoint(llm)}")
    print(f"Task: {DEMO_TASK}\n", flush=True)
    progress = Progress()
    summary: list[str] = []
    try:
        result = run_demo(summary.append, llm=llm, output_dir=args.output_dir,
                          on_event=progress)
    except KeyboardInterrupt:
        progress.end_line()
        print(f"agentlab demo: interrupted (Ctrl-C) during turn {progress.turn}; "
              "nothing else was run", file=sys.stderr)
        return 130
    progress.end_line()
    failure = endpoint_failure(result, llm)
    if failure:
        print(f"agentlab demo: {failure}", file=sys.stderr)
        return 1
    print("\n".join(summary))
    return 0 if result.state.name == "FINISHED" else 1

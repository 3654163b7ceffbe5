"""The research assistant of the article (section 6), over an offline corpus.

Taught in ``notebooks/08_research_agent.ipynb``. The article's tools return canned strings
("Result 1 for ...", "Key points: 1) Fundamental concepts ..."), so the agent's report could
only repeat them. Here the same four tools work over the offline web of ``agentlab.corpus``:
fifteen short pages about asyncio written for this project, each with a stable fake URL.

- ``web_search(query, max_results=5)`` ranks the pages by a keyword score (title and tags
  weigh more than the body; rare words weigh more than common ones) and returns JSON.
- ``read_url(url)`` returns a page's text, or fails with a clear "not found" error.
- ``write_file(filename, content)`` writes inside ``output_dir`` only; a path that would leave
  it (``../x``, ``/etc/x``) is refused. The directory is created on the first write. Writes
  are atomic (``agentlab.atomic.atomic_write``: a temporary file per call, then a rename), so
  what it reports matches the file even when parallel calls write the same name.
- ``ask_user(question)`` answers from ``answers`` (a list, dict or function) when given, so a
  notebook never blocks on ``input()``.

``research_tools(output_dir, answers)`` builds a fresh ``ToolRegistry`` with the four tools;
``run_demo()`` runs the whole agent (``agentlab demo``) and prints the article's "execution
trace"; ``demo_llm()`` picks its model in one place: ``LLMClient.from_env`` with the
simulator's ``Researcher`` policy when no endpoint is configured.
"""
from __future__ import annotations

import inspect
import json
import os
import random
import threading
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .atomic import atomic_write
from .corpus import CORPUS_DIR, Corpus, Page, build_index, corpus
from .errors import ToolError
from .runtime import AgentRuntime, RuntimeConfig
from .sim.core import SimulatedAPI
from .sim.faults import Latency
from .sim.researcher import Researcher
from .tools import ToolRegistry

if TYPE_CHECKING:
    from .llm import LLMClient
    from .runtime import AgentResult

__all__ = [
    "SYSTEM_PROMPT", "DEMO_TASK", "CORPUS_DIR", "Page", "Corpus", "corpus", "build_index",
    "web_search", "read_url", "research_tools", "with_tool_faults", "demo_llm", "run_demo",
    "format_trace", "format_call", "summary_lines",
]

#: The article's research-assistant prompt, with its workflow made explicit.
SYSTEM_PROMPT = """You are a research assistant. Workflow:
1. Search for information using web_search.
2. Read the most promising pages using read_url (at least 2 sources; read independent pages in parallel).
3. Synthesize the findings into a markdown report that cites the URLs you read, and save it with write_file.
4. Present a short summary with the sources. Use ask_user only if the topic is unclear."""

#: The article's task (in English; the Chinese original works too).
DEMO_TASK = "Research Python asyncio best practices and write them up as a technical report saved to a file."


def web_search(query: str, max_results: int = 5) -> str:
    """Search the web for pages about a topic.

    Args:
        query: Search keywords.
        max_results: Maximum number of results to return.
    """
    return json.dumps(corpus().search(query, max_results), ensure_ascii=False)


def read_url(url: str) -> str:
    """Read the text of a web page.

    Args:
        url: The page address, as returned by web_search.
    """
    page = corpus().read(url)
    if page is None:
        raise ToolError("not_found", f"Not found: {url!r} is not a known page. Use a URL "
                        "returned by web_search.", details={"url": url})
    return page.text()


def _safe_path(output_dir: Path, filename: str) -> Path:
    """``output_dir/filename``, refusing anything that would land outside ``output_dir``."""
    if not filename or not filename.strip() or "\x00" in filename:
        raise ToolError("invalid_arguments", "filename is empty; give a name such as 'report.md'.")
    if os.path.isabs(filename) or filename.startswith(("~", "\\")):
        raise ToolError("invalid_arguments", f"filename {filename!r} is absolute; give a name "
                        "relative to the output folder, such as 'report.md'.")
    root = output_dir.resolve()
    target = (root / filename).resolve()
    if target == root or root not in target.parents:
        raise ToolError("invalid_arguments", f"filename {filename!r} would leave the output "
                        "folder; give a plain name such as 'report.md'.")
    return target


def research_tools(output_dir: str | Path = "output",
                   answers: list[str] | dict[str, str] | Callable[[str], str] | None = None
                   ) -> ToolRegistry:
    """A fresh ``ToolRegistry`` with the article's four research tools.

    Args:
        output_dir: folder that ``write_file`` writes into (created on the first write).
        answers: replies for ``ask_user``: a list (used in order), a dict (question -> answer,
            key ``"*"`` as fallback) or a function ``question -> answer``. ``None`` asks
            ``input()``, as the article does.
    """
    out = Path(output_dir)
    registry = ToolRegistry()
    pending = list(answers) if isinstance(answers, (list, tuple)) else None

    registry.register(web_search)
    registry.register(read_url)

    def write_file(filename: str, content: str) -> str:
        """Write a text file into the output folder.

        Args:
            filename: File name inside the output folder, e.g. 'report.md'.
            content: The text to write.
        """
        target = _safe_path(out, filename)
        target.parent.mkdir(parents=True, exist_ok=True)
        # atomic (a reader never sees half a report), through a temporary file of its own per
        # call: parallel writes to one name each succeed, and the last one wins whole
        atomic_write(target, content.encode("utf-8"), ToolError, "tool_failed")
        # the name inside the output folder only: the model needs no machine-specific path
        shown = target.relative_to(out.resolve()).as_posix()
        return f"Wrote {len(content)} chars to {shown} in the output folder"

    def ask_user(question: str) -> str:
        """Ask the user a clarifying question and return the answer.

        Args:
            question: The question to ask.
        """
        if answers is None:
            print(f"\nAgent asks: {question}")
            return input("Your answer: ")
        if callable(answers):
            return str(answers(question))
        if isinstance(answers, dict):
            return str(answers.get(question, answers.get("*", "No answer; use your judgement.")))
        return pending.pop(0) if pending else "No answer; use your judgement."

    registry.register(write_file, side_effects=True)
    registry.register(ask_user, timeout=None)
    return registry


def with_tool_faults(registry: ToolRegistry, rate: float, *, seed: int = 0,
                     hang_s: float = 0.5, timeout: float | None = 0.05) -> ToolRegistry:
    """Wrap every tool of ``registry`` (in place) so a call fails with probability ``rate``:
    half of the failures raise, half hang for ``hang_s`` (past the tool ``timeout``).

    The draw depends on (seed, tool, arguments, attempt number) only, never on thread timing,
    so runs with parallel calls are reproducible. Used by the soak and the run panel.
    """
    seen: Counter = Counter()
    lock = threading.Lock()
    for name in registry.list_tools():
        fn, opts = registry.get_function(name), registry.get_options(name)

        def wrapped(*args: Any, _fn: Callable = fn, _name: str = name, **kwargs: Any) -> Any:
            key = f"{seed}|{_name}|{json.dumps([args, kwargs], sort_keys=True, default=str)}"
            with lock:
                seen[key] += 1
                attempt = seen[key]
            x = random.Random(f"{key}|{attempt}").random()
            if x < rate / 2:
                raise RuntimeError(f"injected failure in {_name}")
            if x < rate:
                threading.Event().wait(hang_s)  # hung: the executor must not wait for it
            return _fn(*args, **kwargs)

        wrapped.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        wrapped.__doc__, wrapped.__annotations__ = fn.__doc__, getattr(fn, "__annotations__", {})
        registry.register(wrapped, name=name, replace=True, side_effects=opts["side_effects"],
                          timeout=timeout if timeout is not None else opts["timeout"])
    return registry


# -- the demo (used by `agentlab demo` and notebooks 00/08) ---------------------------------

def demo_llm(time_scale: float = 0.05, **llm_kwargs: Any) -> "LLMClient":
    """The demo's model: ``LLMClient.from_env`` (a real endpoint when the environment names
    one), else the simulator playing the article's ``Researcher`` trace, its latencies scaled
    by ``time_scale`` (1.0 = the article's pace, about 15 s for the whole run)."""
    from .llm import LLMClient  # lazy: heavy (openai)

    sim = SimulatedAPI(Researcher(), latency=Latency(first_token_ms=40, tokens_per_second=400,
                                                  time_scale=time_scale), seed=0)
    return LLMClient.from_env(simulator=sim, **llm_kwargs)


def format_call(name: str, args: dict) -> str:
    """A tool call as the trace shows it: ``web_search("asyncio")``, ``write_file("r.md", ...)``."""
    if name == "write_file":
        return f'write_file("{args.get("filename", "")}", ...)'
    first = next(iter(args.values()), "") if args else ""
    return f'{name}("{first}")' if isinstance(first, str) else f"{name}({first})"


def format_trace(result: "AgentResult") -> list[str]:
    """The article's trace lines (one per turn) from ``result.tool_calls_made``."""
    by_turn: dict[int, list[dict]] = {}
    for tc in result.tool_calls_made:
        by_turn.setdefault(tc["turn"], []).append(tc)
    lines = []
    for turn in range(1, result.turns + 1):
        calls = by_turn.get(turn)
        if calls:
            text = " + ".join(format_call(c["name"], c.get("arguments") or {}) for c in calls)
            lines.append(f"Turn {turn}: calling LLM... -> {text}"
                         + (" [parallel]" if len(calls) > 1 else ""))
        elif turn == result.turns and result.stopped_reason == "completed":
            lines.append(f"Turn {turn}: calling LLM... -> [no tool_calls] -> Done")
        else:
            lines.append(f"Turn {turn}: calling LLM... -> (no answer)")
    return lines


def summary_lines(result: "AgentResult", output_dir: str | Path, *, per_call: bool = True
                  ) -> list[str]:
    """The lines after the trace: totals, each tool call's timing (``per_call``), the errors,
    and where the report went."""
    lines = ["=" * 50, f"Turns: {result.turns} | Tokens: {result.total_tokens} | "
             f"{result.duration_ms / 1000:.2f} s | {result.stopped_reason} ({result.state.value})"]
    if per_call:
        lines += [f"  Turn {tc['turn']}: {tc['name']}() {'OK' if tc['success'] else 'FAIL'} "
                  f"{tc['duration_ms']:.1f} ms" for tc in result.tool_calls_made]
    lines += [f"  error [{err['code']}] {err['message']}" for err in result.errors]
    written = [tc for tc in result.tool_calls_made if tc["name"] == "write_file" and tc["success"]]
    if written:
        path = (Path(output_dir) / written[-1]["arguments"].get("filename", "")).as_posix()
        lines.append(f"Report written to {path}")
    else:
        lines.append("No report was written.")
    return lines


def run_demo(print_fn: Callable[[str], Any] = print, *, llm: "LLMClient | None" = None,
             output_dir: str | Path = "output", task: str = DEMO_TASK, config: Any = None,
             on_event: Callable[[dict], Any] | None = None) -> "AgentResult":
    """Run the research agent and print the article's trace, a summary, and the report path.

    The model is ``llm``, else ``demo_llm()``. With ``on_event`` the run streams
    (``AgentRuntime.run_stream``) and every hook event (turns, model calls, tool calls, text
    deltas) goes to ``on_event`` as it happens, which then shows the progress: only the
    summary is printed at the end. Returns the ``AgentResult``.
    """
    agent = AgentRuntime(llm or demo_llm(), research_tools(output_dir), system_prompt=SYSTEM_PROMPT,
                         config=config or RuntimeConfig(max_turns=15, max_total_time=120.0))
    if on_event is None:
        result = agent.run(task)
        for line in format_trace(result):
            print_fn(line)
    else:
        agent.on("*", on_event)
        result = None
        for event in agent.run_stream(task):
            result = event.get("result", result)
    for line in summary_lines(result, output_dir, per_call=on_event is None):
        print_fn(line)
    if on_event is None:  # streamed, the answer was shown as it came
        print_fn("")
        print_fn(result.content)
    return result

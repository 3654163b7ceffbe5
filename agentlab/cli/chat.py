"""``agentlab chat``: talk with the agent in the terminal, one conversation, tools on.

    agentlab chat                      an interactive conversation (/reset, /exit, Ctrl-D)
    agentlab chat "how do timeouts work?"   one question, one answer

Each question runs the chapter 06-07 loop (``AgentRuntime.run_stream``) on the same history,
so follow-ups ("tell me more") know what came before. The tools are the research tools'
``web_search`` and ``read_url`` over the offline library of chapter 08. Replies stream as
they arrive; each tool call is shown on its own line, and a terminal shows "thinking…" until
the first of them. A pasted block of several lines is one question (lines that arrive together
are joined), not one run per line. Ctrl-C stops a reply (the conversation goes on); Ctrl-C at
the prompt, Ctrl-D or ``/exit`` leaves.

Offline the model is the simulator playing a small librarian (``librarian``): it searches the
library for your question, reads the best page it has not cited yet, and answers with the
sentence that fits best and its source. With ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` set, a
real model answers instead.
"""
from __future__ import annotations

import argparse
import json
import re
import select
import sys
from typing import Any

from ..corpus import best_sentence, terms
from ..research import format_call, read_url, web_search
from ..runtime import AgentRuntime, RuntimeConfig
from ..sim.core import SimulatedAPI
from ..sim.faults import Latency
from ..sim.policies import Call, Function, Text
from ..tools import ToolRegistry
from .demo import describe_endpoint, endpoint_failure

try:  # line editing and history for input(), where the platform has it
    import readline  # noqa: F401
except ImportError:  # Windows
    pass

__all__ = ["add_parser", "run", "librarian", "SYSTEM_PROMPT", "Conversation"]

SYSTEM_PROMPT = """You are a helpful assistant for people learning how agents and Python \
asyncio work. Search the offline library with web_search, read the best page with read_url, \
and answer briefly, citing the URL you used. Follow-up questions refer to the conversation."""

THINKING = "thinking…"
HELP = "/reset starts a new conversation, /exit leaves (or Ctrl-D); Ctrl-C stops a reply."
_FILLER = frozenset("""more tell me go on continue else about that it this please again another
anything something explain elaborate detail details further what why how next ok okay yes i we
my our put use using get make should would could does did work works way thing things""".split())
_URL = re.compile(r"https?://[^\s)\]]+")


# -- the offline model ----------------------------------------------------------------------

def _topic(users: list[str]) -> tuple[str, bool]:
    """The words to search for, and whether they come from an earlier question."""
    for i, question in enumerate(reversed(users)):
        words = [w for w in terms(question) if w not in _FILLER]
        if words:
            return " ".join(dict.fromkeys(words)), i > 0
    return "", False


def librarian(messages: list[dict], tools: list[dict]) -> Any:
    """The simulator's chat policy: search, read one page not cited yet, answer from it.

    Decided from the request alone (like every policy): the last user message, the tool
    results since, and the URLs earlier answers cited.
    """
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    topic, follow_up = _topic(users)
    if not topic:
        return Text("Ask me about Python asyncio or agent runtimes, for example "
                    "\"how do I put a timeout on a call?\"")
    cited = {u.rstrip(".,") for m in messages[:last] if m.get("role") == "assistant"
             for u in _URL.findall(m.get("content") or "")}
    results = [m.get("content") or "" for m in messages[last + 1:] if m.get("role") == "tool"]
    if not results:
        return Call("web_search", {"query": topic})
    if len(results) == 1:
        try:
            hits = [h for h in json.loads(results[0]) if isinstance(h, dict) and "url" in h]
        except ValueError:
            return Text(f"The search failed ({results[0][:120]}); please ask again.")
        fresh = [h["url"] for h in hits if h["url"] not in cited]
        if fresh:
            return Call("read_url", {"url": fresh[0]})
        return Text(f"I have already shown you every page the library has on {topic}."
                    if hits else f"The offline library has nothing on \"{topic}\".")
    page = results[-1]
    if not page.startswith("# "):
        return Text(f"I could not read that page: {page[:160]}")
    title, _, rest = page.partition("\n")
    url = rest.partition("\n")[0].removeprefix("URL: ").strip()
    point = best_sentence(rest.partition("\n")[2], topic, width=400)
    lead = f"More on {topic}: " if follow_up else ""
    return Text(f"{lead}{point}\nSource: {title[2:]} ({url})")


# -- the conversation -----------------------------------------------------------------------

def chat_tools() -> ToolRegistry:
    """``web_search`` and ``read_url`` over the offline library."""
    registry = ToolRegistry()
    registry.register(web_search)
    registry.register(read_url)
    return registry


class Conversation:
    """One conversation: a runtime whose history carries over from question to question."""

    def __init__(self, llm: Any, out: Any = None) -> None:
        self.llm, self.out = llm, out or sys.stdout
        self.reset()

    def reset(self) -> None:
        self.runtime = AgentRuntime(self.llm, chat_tools(), system_prompt=SYSTEM_PROMPT,
                                    config=RuntimeConfig(max_turns=8, max_total_time=300.0))

    def _write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def ask(self, question: str) -> bool:
        """Stream the answer to ``question``; False if the run did not finish."""
        events = self.runtime.run_stream(question)
        texting, result = False, None
        waiting = _is_terminal(self.out)  # "thinking…" until the first event, on a terminal
        if waiting:
            self._write(THINKING)
        try:
            for event in events:
                if waiting:
                    self._write("\r\x1b[K")  # erase "thinking…"
                    waiting = False
                kind = event["type"]
                if kind == "tool_start":
                    self._write(("\n" if texting else "") + "  · "
                                + format_call(event["name"], event.get("arguments") or {}))
                    texting = False
                elif kind == "tool_end":
                    outcome = "ok" if event.get("ok") else f"failed ({event.get('error_code')})"
                    self._write(f"  {outcome} {event.get('duration_ms', 0):.1f} ms\n")
                elif kind == "text":
                    if not texting:
                        self._write("agent> ")
                        texting = True
                    self._write(event["content"])
                elif kind == "done":
                    result = event["result"]
        except KeyboardInterrupt:
            events.close()  # ends the run cleanly; the history stays valid
            self._write(("\r\x1b[K" if waiting else "\n") + "(stopped)\n")
            return False
        self._write("\n" if texting else "")
        if result.state.name != "FINISHED":
            why = endpoint_failure(result, self.llm) or result.stopped_reason + "".join(
                f"; [{e['code']}] {e['message']}" for e in result.errors[:1])
            self._write(f"(no answer: {why})\n")
            return False
        return True


def _is_terminal(stream: Any) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def _more_waiting(seconds: float = 0.05) -> bool:
    """True if more input is already there: a paste arrives at once, a person types slower.
    (input() reads through readline a character at a time, so what it has not taken yet is
    still in the terminal, where select sees it.)"""
    if not _is_terminal(sys.stdin):
        return False
    try:
        return bool(select.select([sys.stdin], [], [], seconds)[0])
    except (OSError, ValueError):  # no select on this stdin (Windows consoles)
        return False


def read_question(prompt: str = "you> ") -> str:
    """One question from the terminal: the line typed, joined with any lines pasted with it."""
    lines = [input(prompt)]
    while _more_waiting():
        try:
            lines.append(input(""))
        except EOFError:  # a paste that ended without a newline, then Ctrl-D
            break
    return "\n".join(lines).strip()


def add_parser(sub: argparse._SubParsersAction) -> None:
    chat = sub.add_parser("chat", help="talk with the agent in the terminal",
                          description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                          epilog=__doc__.split("\n\n", 1)[1],
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    chat.add_argument("question", nargs="?", help="ask one question and exit")
    chat.add_argument("--time-scale", type=float, default=1.0,
                      help="simulator latency scale (default 1: a model's pace)")
    chat.add_argument("--max-retries", type=int, default=3,
                      help="retries per model call on a real endpoint (default 3)")
    chat.set_defaults(func=run)


def make_llm(args: argparse.Namespace) -> Any:
    from ..llm import LLMClient  # lazy: heavy (openai)

    latency = Latency(first_token_ms=150, tokens_per_second=80, time_scale=args.time_scale)
    sim = SimulatedAPI(Function(librarian), latency=latency, seed=0)
    return LLMClient.from_env(simulator=sim, max_retries=args.max_retries)


def run(args: argparse.Namespace) -> int:
    llm = make_llm(args)
    talk = Conversation(llm)
    print(f"agentlab chat: {describe_endpoint(llm)}", flush=True)
    if args.question:
        return 0 if talk.ask(args.question) else 1
    print(f"Tools: web_search, read_url (the offline library of chapter 08). {HELP}", flush=True)
    hinted = False
    while True:
        try:
            line = read_question()
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C at the prompt: leave
            print("\nbye")
            return 0
        if not line:
            if not hinted:
                print(f"(type a question; {HELP})")
                hinted = True
            continue
        if line in ("/exit", "/quit"):
            print("bye")
            return 0
        if line == "/reset":
            talk.reset()
            print("(new conversation)")
        elif line == "/help":
            print(HELP)
        elif line.startswith("/"):
            print(f"unknown command {line.split()[0]}; {HELP}")
        else:
            talk.ask(line)

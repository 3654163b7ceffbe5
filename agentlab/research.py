"""The research assistant of the article (section 6), over an offline corpus.

Taught in ``notebooks/08_research_agent.ipynb``. The article's tools return canned strings
("Result 1 for ...", "Key points: 1) Fundamental concepts ..."), so the agent's report could
only repeat them. Here the same four tools work over ``data/corpus/``: fifteen short pages
about asyncio written for this project, each with a stable fake URL.

- ``web_search(query, max_results=5)`` ranks the pages by a keyword score (title and tags
  weigh more than the body; rare words weigh more than common ones) and returns JSON.
- ``read_url(url)`` returns a page's text, or fails with a clear "not found" error.
- ``write_file(filename, content)`` writes inside ``output_dir`` only; a path that would leave
  it (``../x``, ``/etc/x``) is refused. The directory is created on the first write.
- ``ask_user(question)`` answers from ``answers`` (a list, dict or function) when given, so a
  notebook never blocks on ``input()``.

``research_tools(output_dir, answers)`` builds a fresh ``ToolRegistry`` with the four tools;
``run_demo()`` runs the whole agent and prints the article's "execution trace".
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from .errors import ToolError
from .models import DEFAULT_MODEL

if TYPE_CHECKING:  # imported lazily at call time: importing this module does no work
    from .llm import LLMClient
    from .runtime import AgentResult
    from .tools import ToolRegistry

__all__ = [
    "SYSTEM_PROMPT", "DEMO_TASK", "CORPUS_DIR", "Page", "Corpus", "corpus", "build_index",
    "web_search", "read_url", "research_tools", "with_tool_faults", "run_demo", "format_trace",
]

CORPUS_DIR = Path(__file__).resolve().parent / "data" / "corpus"

#: The article's research-assistant prompt, with its workflow made explicit.
SYSTEM_PROMPT = """You are a research assistant. Workflow:
1. Search for information using web_search.
2. Read the most promising pages using read_url (at least 2 sources; read independent pages in parallel).
3. Synthesize the findings into a markdown report that cites the URLs you read, and save it with write_file.
4. Present a short summary with the sources. Use ask_user only if the topic is unclear."""

#: The article's task (in English; the Chinese original works too).
DEMO_TASK = "Research Python asyncio best practices and write them up as a technical report saved to a file."

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("""a an and are as at be by can do for from how in into is it its of on or
that the this to what when which with you your""".split())


def _terms(text: str) -> list[str]:
    """Lower-case words without stop words, with a light plural strip (pitfalls -> pitfall)."""
    out = []
    for w in _WORD.findall(text.lower()):
        if w in _STOP:
            continue
        if len(w) > 4 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


@dataclass
class Page:
    """One corpus page: its URL, title, tags and markdown body."""

    url: str
    title: str
    tags: list[str]
    body: str
    file: str = ""
    _tf: Counter = field(default_factory=Counter, repr=False)
    _title_terms: set = field(default_factory=set, repr=False)
    _tag_terms: set = field(default_factory=set, repr=False)

    def text(self) -> str:
        """The page as ``read_url`` returns it: title, URL, then the body."""
        return f"# {self.title}\nURL: {self.url}\n\n{self.body.strip()}\n"


def _parse_page(path: Path) -> Page:
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) < 3 or not lines[0].startswith("# ") or not lines[1].startswith("URL:"):
        raise ValueError(f"{path.name}: expected '# Title', 'URL: ...', 'Tags: ...' on lines 1-3")
    tags = [t.strip() for t in lines[2].split(":", 1)[1].split(",") if t.strip()]
    page = Page(url=lines[1].split(":", 1)[1].strip(), title=lines[0][2:].strip(), tags=tags,
                body="\n".join(lines[3:]).strip(), file=path.name)
    page._tf = Counter(_terms(page.body))
    page._title_terms = set(_terms(page.title))
    page._tag_terms = set(_terms(" ".join(tags)))
    return page


def build_index(corpus_dir: str | Path = CORPUS_DIR) -> dict:
    """(Re)write ``index.json`` from the pages' first three lines; returns the index."""
    corpus_dir = Path(corpus_dir)
    pages = [_parse_page(p) for p in sorted(corpus_dir.glob("*.md")) if p.name != "README.md"]
    index = {"format_version": 1, "pages": [
        {"file": p.file, "url": p.url, "title": p.title, "tags": p.tags,
         "words": len(p.body.split())} for p in pages]}
    (corpus_dir / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n",
                                           encoding="utf-8")
    return index


def _norm_url(url: str) -> str:
    return url.strip().strip("<>\"'").split("#", 1)[0].rstrip("/")


class Corpus:
    """The offline web: pages loaded on first use, searched by a keyword score."""

    def __init__(self, corpus_dir: str | Path = CORPUS_DIR) -> None:
        self.dir = Path(corpus_dir)
        self._pages: dict[str, Page] | None = None

    @property
    def pages(self) -> dict[str, Page]:
        """URL -> Page, read from ``index.json`` (or the pages themselves) on first access."""
        if self._pages is None:
            index_file = self.dir / "index.json"
            if index_file.exists():
                files = [e["file"] for e in json.loads(index_file.read_text("utf-8"))["pages"]]
            else:
                files = [p.name for p in sorted(self.dir.glob("*.md")) if p.name != "README.md"]
            pages = [_parse_page(self.dir / f) for f in files]
            self._pages = {_norm_url(p.url): p for p in pages}
        return self._pages

    def search(self, query: str, max_results: int = 5) -> list[dict[str, Any]]:
        """Pages ranked by score: sum over query words of idf x (3*title + 2*tags + log(1+tf))."""
        pages = list(self.pages.values())
        idf = {}
        for term in set(_terms(query)):
            df = sum(1 for p in pages
                     if term in p._tf or term in p._title_terms or term in p._tag_terms)
            if df:
                idf[term] = math.log(1 + len(pages) / df)  # rare words weigh more
        scored = []
        for page in pages:
            score = 0.0
            for term, weight in idf.items():
                hits = (3.0 * (term in page._title_terms) + 2.0 * (term in page._tag_terms)
                        + math.log1p(page._tf.get(term, 0)))
                score += weight * hits
            if score > 0:
                scored.append((score, page))
        scored.sort(key=lambda sp: (-sp[0], sp[1].url))  # ties broken by URL: deterministic
        return [{"title": p.title, "url": p.url, "snippet": _snippet(p, query),
                 "score": round(s, 2)} for s, p in scored[:max(0, max_results)]]

    def read(self, url: str) -> Page | None:
        """The page at ``url`` (trailing slash and #fragment ignored), or None."""
        return self.pages.get(_norm_url(url))


def _snippet(page: Page, query: str, width: int = 160) -> str:
    """The first body sentence that mentions a query word (else the first sentence)."""
    terms = set(_terms(query))
    text = re.sub(r"```.*?```", " ", page.body, flags=re.S)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]
    # the sentence sharing most words with the query; the earliest one wins ties
    best = max(sentences, key=lambda s: len(terms & set(_terms(s))), default="")
    return best if len(best) <= width else best[: width - 3].rstrip() + "..."


@lru_cache(maxsize=1)
def corpus() -> Corpus:
    """The shared default corpus (``data/corpus/``), loaded on first use."""
    return Corpus()


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
                   ) -> "ToolRegistry":
    """A fresh ``ToolRegistry`` with the article's four research tools.

    Args:
        output_dir: folder that ``write_file`` writes into (created on the first write).
        answers: replies for ``ask_user``: a list (used in order), a dict (question -> answer,
            key ``"*"`` as fallback) or a function ``question -> answer``. ``None`` asks
            ``input()``, as the article does.
    """
    from .tools import ToolRegistry

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
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(content, encoding="utf-8")
        os.replace(tmp, target)  # atomic: a reader never sees half a report
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


def with_tool_faults(registry: "ToolRegistry", rate: float, *, seed: int = 0,
                     hang_s: float = 0.5, timeout: float | None = 0.05) -> "ToolRegistry":
    """Wrap every tool of ``registry`` (in place) so a call fails with probability ``rate``:
    half of the failures raise, half hang for ``hang_s`` (past the tool ``timeout``).

    The draw depends on (seed, tool, arguments, attempt number) only, never on thread timing,
    so runs with parallel calls are reproducible. Used by the soak and the run panel.
    """
    import inspect
    import random
    import threading

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

def _demo_llm() -> "LLMClient":
    """A real endpoint when OPENAI_API_KEY is set, else the simulator's Researcher policy."""
    from .llm import LLMClient

    if os.environ.get("OPENAI_API_KEY"):
        return LLMClient.from_env()
    from .sim import Latency, Simulator
    from .sim.researcher import Researcher

    sim = Simulator(Researcher(), latency=Latency(first_token_ms=40, tokens_per_second=400,
                                                  time_scale=0.05), seed=0)
    return sim.llm(model=os.environ.get("AGENTLAB_MODEL") or DEFAULT_MODEL)


def _call_text(name: str, args: dict) -> str:
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
            text = " + ".join(_call_text(c["name"], c.get("arguments") or {}) for c in calls)
            lines.append(f"Turn {turn}: calling LLM... -> {text}"
                         + (" [parallel]" if len(calls) > 1 else ""))
        elif turn == result.turns and result.stopped_reason == "completed":
            lines.append(f"Turn {turn}: calling LLM... -> [no tool_calls] -> Done")
        else:
            lines.append(f"Turn {turn}: calling LLM... -> (no answer)")
    return lines


def run_demo(print_fn: Callable[[str], Any] = print, *, llm: "LLMClient | None" = None,
             output_dir: str | Path = "output", task: str = DEMO_TASK,
             config: Any = None) -> "AgentResult":
    """Run the research agent and print the article's trace, a summary line, and the report path.

    Offline (no ``OPENAI_API_KEY``) the model is the simulator's ``Researcher`` policy; with a
    key, ``LLMClient.from_env()`` talks to the real endpoint. Returns the ``AgentResult``.
    """
    from .runtime import AgentRuntime, RuntimeConfig

    agent = AgentRuntime(llm or _demo_llm(), research_tools(output_dir), system_prompt=SYSTEM_PROMPT,
                         config=config or RuntimeConfig(max_turns=15, max_total_time=120.0))
    result = agent.run(task)
    for line in format_trace(result):
        print_fn(line)
    print_fn("=" * 50)
    print_fn(f"Turns: {result.turns} | Tokens: {result.total_tokens} | "
             f"{result.duration_ms / 1000:.2f} s | {result.stopped_reason} ({result.state.value})")
    for tc in result.tool_calls_made:
        print_fn(f"  Turn {tc['turn']}: {tc['name']}() {'OK' if tc['success'] else 'FAIL'} "
                 f"{tc['duration_ms']:.1f} ms")
    for err in result.errors:
        print_fn(f"  error [{err['code']}] {err['message']}")
    written = [tc for tc in result.tool_calls_made if tc["name"] == "write_file" and tc["success"]]
    if written:
        path = (Path(output_dir) / written[-1]["arguments"].get("filename", "")).as_posix()
        print_fn(f"Report written to {path}")
    else:
        print_fn("No report was written.")
    print_fn("")
    print_fn(result.content)
    return result

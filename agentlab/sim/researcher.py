"""``Researcher``: a simulated model that plays the article's research-assistant trace.

Taught in ``notebooks/08_research_agent.ipynb``. The article shows the trace a real model
produced for "research Python asyncio best practices":

    Turn 1  web_search("Python asyncio best practices")
    Turn 2  read_url(url1) + read_url(url2)          <- two calls in one turn: run in parallel
    Turn 3  web_search("asyncio common pitfalls")
    Turn 4  read_url(url3)
    Turn 5  write_file("asyncio-report.md", ...)
    Turn 6  final answer (no tool_calls)

This policy reproduces that shape offline. Like every policy it decides from the request
alone (the messages and the offered tools), so a retried request gets the same answer: it
looks at the tool rounds since the last user message and at the actual tool results, and
picks its arguments from them (the URLs it reads come from the search results, the report is
built from the page text it read). When a tool fails it adapts instead of stalling: a failed
search is retried once, a failed read is skipped, and after a failed write it still answers.
A tool it does not know (say, one a student added) is called once with arguments made up from
its schema, and its result goes into the report.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .policies import Call, Policy, Text, ToolUser

__all__ = ["Researcher", "Auto"]

_KNOWN = {"web_search", "read_url", "write_file", "ask_user"}
_GENERIC = frozenset("""research researching investigate study look into about on the a an and or of
for to in into as with up them it this that please write report reports technical save saved
file files summary summarize summarise best practice practices guide markdown me my our topic""".split())


@dataclass
class _Round:
    """One assistant turn with tool calls and the results that answered it."""

    calls: list[tuple[str, dict, str | None]] = field(default_factory=list)  # name, args, result

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]


def _text_of(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _rounds_since_last_user(messages: list[dict]) -> tuple[str, list[_Round]]:
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    task = _text_of(messages[last_user].get("content")) if last_user >= 0 else ""
    results = {m.get("tool_call_id"): _text_of(m.get("content"))
               for m in messages[last_user + 1:] if m.get("role") == "tool"}
    rounds = []
    for m in messages[last_user + 1:]:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            r = _Round()
            for tc in m["tool_calls"]:
                fn = tc.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:  # garbled arguments: the call did not run; ignore it
                    continue
                if isinstance(args, dict):
                    r.calls.append((fn.get("name", ""), args, results.get(tc.get("id"))))
            rounds.append(r)
    return task, rounds


def _search_hits(result: str | None) -> list[dict] | None:
    """Parsed web_search results, or None if the call failed."""
    try:
        hits = json.loads(result or "")
    except ValueError:
        return None
    return [h for h in hits if isinstance(h, dict) and "url" in h] if isinstance(hits, list) else None


def _page_ok(result: str | None) -> bool:
    return bool(result) and result.startswith("# ") and "\nURL: " in result


def _key_points(page: str, limit: int = 4) -> list[str]:
    """Bullet and numbered items from a page; else its first sentences."""
    body = re.sub(r"```.*?```", "", page.split("\n\n", 1)[-1], flags=re.S)
    items, current = [], None
    for line in body.splitlines():
        m = re.match(r"\s*(?:[-*]|\d+\.)\s+(.*)", line)
        if m:
            current = m.group(1).strip()
            items.append(current)
        elif current is not None and line[:1].isspace() and line.strip():
            items[-1] += " " + line.strip()  # continuation of a wrapped item
        else:
            current = None
    if not items:
        items = re.split(r"(?<=[.!?])\s+", " ".join(body.split()))
    return [" ".join(i.split()) for i in items[:limit] if i.strip()]


def _sample_args(schema: dict, topic: str) -> dict:
    """Arguments for an unknown tool, made up from its JSON schema (required fields only)."""
    params = schema.get("parameters") or {}
    out: dict[str, Any] = {}
    for name in params.get("required", []):
        spec = params.get("properties", {}).get(name, {})
        kind = spec.get("type")
        if "enum" in spec:
            out[name] = spec["enum"][0]
        elif kind == "integer":
            out[name] = 3
        elif kind == "number":
            out[name] = 1.0
        elif kind == "boolean":
            out[name] = True
        elif kind == "array":
            out[name] = []
        elif kind == "object":
            out[name] = {}
        else:
            out[name] = topic
    return out


class Researcher(Policy):
    """The article's research trace: search, read two in parallel, search, read, write, answer.

    Args:
        max_rounds: after this many tool rounds it writes what it has (or answers), so a run
            with failing tools still ends.
    """

    def __init__(self, max_rounds: int = 10) -> None:
        self.max_rounds = max_rounds

    # -- the decision, from the request alone ------------------------------------------------
    def respond(self, messages: list[dict], tools: list[dict]) -> Any:
        offered = {t.get("function", {}).get("name"): t.get("function", {}) for t in tools or []}
        task, rounds = _rounds_since_last_user(messages)
        calls = [c for r in rounds for c in r.calls]
        asked = [res for name, _, res in calls if name == "ask_user" and res]
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9_+-]*", " ".join([task, *asked]))
                 if w.lower() not in _GENERIC]
        if "web_search" not in offered:
            return Text(f"I can't research without a web_search tool. Task: {task}")
        if not words and "ask_user" in offered and not any(n == "ask_user" for n, _, _ in calls):
            return Call("ask_user", {"question": "Which topic should I research?"})
        topic = " ".join(dict.fromkeys(words)) or (task.strip()[:60] or "Python asyncio")

        q1 = f"{topic} best practices"
        searches = [(a.get("query"), _search_hits(r)) for n, a, r in calls if n == "web_search"]
        first = [hits for q, hits in searches if q == q1]
        second = [hits for q, hits in searches if q != q1]
        read_rounds = [[a.get("url") for n, a, _ in r.calls if n == "read_url"] for r in rounds]
        read_rounds = [urls for urls in read_rounds if urls]
        reads = {a.get("url"): r for n, a, r in calls if n == "read_url"}
        pages = {u: r for u, r in reads.items() if _page_ok(r)}
        writes = [r for n, _, r in calls if n == "write_file"]

        # 1. done: the report was written (or writing failed twice) -> answer
        if any(r and r.startswith("Wrote ") for r in writes) or len(writes) >= 2:
            return Text(self._answer(topic, pages, writes))
        # 2. out of rounds -> write what we have
        if len(rounds) >= self.max_rounds:
            return self._write(topic, task, pages, calls)
        # 3. first search (a failed search is retried once)
        hits1 = next((h for h in first if h is not None), None)
        if hits1 is None and len(first) < 2:
            return Call("web_search", {"query": q1})
        # 4. read the two top hits in parallel: two calls in one turn
        if hits1 and not read_rounds:
            return [Call("read_url", {"url": h["url"]}) for h in hits1[:2]]
        # 5. search again, refined by the topic word the pages talk about most
        hits2 = next((h for h in second if h is not None), None)
        if hits2 is None and len(second) < 2:
            main = self._main_term(words, pages) if words else topic
            return Call("web_search", {"query": f"{main} common pitfalls"})
        # 6. read the best hit of the second search that was not read yet
        if hits2 and len(read_rounds) < 2:
            fresh = [h["url"] for h in hits2 if h["url"] not in reads]
            if fresh:
                return Call("read_url", {"url": fresh[0]})
        # 7. tools we don't know (e.g. added by a student): call each once
        for name, fn in offered.items():
            if name not in _KNOWN and not any(n == name for n, _, _ in calls):
                return Call(name, _sample_args(fn, topic))
        # 8. write the report
        return self._write(topic, task, pages, calls)

    # -- helpers -----------------------------------------------------------------------------
    @staticmethod
    def _main_term(words: list[str], pages: dict[str, str]) -> str:
        """The topic word the pages mention most (ties: the later word, e.g. asyncio > Python)."""
        text = " ".join(pages.values()).lower()
        counts = [(text.count(w.lower()), i, w) for i, w in enumerate(words)]
        return max(counts)[2] if counts else words[-1]

    def _write(self, topic: str, task: str, pages: dict[str, str], calls: list) -> Call:
        slug = re.sub(r"[^a-z0-9]+", "-", (self._main_term(topic.split(), pages)).lower()).strip("-")
        lines = [f"# {topic}: research report", "", f"Task: {task.strip()}", ""]
        if pages:
            lines += ["## Sources", ""]
            for i, (url, page) in enumerate(pages.items(), 1):
                lines.append(f"{i}. [{page.splitlines()[0][2:]}]({url})")
            lines += ["", "## Key findings", ""]
            for i, (url, page) in enumerate(pages.items(), 1):
                lines.append(f"### {page.splitlines()[0][2:]} [{i}]")
                lines += [f"- {p}" for p in _key_points(page)] + [""]
        else:
            lines += ["No source could be read; the findings below are missing.", ""]
        extra = [(n, r) for n, _, r in calls if n not in _KNOWN and r]
        if extra:
            lines += ["## Other tools", ""] + [f"- `{n}`: {r[:200]}" for n, r in extra] + [""]
        lines.append(f"Sources read: {len(pages)}.")
        return Call("write_file", {"filename": f"{slug or 'research'}-report.md",
                                   "content": "\n".join(lines) + "\n"})

    @staticmethod
    def _answer(topic: str, pages: dict[str, str], writes: list) -> str:
        saved = next((w for w in writes if w and w.startswith("Wrote ")), None)
        parts = [f"I researched {topic} and read {len(pages)} source(s)."]
        parts.append(saved.replace("Wrote", "Report: wrote", 1) + "." if saved
                     else "I could not save the report.")
        for i, (url, page) in enumerate(pages.items(), 1):
            point = next(iter(_key_points(page, 1)), "")
            parts.append(f"[{i}] {page.splitlines()[0][2:]} ({url}): {point}")
        return "\n".join(parts)


class Auto(Policy):
    """The default model of ``agentlab serve``: the research trace (``Researcher``) when the
    request offers ``web_search`` (what ``agentlab demo`` sends), else ``ToolUser``.

    So ``agentlab demo`` against ``agentlab serve`` behaves like the offline demo, and
    ``agentlab chat`` (no tools) gets a direct answer.
    """

    def __init__(self, max_rounds: int = 10) -> None:
        self.researcher = Researcher(max_rounds)
        self.tool_user = ToolUser()

    def respond(self, messages: list[dict], tools: list[dict]) -> Any:
        names = {(t.get("function") or {}).get("name") for t in tools or [] if isinstance(t, dict)}
        chosen = self.researcher if "web_search" in names else self.tool_user
        return chosen.respond(messages, tools)

    def __repr__(self) -> str:
        return "Auto()"

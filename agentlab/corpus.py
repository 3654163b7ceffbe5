"""The offline web of chapter 08: fifteen short pages and a keyword search over them.

Taught in ``notebooks/08_research_agent.ipynb``; the research tools (``agentlab.research``)
and ``agentlab chat`` read it. Each page in ``data/corpus/`` is real text written for this
project, with a stable fake URL, a title and tags on its first three lines (see the corpus
README). ``Corpus.search`` ranks pages by a keyword score: title and tags weigh more than the
body, rare words more than common ones, and ties are broken by URL so results are
deterministic. Pages are loaded on first use, never at import.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from .bundle import data_path

__all__ = ["CORPUS_DIR", "Page", "Corpus", "corpus", "build_index", "best_sentence", "terms"]

CORPUS_DIR = data_path("corpus")

_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("""a an and are as at be by can do for from how in into is it its of on or
that the this to what when which with you your""".split())


def terms(text: str) -> list[str]:
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
    page._tf = Counter(terms(page.body))
    page._title_terms = set(terms(page.title))
    page._tag_terms = set(terms(" ".join(tags)))
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
        for term in set(terms(query)):
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
    return best_sentence(page.body, query, width)


def best_sentence(text: str, query: str, width: int = 160) -> str:
    """The sentence of ``text`` sharing most words with ``query`` (the earliest on ties),
    cut to ``width`` characters; code blocks are skipped. Used for search snippets."""
    wanted = set(terms(query))
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]
    best = max(sentences, key=lambda s: len(wanted & set(terms(s))), default="")
    return best if len(best) <= width else best[: width - 3].rstrip() + "..."


@lru_cache(maxsize=1)
def corpus() -> Corpus:
    """The shared default corpus (``data/corpus/``), loaded on first use."""
    return Corpus()

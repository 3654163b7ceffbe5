"""The article's research tools (section 6), defects included, for ``notebooks/08_research_agent``.

What goes wrong here, on purpose:

* ``web_search`` invents results ("Result 1 for '<query>'", ``https://example.com/article-N``)
  whatever the query, and ``read_url`` returns the same canned "key points" for every URL, so a
  report built from them contains nothing that was actually read;
* ``write_file`` keeps only ``os.path.basename(filename)``: ``../notes.md`` silently becomes
  ``notes.md`` and ``reports/a.md`` loses its folder, with no message saying so;
* ``ask_user`` calls ``input()``, which blocks a notebook or a server forever.

Do not use this in real code.
"""
from __future__ import annotations

import json
import os

from ..tools import ToolRegistry

__all__ = ["naive_research_tools"]


def naive_research_tools(output_dir="output"):
    """A ``ToolRegistry`` with the article's four tools (``output_dir`` instead of "output")."""
    registry = ToolRegistry()

    @registry.tool()
    def web_search(query: str, max_results: int = 5) -> str:
        """Search the web.

        Args:
            query: Search keywords.
            max_results: Maximum number of results.
        """
        return json.dumps([{"title": f"Result {i + 1} for '{query}'",
                            "url": f"https://example.com/article-{i + 1}",
                            "snippet": f"Detailed article about {query}, section {i + 1}..."}
                           for i in range(min(max_results, 3))], ensure_ascii=False)

    @registry.tool()
    def read_url(url: str) -> str:
        """Read a web page.

        Args:
            url: The page address.
        """
        return (f"[Content from {url}]\nKey points: 1) Fundamental concepts 2) Best practices "
                "3) Common pitfalls 4) Case studies and benchmarks")

    @registry.tool()
    def write_file(filename: str, content: str) -> str:
        """Write a file.

        Args:
            filename: File name.
            content: Text content.
        """
        os.makedirs(output_dir, exist_ok=True)
        path = os.path.join(output_dir, os.path.basename(filename))
        with open(path, "w") as f:
            f.write(content)
        return f"Wrote {len(content)} chars to {os.path.basename(path)}"

    @registry.tool()
    def ask_user(question: str) -> str:
        """Ask the user.

        Args:
            question: The question.
        """
        print(f"\nAgent asks: {question}")
        return input("Your answer: ")

    return registry

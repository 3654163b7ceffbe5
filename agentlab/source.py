"""``show_source``: print the package's own code in a notebook, whole or from one line to another.

The notebooks print the code they teach from the package itself (``inspect.getsource``), never a
copy, so what a learner reads is what runs. A function can be long; ``start`` and ``stop`` pick
the part a paragraph talks about, by a piece of text on its first line and on the line after it.
A marker that is no longer in the code is an error (``ConfigError``), not a silent fallback: the
paragraph next to the listing would then describe code that is not shown.
"""
from __future__ import annotations

import inspect
import textwrap
from typing import Any

from .errors import ConfigError

__all__ = ["source_lines", "show_source"]


def source_lines(obj: Any, start: str | None = None, stop: str | None = None) -> str:
    """``obj``'s source from the first line containing ``start`` (default: its first line) to
    the line before the next one containing ``stop`` (default: its end), dedented."""
    lines = inspect.getsource(obj).splitlines()
    a = 0
    if start is not None:
        a = next((i for i, line in enumerate(lines) if start in line), -1)
        if a < 0:
            raise ConfigError("source_marker_missing",
                              f"{start!r} is not in the source of {obj.__qualname__}",
                              details={"object": obj.__qualname__, "marker": start})
    b = len(lines)
    if stop is not None:
        b = next((i for i, line in enumerate(lines) if stop in line and i > a), -1)
        if b < 0:
            raise ConfigError("source_marker_missing",
                              f"{stop!r} is not in the source of {obj.__qualname__} after "
                              f"{start!r}", details={"object": obj.__qualname__, "marker": stop})
    return textwrap.dedent("\n".join(lines[a:b]))


def show_source(obj: Any, start: str | None = None, stop: str | None = None) -> None:
    """Print ``source_lines(obj, start, stop)``."""
    print(source_lines(obj, start, stop))

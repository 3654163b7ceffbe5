"""Docstrings -> (description, {parameter: description}) in Google, Sphinx and numpy styles.

Part of chapter 02 (``notebooks/02_tool_registry.ipynb``). The Google style is parsed by hand,
because that is what the chapter teaches: the first paragraph is the description and each
``Args:`` entry is matched by the exact parameter name. Sphinx (``:param x: text``) and numpy
(``Parameters`` underlined with dashes) docstrings are parsed with ``docstring_parser``, a
well-kept parser of both; the description is the first paragraph in every style.
"""
from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring", "docstring_style"]

_ARGS_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args",
                  "keyword arguments", "attributes"}
_SECTION_RE = re.compile(r"^([A-Za-z][A-Za-z ]{1,30}):\s*$")
_ENTRY_RE = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_SPHINX_RE = re.compile(r"^\s*:(param|parameter|arg|argument|key|keyword|ivar|cvar|var)\b",
                        re.MULTILINE)
_NUMPY_RE = re.compile(r"^\s*(Parameters|Attributes|Other Parameters)\s*\n\s*-{3,}\s*$",
                       re.MULTILINE)
# Sphinx/numpy sections that describe parameters (docstring_parser's first ``args`` entry).
_PARAM_KINDS = {"param", "parameter", "arg", "argument", "key", "keyword", "attribute",
                "ivar", "cvar", "var", "other_param"}


def docstring_style(doc: str | None) -> str:
    """``"sphinx"``, ``"numpy"`` or ``"google"`` (the default, also for plain text)."""
    text = inspect.cleandoc(doc or "")
    if _SPHINX_RE.search(text):
        return "sphinx"
    if _NUMPY_RE.search(text):
        return "numpy"
    return "google"


def _summary(lines: list[str]) -> str:
    """The first paragraph, stopping at a blank line or the start of any section."""
    out: list[str] = []
    for i, line in enumerate(lines):
        text = line.strip()
        underlined = i + 1 < len(lines) and re.fullmatch(r"-{3,}", lines[i + 1].strip())
        if not text or _SECTION_RE.match(text) or text.startswith(":") or underlined:
            break
        out.append(text)
    return " ".join(out)


def _google_params(lines: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    section_indent, entry_indent, current = None, None, None
    for line in lines:
        text, indent = line.strip(), len(line) - len(line.lstrip())
        if not text:
            continue
        header = _SECTION_RE.match(text)
        if header and (section_indent is None or indent <= section_indent):
            in_args = header.group(1).strip().lower() in _ARGS_SECTIONS
            section_indent = indent if in_args else None
            entry_indent, current = None, None
            continue
        if section_indent is None:
            continue
        if indent <= section_indent:  # dedent: the section is over
            section_indent, current = None, None
            continue
        entry_indent = indent if entry_indent is None else entry_indent
        match = _ENTRY_RE.match(text) if indent == entry_indent else None
        if match:
            current = match.group(1)
            params[current] = match.group(3).strip()
        elif current is not None and indent > entry_indent:
            params[current] = (params[current] + " " + text).strip()
    return params


def _parsed_params(text: str, style: str) -> dict[str, str]:
    import docstring_parser  # lazy: heavy; only Sphinx/numpy docstrings need it

    kind = (docstring_parser.DocstringStyle.REST if style == "sphinx"
            else docstring_parser.DocstringStyle.NUMPYDOC)
    try:
        parsed = docstring_parser.parse(text, style=kind)
    except docstring_parser.ParseError:
        return {}
    return {p.arg_name.lstrip("*"): " ".join((p.description or "").split())
            for p in parsed.params if p.args and p.args[0] in _PARAM_KINDS}


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into (description, {parameter: description}).

    The description is the whole first paragraph (wrapped lines joined), never a section.
    Google style: parameters come from ``Args:`` (or ``Attributes:`` for classes), matched by
    the exact name at the start of an entry, in both ``name: text`` and ``name (type): text``
    forms; indented continuation lines are joined; ``Returns:`` and other sections are ignored.
    Sphinx (``:param name: text``) and numpy (``Parameters`` / ``Attributes`` sections) are
    recognised by their markers and read with ``docstring_parser``.
    """
    text = inspect.cleandoc(doc or "")
    lines = text.splitlines()
    style = docstring_style(text)
    params = _google_params(lines) if style == "google" else _parsed_params(text, style)
    return _summary(lines), params

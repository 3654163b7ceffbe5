"""Widgets for chapter 02 (``notebooks/02_tool_registry.ipynb``): the schema explorer."""
from __future__ import annotations

import dataclasses
import enum
import html
import json
import textwrap
import typing
from typing import Callable, Iterable

import ipywidgets as w

from ..errors import AgentError, ConfigError
from ..naive.tools import NaiveToolRegistry
from ..tools import ToolRegistry
from .panel import Panel

__all__ = ["schema_explorer", "explain_arguments"]


def explain_arguments(registry: ToolRegistry, name: str, arguments_json: str) -> str:
    """What ``validate`` makes of ``arguments_json`` for tool ``name``, as plain text.

    Either ``valid: {...}`` with the converted arguments the function would receive, or the
    ``Error: ...`` text the executor would send back to the model.
    """
    try:
        arguments = json.loads(arguments_json or "{}")
    except json.JSONDecodeError as exc:
        return (f"Error: The arguments for '{name}' are not a valid JSON object ({exc}). "
                f"Call '{name}' again with the arguments as one JSON object.")
    try:
        converted = registry.validate(name, arguments)
    except AgentError as exc:
        return f"Error: {exc.message}"
    return "valid: " + ", ".join(f"{k}={v!r}" for k, v in converted.items())


def _build(source: str, registry: ToolRegistry) -> str:
    """Run the typed-in source, register its last function (replacing), return its name."""
    namespace: dict = {"typing": typing, "enum": enum, "dataclasses": dataclasses,
                       **{n: getattr(typing, n) for n in ("Any", "Literal", "Optional", "Union",
                                                          "Annotated", "TypedDict")},
                       "Enum": enum.Enum, "dataclass": dataclasses.dataclass}
    exec(compile(textwrap.dedent(source), "<schema explorer>", "exec"), namespace)
    funcs = [v for v in namespace.values() if callable(v) and getattr(v, "__module__", "") is None
             and hasattr(v, "__code__")]
    if not funcs:
        raise ValueError("no function found: write a `def name(...):` with type hints")
    registry.register(funcs[-1], replace=True)
    return funcs[-1].__name__


def schema_explorer(registry: ToolRegistry | None = None,
                    functions: Iterable[Callable] = (), *,
                    naive: bool = True, arguments: str = "{}",
                    tool: str | None = None) -> Panel:
    """Pick (or type) a function; see its schema, the naive schema, and what ``validate`` says.

    Args:
        registry: tools to explore (a new registry if None); ``functions`` are added to it.
        naive: also show ``agentlab.naive.tools`` output for the same function.
        arguments: initial JSON in the arguments box.
        tool: the tool shown first (default: the first registered one); give it with
            ``arguments`` so the first verdict is about the arguments of that tool.

    Returns a ``Panel`` (an ipywidgets ``VBox``).
    """
    registry = registry if registry is not None else ToolRegistry()
    for f in functions:
        registry.register(f, replace=True)
    names = registry.list_tools()
    if tool is not None and tool not in names:
        raise ConfigError("invalid_argument", f"tool={tool!r} is not registered; choose one of "
                          f"{', '.join(names) or '(none)'}")
    pick = w.Dropdown(options=names, value=tool if tool is not None else (names[0] if names
                      else None), description="tool")
    source = w.Textarea(placeholder="def my_tool(city: str, unit: Literal['c', 'f'] = 'c'):\n"
                        "    \"\"\"Say what it does.\"\"\"",
                        layout=w.Layout(width="98%", height="7em"))
    build = w.Button(description="register typed function", layout=w.Layout(width="auto"))
    args = w.Textarea(value=arguments, description="arguments",
                      layout=w.Layout(width="98%", height="4em"))
    ours, theirs, verdict = w.HTML(), w.HTML(), w.HTML()
    texts: dict[str, str] = {}

    def pre(text: str, head: str) -> str:
        texts[head] = text
        return (f"<b>{head}</b><pre style='font-size:11px;line-height:1.2'>"
                f"{html.escape(text)}</pre>")

    def refresh(*_):
        name = pick.value
        if not name:
            return
        schema = registry.get_schema(name)["function"]["parameters"]
        ours.value = pre(json.dumps(schema, indent=1, ensure_ascii=False), "agentlab schema")
        if naive:
            try:
                n = NaiveToolRegistry()
                n.register(registry.get_function(name), name)
                text = json.dumps(n.get_all_schemas()[0]["function"]["parameters"], indent=1)
            except Exception as exc:  # the naive generator crashes on some functions
                text = f"{type(exc).__name__}: {exc}"
            theirs.value = pre(text, "naive (flat TYPE_MAP)")
        verdict.value = pre(explain_arguments(registry, name, args.value),
                            "what the model gets back")
        panel.show(None, _side_by_side(texts))

    def on_build(_):
        try:
            name = _build(source.value, registry)
        except Exception as exc:
            verdict.value = f"<pre>{type(exc).__name__}: {exc}</pre>"
            return
        pick.options = registry.list_tools()
        pick.value = name
        refresh()

    panel = Panel([pick, w.HBox([ours, theirs]) if naive else ours, args, verdict,
                   w.HTML("<b>or type a function</b>"), source, build],
                  title="schema explorer (chapter 02)")
    pick.observe(refresh, names="value")
    args.observe(refresh, names="value")
    build.on_click(on_build)
    refresh()
    return panel


def _side_by_side(texts: dict[str, str], width: int = 44) -> str:
    """The schema panes as plain text for the snapshot: the two schemas in columns, then the
    verdict."""
    heads = list(texts)
    cols = [[h] + texts[h].splitlines() for h in heads[:2] if h != "what the model gets back"]
    lines = []
    for row in range(max(map(len, cols), default=0)):
        lines.append("  ".join((c[row] if row < len(c) else "")[:width].ljust(width)
                               for c in cols).rstrip())
    if "what the model gets back" in texts:
        lines += ["", "what the model gets back:"] + [
            part for ln in texts["what the model gets back"].splitlines()
            for part in textwrap.wrap(ln, 2 * width) or [""]]
    return "\n".join(lines)

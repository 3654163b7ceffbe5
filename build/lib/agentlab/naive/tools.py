"""A naive tool registry written the way the article's step 2 writes it, defects included.

Used by ``notebooks/02_tool_registry.ipynb`` to compare against ``agentlab.tools.ToolRegistry``
on the same functions. What goes wrong here, on purpose:

* a flat ``TYPE_MAP`` looked up by identity: ``Optional[int]``, ``list[str]``, ``Literal[...]``,
  an ``Enum`` or a dataclass are not keys, so they all fall back to ``"string"``;
  ``list[str]`` loses its item type and ``Literal`` its allowed values;
* ``get_type_hints(func)`` evaluates the return annotation too, so an unresolvable
  ``-> "Report"`` makes registration crash;
* the parameter description is found by *substring*: the first line after ``Args:`` that
  contains ``"<name>:"`` anywhere wins (``query`` picks up ``subquery: ...``), and the scan
  never stops at ``Returns:``;
* the tool description is the first *line* of the docstring, cut mid-sentence when it wraps;
* registering a name twice silently replaces the first tool; ``*args`` become a "string".

Do not use this in real code.
"""
from __future__ import annotations

from typing import get_type_hints
import inspect

__all__ = ["TYPE_MAP", "NaiveToolRegistry"]

TYPE_MAP = {str: "string", int: "integer", float: "number", bool: "boolean",
            list: "array", dict: "object"}


class NaiveToolRegistry:
    def __init__(self):
        self._tools = {}
        self._schemas = {}

    def tool(self, name=None, description=None):
        def decorator(func):
            self.register(func, name, description)
            return func
        return decorator

    def register(self, func, name=None, description=None):
        tool_name = name or func.__name__
        text = description or (func.__doc__ or "").strip().split("\n")[0]
        self._tools[tool_name] = func  # a second registration quietly wins
        self._schemas[tool_name] = self._make_schema(func, tool_name, text)

    def get_function(self, name):
        return self._tools.get(name)

    def get_all_schemas(self):
        return list(self._schemas.values())

    def list_tools(self):
        return list(self._tools)

    def _make_schema(self, func, name, description):
        hints = get_type_hints(func)  # also evaluates the return annotation
        properties, required = {}, []
        for pname, param in inspect.signature(func).parameters.items():
            if pname in ("self", "cls"):
                continue
            prop = {"type": TYPE_MAP.get(hints.get(pname, str), "string")}
            desc = self._describe(func, pname)
            if desc:
                prop["description"] = desc
            properties[pname] = prop
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        return {"type": "function", "function": {
            "name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}}

    @staticmethod
    def _describe(func, pname):
        seen_args = False
        for line in (func.__doc__ or "").split("\n"):
            line = line.strip()
            if line.lower().startswith("args:"):
                seen_args = True
                continue
            if seen_args and pname + ":" in line:  # substring match, any section after Args
                return line.split(":", 1)[1].strip()
        return ""

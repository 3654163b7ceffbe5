"""Chapter 02 — the tool registry: schemas from type hints and docstrings, argument checks.

Taught in ``notebooks/02_tool_registry.ipynb``. Three files, read in this order:

- ``schema.py``: a Python function -> an OpenAI function-tool schema (``function_schema``,
  ``schema_for_type``), with ``docstrings.py`` (Google, Sphinx, numpy), ``callables.py``
  (methods, partials, ``async def``) and ``pydantic_params.py`` (BaseModel, dataclass,
  TypedDict and ``Field(...)`` parameters, described and validated by pydantic);
- ``validation.py``: the model's arguments checked and coerced against those types, every
  problem reported at once;
- ``registry.py``: ``ToolRegistry``, which keeps the tools, their schemas and options.
"""
from .callables import ToolCallable, resolve_callable
from .docstrings import docstring_style
from .registry import ToolRegistry
from .schema import (IDEMPOTENCY_PARAM, TOOL_NAME_RE, Param, ToolSpec, function_schema,
                     inspect_tool, parse_docstring, schema_for_type)
from .validation import check_fields, format_errors, json_type

__all__ = ["ToolRegistry", "schema_for_type", "function_schema", "parse_docstring",
           "inspect_tool", "ToolSpec", "Param", "TOOL_NAME_RE", "IDEMPOTENCY_PARAM",
           "json_type", "check_fields", "format_errors", "resolve_callable", "ToolCallable",
           "docstring_style"]

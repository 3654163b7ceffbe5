"""JSON schemas from Python type hints and docstrings (chapter 02).

The half of the tool registry that turns a function into what the model sees; taught in
``notebooks/02_tool_registry.ipynb``. See ``agentlab.tools`` for the type table. Plain type hints
are walked here, by hand (that walk is what the chapter teaches); a parameter that involves a
pydantic model, a dataclass, a TypedDict, a ``Field(...)``, or a ``tuple``/``set``/``Mapping``
(which this walk refuses, but which are described the same at every depth) is described by
pydantic (``pydantic_params.py``). ``schema_for_type`` still walks dataclasses and TypedDicts
itself, so the notebook can show the idea and the tests can cross-check it against pydantic.

Parameter descriptions, when several sources give one (the order openai-agents'
``function_schema`` and LangChain's ``_infer_arg_descriptions`` use; pydantic-ai differs and
lets ``Field(description=...)`` win over the docstring):

1. the docstring entry of the parameter (Google ``Args:``, Sphinx ``:param:``, numpy);
2. else the text of ``Annotated[T, "text"]``;
3. else ``Field(description=...)`` (as the default or inside ``Annotated``).
"""
from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from typing_extensions import NotRequired, Required  # typing has them from 3.11 only

from ..errors import ConfigError
from .callables import resolve_callable
from .docstrings import parse_docstring
from .kinds import is_typeddict, is_union
from .pydantic_params import PydanticParam, needs_pydantic


__all__ = ["schema_for_type", "function_schema", "parse_docstring", "inspect_tool", "ToolSpec",
           "Param", "TOOL_NAME_RE", "IDEMPOTENCY_PARAM"]

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the OpenAI API accepts as a tool name
PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}
IDEMPOTENCY_PARAM = "idempotency_key"


# -- type hints -> JSON schema ------------------------------------------------------------------
def _enum_schema(values: list[Any]) -> dict:
    """``{"type": ..., "enum": values}``; the type only when every value has the same one."""
    kinds = {PRIMITIVES.get(type(v)) for v in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    schema["enum"] = list(values)
    return schema


def type_fields(tp: Any) -> list[tuple[str, Any, bool, Any]]:
    """(name, type, required, default) for each field of a dataclass or TypedDict."""
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise ConfigError("unsupported_type", f"cannot resolve the field types of "
                          f"{tp.__name__}: {exc}") from exc
    if is_typeddict(tp):
        out = []
        for name, hint in hints.items():
            # __required_keys__ is wrong for string annotations (``from __future__ import
            # annotations``), so the resolved Required/NotRequired wrapper decides
            required = name in tp.__required_keys__
            while typing.get_origin(hint) in (Required, NotRequired):
                required = typing.get_origin(hint) is Required
                hint = typing.get_args(hint)[0]
            out.append((name, hint, required, dataclasses.MISSING))
        return out
    out = []
    for f in dataclasses.fields(tp):
        if not f.init:
            continue
        has_default = f.default is not dataclasses.MISSING or \
            f.default_factory is not dataclasses.MISSING
        out.append((f.name, hints.get(f.name, Any), not has_default, f.default))
    return out


def _json_default(value: Any) -> tuple[bool, Any]:
    """(ok, value) -- a default the schema can show, or ok=False when it is not plain JSON."""
    value = value.value if isinstance(value, enum.Enum) else value
    try:
        json.dumps(value, allow_nan=False)
        return True, value
    except (TypeError, ValueError):
        return False, None


def _object_schema(tp: Any, seen: tuple) -> dict:
    doc = tp.__doc__ or ""
    if dataclasses.is_dataclass(tp) and doc.startswith(tp.__name__ + "("):
        doc = ""  # the signature text dataclasses write when a class has no docstring
    summary, descs = parse_docstring(doc)
    props, required = {}, []
    for name, hint, is_required, default in type_fields(tp):
        prop = schema_for_type(hint, _seen=seen + (tp,))
        if name in descs and "description" not in prop:
            prop["description"] = descs[name]
        if is_required:
            required.append(name)
        elif default is not dataclasses.MISSING:
            ok, value = _json_default(default)
            if ok:
                prop["default"] = value
        props[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required,
                              "additionalProperties": False}
    if summary:
        schema["description"] = summary
    return schema


def schema_for_type(tp: Any, *, _seen: tuple = ()) -> dict:
    """The JSON schema of one Python type annotation (see the module docstring for the map).

    Raises:
        ConfigError: ``unsupported_type`` for a type with no faithful JSON form (sets, tuples,
            dicts with non-string keys, recursive dataclasses, arbitrary classes).
    """
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        schema = schema_for_type(args[0], _seen=_seen)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        if text:
            schema["description"] = text
        return schema
    if tp is Any or tp is inspect.Parameter.empty:
        return {}
    if tp in PRIMITIVES:  # bool is checked by identity, so it never becomes "integer"
        return {"type": PRIMITIVES[tp]}
    if tp is list or origin is list:
        return {"type": "array", "items": schema_for_type(args[0], _seen=_seen)} if args \
            else {"type": "array"}
    if tp is dict or origin is dict:
        if not args:
            return {"type": "object"}
        if args[0] is not str:
            raise ConfigError("unsupported_type", f"{tp!r}: JSON object keys are strings; "
                              "use dict[str, ...]")
        return {"type": "object", "additionalProperties": schema_for_type(args[1], _seen=_seen)}
    if is_union(origin):
        return {"anyOf": [schema_for_type(a, _seen=_seen) for a in args]}
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        schema = _enum_schema([m.value for m in tp])
        summary = parse_docstring(tp.__doc__)[0] if tp.__doc__ != enum.Enum.__doc__ else ""
        if summary and "An enumeration." not in summary:
            schema["description"] = summary
        return schema
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) or is_typeddict(tp):
        if tp in _seen:
            raise ConfigError("unsupported_type", f"{tp.__name__} refers to itself; recursive "
                              "types cannot be inlined in a tool schema")
        return _object_schema(tp, _seen)
    raise ConfigError("unsupported_type", f"no JSON schema for the annotation {tp!r}; use str, "
                      "int, float, bool, list[T], dict[str, T], Optional/Union, Literal, Enum, "
                      "a dataclass or a TypedDict")


def _param_hints(target: Callable, names: list[str]) -> dict[str, Any]:
    """Resolve the annotation of each parameter on its own.

    ``typing.get_type_hints(func)`` evaluates *every* annotation including the return one, so
    a forward reference in ``-> "Report"`` that cannot be resolved would break registration.
    Evaluating parameter by parameter never touches the return annotation.
    """
    raw = getattr(target, "__annotations__", {}) or {}
    globalns = getattr(target, "__globals__", {})
    hints = {}
    for name in names:
        if name not in raw:
            continue
        shim = types.SimpleNamespace(__annotations__={name: raw[name]}, __globals__=globalns)
        try:
            hints[name] = typing.get_type_hints(shim, include_extras=True)[name]
        except Exception as exc:
            raise ConfigError("unsupported_type", f"cannot resolve the annotation "
                              f"{raw[name]!r} of parameter {name!r}: {exc}") from exc
    return hints


@dataclass
class Param:
    """How one parameter is checked: by the hand-written validator, or by pydantic (``model``)."""

    type: Any
    required: bool
    model: PydanticParam | None = None


@dataclass
class ToolSpec:
    name: str
    func: Callable
    schema: dict
    params: dict[str, Param]
    options: dict[str, Any] = field(default_factory=dict)
    is_async: bool = False


def _annotated_text(hint: Any) -> str | None:
    if typing.get_origin(hint) is typing.Annotated:
        return next((a for a in typing.get_args(hint)[1:] if isinstance(a, str)), None)
    return None


def inspect_tool(func: Callable, name: str, description: str | None, side_effects: bool,
                 ) -> tuple[dict, dict[str, Param]]:
    """Build (schema, params) for ``func``, refusing what a JSON schema cannot describe."""
    return _inspect(func, name, description, side_effects)[:2]


def _inspect(func: Callable, name: str, description: str | None, side_effects: bool,
             ) -> tuple[dict, dict[str, Param], bool]:
    tc = resolve_callable(func, name)
    try:
        sig = inspect.signature(tc.call)
    except (TypeError, ValueError) as exc:
        raise ConfigError("unsupported_signature", f"tool {name!r}: no signature ({exc})") from exc
    summary, descs = parse_docstring(tc.doc)
    kept = []
    for p in sig.parameters.values():
        if p.name in tc.fixed:
            continue  # supplied by the partial: the caller's choice, not the model's
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            what = {p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}",
                    p.POSITIONAL_ONLY: f"positional-only {p.name}"}[p.kind]
            raise ConfigError("unsupported_signature", f"tool {name!r}: {what} cannot be "
                              "described in a JSON schema (the model sends named arguments); "
                              "list each parameter explicitly")
        if side_effects and p.name == IDEMPOTENCY_PARAM:
            continue  # filled in by the executor, never by the model
        kept.append(p)
    hints = _param_hints(tc.target, [p.name for p in kept])
    props, required, params = {}, [], {}
    for p in kept:
        hint = hints.get(p.name, Any)
        text = descs.get(p.name) or _annotated_text(hint)  # see the module docstring
        if needs_pydantic(hint, p.default):
            model = PydanticParam(name, p.name, hint, p.default)
            prop, is_required = dict(model.schema), model.required
            if text:
                prop["description"] = text
        else:
            model, is_required = None, p.default is p.empty
            prop = schema_for_type(hint)
            if text:
                prop["description"] = text
            if not is_required:
                ok, value = _json_default(p.default)
                if ok:
                    prop["default"] = value
        if is_required:
            required.append(p.name)
        props[p.name] = prop
        params[p.name] = Param(hint, is_required, model)
    schema = {"type": "function", "function": {
        "name": name, "description": summary if description is None else description,
        "parameters": {"type": "object", "properties": props, "required": required,
                       "additionalProperties": False}}}
    return schema, params, tc.is_async


def function_schema(func: Callable, name: str | None = None,
                    description: str | None = None) -> dict:
    """The OpenAI function-tool schema of ``func`` without registering it."""
    return inspect_tool(func, name or resolve_callable(func, "?").name, description, False)[0]

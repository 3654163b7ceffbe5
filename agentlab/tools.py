"""Tool registry: OpenAI function-tool schemas from type hints and docstrings, and validation.

Taught in ``notebooks/02_tool_registry.ipynb`` (article Step 2).

A tool is a plain Python function. ``ToolRegistry`` reads its signature and its Google-style
docstring and produces the JSON schema the model sees. The article maps types with a flat
``{str: "string", int: "integer", ...}`` table, so ``Optional[int]``, ``list[str]`` or a
``Literal`` all silently become ``"string"``. Here each annotation is walked recursively:

    str int float bool None Any        -> "string" "integer" "number" "boolean" "null" {}
    list[T]  dict[str, T]               -> array of T, object whose values are T
    Optional[T], T | None, Union[...]   -> anyOf
    Literal[...], Enum                  -> enum (with a type when all values share one)
    dataclass, TypedDict                -> nested object (additionalProperties: false)
    Annotated[T, "text"]                -> T with that description

``validate`` checks what the model sent against the same types, coerces only what cannot lose
information ("5" -> 5, 5 -> 5.0, "true" -> True, 7.0 -> 7, null for a defaulted field -> the
Python default), and reports *every* bad field in one ``ToolError("invalid_arguments")`` whose
message a model can act on. Its returned dict holds what the function expects: dataclass
instances for dataclass parameters and Enum members for Enum parameters.
"""
from __future__ import annotations

import copy
import dataclasses
import difflib
import enum
import inspect
import json
import math
import re
import threading
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import ConfigError, ToolError

__all__ = ["ToolRegistry", "schema_for_type", "function_schema", "parse_docstring"]

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # what the OpenAI API accepts as a tool name
_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean",
               type(None): "null"}
_ARGS_SECTIONS = {"args", "arguments", "parameters", "params", "keyword args",
                  "keyword arguments", "attributes"}
_SECTION_RE = re.compile(r"^([A-Za-z][A-Za-z ]{1,30}):\s*$")
_ENTRY_RE = re.compile(r"^\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
IDEMPOTENCY_PARAM = "idempotency_key"


# -- docstrings ------------------------------------------------------------------------------
def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description}).

    The description is the whole first paragraph (wrapped lines joined), never a section.
    Parameters come from ``Args:`` (or ``Attributes:`` for dataclasses), matched by the exact
    name at the start of an entry, in both ``name: text`` and ``name (type): text`` forms;
    indented continuation lines are joined. ``Returns:`` and other sections are ignored.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION_RE.match(line.strip()):
            break
        summary.append(line.strip())
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
    return " ".join(summary), params


# -- type hints -> JSON schema ------------------------------------------------------------------
def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _is_union(origin: Any) -> bool:
    return origin is typing.Union or origin is types.UnionType


def _enum_schema(values: list[Any]) -> dict:
    """``{"type": ..., "enum": values}``; the type only when every value has the same one."""
    kinds = {_PRIMITIVES.get(type(v)) for v in values}
    schema: dict[str, Any] = {}
    if len(kinds) == 1 and None not in kinds:
        schema["type"] = kinds.pop()
    schema["enum"] = list(values)
    return schema


def _fields(tp: Any) -> list[tuple[str, Any, bool, Any]]:
    """(name, type, required, default) for each field of a dataclass or TypedDict."""
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise ConfigError("unsupported_type", f"cannot resolve the field types of "
                          f"{tp.__name__}: {exc}") from exc
    if _is_typeddict(tp):
        out = []
        for name, hint in hints.items():
            # __required_keys__ is wrong for string annotations (``from __future__ import
            # annotations``), so the resolved Required/NotRequired wrapper decides
            required = name in tp.__required_keys__
            while typing.get_origin(hint) in (typing.Required, typing.NotRequired):
                required = typing.get_origin(hint) is typing.Required
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
    for name, hint, is_required, default in _fields(tp):
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
    if tp in _PRIMITIVES:  # bool is checked by identity, so it never becomes "integer"
        return {"type": _PRIMITIVES[tp]}
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
    if _is_union(origin):
        return {"anyOf": [schema_for_type(a, _seen=_seen) for a in args]}
    if origin is typing.Literal:
        return _enum_schema(list(args))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        schema = _enum_schema([m.value for m in tp])
        summary = parse_docstring(tp.__doc__)[0] if tp.__doc__ != enum.Enum.__doc__ else ""
        if summary and "An enumeration." not in summary:
            schema["description"] = summary
        return schema
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) or _is_typeddict(tp):
        if tp in _seen:
            raise ConfigError("unsupported_type", f"{tp.__name__} refers to itself; recursive "
                              "types cannot be inlined in a tool schema")
        return _object_schema(tp, _seen)
    raise ConfigError("unsupported_type", f"no JSON schema for the annotation {tp!r}; use str, "
                      "int, float, bool, list[T], dict[str, T], Optional/Union, Literal, Enum, "
                      "a dataclass or a TypedDict")


def _param_hints(func: Callable, names: list[str]) -> dict[str, Any]:
    """Resolve the annotation of each parameter on its own.

    ``typing.get_type_hints(func)`` evaluates *every* annotation including the return one, so
    a forward reference in ``-> "Report"`` that cannot be resolved would break registration.
    Evaluating parameter by parameter never touches the return annotation.
    """
    target = inspect.unwrap(func)
    if not hasattr(target, "__annotations__") and callable(target):
        target = type(target).__call__  # a callable object: read its __call__
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
class _Param:
    type: Any
    required: bool


@dataclass
class _Tool:
    name: str
    func: Callable
    schema: dict
    params: dict[str, _Param]
    options: dict[str, Any] = field(default_factory=dict)


def _inspect_tool(func: Callable, name: str, description: str | None,
                  side_effects: bool) -> tuple[dict, dict[str, _Param]]:
    """Build (schema, params) for ``func``, refusing what a JSON schema cannot describe."""
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise ConfigError("unsupported_signature", f"tool {name!r}: no signature ({exc})") from exc
    summary, descs = parse_docstring(func.__doc__)
    kept = []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            what = {p.VAR_POSITIONAL: f"*{p.name}", p.VAR_KEYWORD: f"**{p.name}",
                    p.POSITIONAL_ONLY: f"positional-only {p.name}"}[p.kind]
            raise ConfigError("unsupported_signature", f"tool {name!r}: {what} cannot be "
                              "described in a JSON schema (the model sends named arguments); "
                              "list each parameter explicitly")
        if side_effects and p.name == IDEMPOTENCY_PARAM:
            continue  # filled in by the executor, never by the model
        kept.append(p)
    hints = _param_hints(func, [p.name for p in kept])
    props, required, params = {}, [], {}
    for p in kept:
        hint = hints.get(p.name, Any)
        prop = schema_for_type(hint)
        if p.name in descs and "description" not in prop:
            prop["description"] = descs[p.name]
        if p.default is p.empty:
            required.append(p.name)
        else:
            ok, value = _json_default(p.default)
            if ok:
                prop["default"] = value
        props[p.name] = prop
        params[p.name] = _Param(hint, p.default is p.empty)
    schema = {"type": "function", "function": {
        "name": name, "description": summary if description is None else description,
        "parameters": {"type": "object", "properties": props, "required": required,
                       "additionalProperties": False}}}
    return schema, params


def function_schema(func: Callable, name: str | None = None,
                    description: str | None = None) -> dict:
    """The OpenAI function-tool schema of ``func`` without registering it."""
    return _inspect_tool(func, name or func.__name__, description, False)[0]


# -- validation ----------------------------------------------------------------------------------
def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "number", list: "array", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)


def _describe(tp: Any) -> str:
    """A short human/model-readable name of what a type expects."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _describe(args[0])
    if tp in _PRIMITIVES:
        return _PRIMITIVES[tp]
    if origin is list:
        return f"array of {_describe(args[0])}"
    if origin is dict:
        return f"object with {_describe(args[1])} values"
    if _is_union(origin):
        return " or ".join(_describe(a) for a in args)
    if origin is typing.Literal or isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = args if origin is typing.Literal else [m.value for m in tp]
        return "one of " + ", ".join(json.dumps(v) for v in values)
    if dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        return "object {" + ", ".join(n for n, *_ in _fields(tp)) + "}"
    return {list: "array", dict: "object"}.get(tp, "any value")


def _show(value: Any) -> str:
    """The value as the model wrote it (JSON), cut to 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _kind(typing.get_args(tp)[0])
    if tp is dict or origin is dict or dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        return "object"
    return "array" if tp is list or origin is list else "scalar"


def _allowed(tp: Any) -> list | None:
    if typing.get_origin(tp) is typing.Literal:
        return list(typing.get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return [m.value for m in tp]
    return None


_INT_RE = re.compile(r"^[+-]?\d+$")


def _coerce_scalar(tp: Any, value: Any, strict: bool) -> tuple[bool, Any]:
    """(ok, value) for str/int/float/bool/None; coercions only when ``strict`` is False."""
    if tp is bool:
        if isinstance(value, bool):
            return True, value
        if not strict and isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return True, value.strip().lower() == "true"
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return True, value
        if not strict and isinstance(value, float) and value.is_integer():
            return True, int(value)  # 7.0 -> 7 loses nothing; 5.7 is refused below
        if not strict and isinstance(value, str) and _INT_RE.match(value.strip()):
            return True, int(value.strip())
    elif tp is float:
        if isinstance(value, float) and math.isfinite(value):
            return True, value
        if isinstance(value, int) and not isinstance(value, bool):
            return True, float(value)  # JSON has one number type: 5 is a fine 5.0
        if not strict and isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                return False, None
            if math.isfinite(number):
                return True, number
    elif tp is str:
        if isinstance(value, str):
            return True, value
        if not strict and isinstance(value, int) and not isinstance(value, bool):
            return True, str(value)  # an id sent as 42 instead of "42"
    elif tp is type(None):
        return value is None, None
    return False, None


def _convert(tp: Any, value: Any, path: str, errors: list[dict], strict: bool = False) -> Any:
    """Check ``value`` against ``tp``; append one error per bad leaf; return the converted value."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert(args[0], value, path, errors, strict)

    def bad(problem: str = "wrong_type") -> None:
        err = {"field": path, "problem": problem, "expected": _describe(tp),
               "got": f"{_show(value)} ({_json_type(value)})"}
        if _allowed(tp) is not None:
            err["allowed"] = _allowed(tp)
        errors.append(err)

    if tp is Any or tp is inspect.Parameter.empty:
        return value
    if tp in _PRIMITIVES:
        ok, out = _coerce_scalar(tp, value, strict)
        return out if ok else bad()
    if _is_union(origin):
        # exact match first (so "5" stays a string in int | str), then with coercion
        trials: dict[Any, list[dict]] = {}
        for lax in (False, True) if not strict else (False,):
            for member in args:
                trials[member] = []
                out = _convert(member, value, path, trials[member], strict=not lax)
                if not trials[member]:
                    return out
        # all failed: if an object/array was sent and exactly one member is an object/array
        # type, that member was meant; report its nested errors (e.g. "address.city: ...")
        kind = {dict: "object", list: "array"}.get(type(value))
        meant = [m for m in args if kind is not None and _kind(m) == kind]
        if len(meant) == 1:
            errors.extend(trials[meant[0]])
            return None
        return bad()
    if origin is typing.Literal or isinstance(tp, type) and issubclass(tp, enum.Enum):
        members = list(args) if origin is typing.Literal else list(tp)
        for m in members:
            raw = m.value if isinstance(m, enum.Enum) else m
            if type(raw) is type(value) and raw == value:
                return m
        if not strict:  # "3" for Literal[3], 3 for Enum of "3"? only exact-text matches
            for m in members:
                raw = m.value if isinstance(m, enum.Enum) else m
                if not isinstance(raw, bool) and isinstance(value, (str, int)) \
                        and not isinstance(value, bool) and str(raw) == str(value):
                    return m
        return bad("not_allowed")
    if tp is list or origin is list:
        if not isinstance(value, list):
            return bad()
        item = args[0] if args else Any
        return [_convert(item, v, f"{path}[{i}]", errors, strict) for i, v in enumerate(value)]
    if tp is dict or origin is dict:
        if not isinstance(value, dict):
            return bad()
        item = args[1] if args else Any
        return {k: _convert(item, v, f"{path}.{k}", errors, strict) for k, v in value.items()}
    if dataclasses.is_dataclass(tp) or _is_typeddict(tp):
        if dataclasses.is_dataclass(tp) and isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            return bad()
        specs = {n: _Param(h, r) for n, h, r, _ in _fields(tp)}
        before = len(errors)
        out = _check_fields(specs, value, path + ".", errors, strict)
        if len(errors) > before or _is_typeddict(tp):
            return out
        try:
            return tp(**out)
        except Exception as exc:  # e.g. a __post_init__ that checks a range
            errors.append({"field": path, "problem": "rejected", "expected": _describe(tp),
                           "got": f"{type(exc).__name__}: {exc}"})
            return None
    return value  # not reachable for registered types: schema_for_type refused the rest


def _check_fields(specs: dict[str, _Param], value: dict, prefix: str, errors: list[dict],
                  strict: bool = False) -> dict:
    out = {}
    for key in value:
        if key not in specs:
            near = difflib.get_close_matches(key, list(specs), n=1)
            errors.append({"field": prefix + key, "problem": "unexpected",
                           "expected": "one of the fields " + ", ".join(specs),
                           "got": _show(value[key]),
                           **({"did_you_mean": prefix + near[0]} if near else {})})
    for name, spec in specs.items():
        if name not in value or (value[name] is None and not spec.required
                                 and not _accepts_none(spec.type)):
            if spec.required:
                errors.append({"field": prefix + name, "problem": "missing",
                               "expected": _describe(spec.type), "got": "nothing"})
            continue  # absent (or null for a defaulted field): Python fills the default
        out[name] = _convert(spec.type, value[name], prefix + name, errors, strict)
    return out


def _accepts_none(tp: Any) -> bool:
    trial: list[dict] = []
    _convert(tp, None, "", trial, strict=True)
    return not trial


def _format_errors(tool: str, errors: list[dict]) -> str:
    lines = [f"Invalid arguments for tool '{tool}' ({len(errors)} "
             f"problem{'s' if len(errors) != 1 else ''}):"]
    for e in errors:
        if e["problem"] == "missing":
            text = f"missing required field (expected {e['expected']})"
        elif e["problem"] == "unexpected":
            text = f"unexpected field (allowed: {e['expected'][len('one of the fields '):]})"
            if "did_you_mean" in e:
                text += f"; did you mean '{e['did_you_mean']}'?"
        else:
            text = f"expected {e['expected']}; got {e['got']}"
        lines.append(f"- {e['field']}: {text}")
    lines.append(f"Fix these fields and call '{tool}' again.")
    return "\n".join(lines)


# -- the registry --------------------------------------------------------------------------------
class ToolRegistry:
    """Registered tools with their schemas and options (``notebooks/02_tool_registry``).

    Tool options (``get_options``): ``timeout`` in seconds (None: the executor decides) and
    ``side_effects``. A side-effecting tool with an ``idempotency_key`` parameter gets that
    parameter from the executor (the tool call id), so it is left out of the schema.
    """

    def __init__(self) -> None:
        self._tools: dict[str, _Tool] = {}
        self._lock = threading.Lock()

    def tool(self, name: str | Callable | None = None, description: str | None = None, *,
             timeout: float | None = None, side_effects: bool = False) -> Callable:
        """Decorator: ``@registry.tool``, ``@registry.tool()`` or ``@registry.tool("x", ...)``."""
        if callable(name):  # used bare: @registry.tool
            return self.register(name)

        def decorator(func: Callable) -> Callable:
            return self.register(func, name, description, timeout=timeout,
                                 side_effects=side_effects)
        return decorator

    def register(self, func: Callable, name: str | None = None, description: str | None = None,
                 *, timeout: float | None = None, side_effects: bool = False,
                 replace: bool = False) -> Callable:
        """Register ``func`` and return it unchanged.

        Raises:
            ConfigError: ``tool_exists`` (name taken and ``replace`` is False),
                ``invalid_tool_name``, ``unsupported_signature``, ``unsupported_type``,
                ``invalid_option``.
        """
        name = name or getattr(func, "__name__", "")
        if not _NAME_RE.match(name):
            raise ConfigError("invalid_tool_name", f"tool name {name!r} must match "
                              "[A-Za-z0-9_-]{1,64}; pass name=... to register()")
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ConfigError("invalid_option", f"tool {name!r}: timeout must be a positive "
                              f"number of seconds or None, got {timeout!r}")
        schema, params = _inspect_tool(func, name, description, side_effects)
        takes_key = side_effects and IDEMPOTENCY_PARAM in inspect.signature(func).parameters
        options = {"timeout": timeout, "side_effects": bool(side_effects),
                   "idempotency_key": takes_key}
        with self._lock:
            if name in self._tools and not replace:
                raise ConfigError("tool_exists", f"a tool named {name!r} is already registered; "
                                  "pick another name or pass replace=True")
            self._tools[name] = _Tool(name, func, schema, params, options)
        return func

    def get_function(self, name: str) -> Callable | None:
        """The registered function, or None for an unknown name (as in the article)."""
        tool = self._tools.get(name)
        return tool.func if tool else None

    def get_schema(self, name: str) -> dict | None:
        """A copy of the tool's schema, or None for an unknown name."""
        tool = self._tools.get(name)
        return copy.deepcopy(tool.schema) if tool else None

    def get_all_schemas(self) -> list[dict]:
        """Copies of every schema, in registration order (what goes in ``tools=``)."""
        return [copy.deepcopy(t.schema) for t in list(self._tools.values())]

    def list_tools(self) -> list[str]:
        return list(self._tools)

    def get_options(self, name: str) -> dict[str, Any]:
        """``{"timeout": seconds | None, "side_effects": bool, "idempotency_key": bool}``."""
        return dict(self._require(name).options)

    def validate(self, name: str, arguments: dict | None) -> dict:
        """Check model-supplied ``arguments``; return them converted for the function.

        Raises:
            ToolError: ``tool_not_found`` (listing the available tools) or
                ``invalid_arguments`` naming every bad field, ``details={"errors": [...]}``.
        """
        tool = self._require(name)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError("invalid_arguments", f"Invalid arguments for tool '{name}': "
                            f"expected a JSON object of named arguments, got "
                            f"{_json_type(arguments)}. Call '{name}' again with an object.",
                            details={"tool": name, "errors": [{
                                "field": "", "problem": "wrong_type", "expected": "object",
                                "got": _json_type(arguments)}]})
        errors: list[dict] = []
        out = _check_fields(tool.params, arguments, "", errors)
        if errors:
            raise ToolError("invalid_arguments", _format_errors(name, errors),
                            details={"tool": name, "errors": errors})
        return out

    def _require(self, name: str) -> _Tool:
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "(none)"
            raise ToolError("tool_not_found", f"Unknown tool '{name}'. Available tools: "
                            f"{available}. Call one of these by its exact name.",
                            details={"tool": name, "available": list(self._tools)})
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools)})"

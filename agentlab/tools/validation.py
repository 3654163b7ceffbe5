"""Validation of model-supplied tool arguments against the schema (chapter 02).

Coerces only what cannot lose information and reports every bad field in one
``ToolError("invalid_arguments")``; see ``agentlab.tools`` for the rules. Parameters that
pydantic describes (``Param.model``) are validated by pydantic, in the same report, after
their scalar leaves went through the same coercion rules as top-level parameters
(``_by_schema``: ``true`` is not an integer at any depth, ``42`` is a fine string at any depth).
"""
from __future__ import annotations

import dataclasses
import difflib
import enum
import inspect
import json
import math
import re
import typing
from typing import Any

from .kinds import is_typeddict, is_union, json_type, show_value
from .schema import PRIMITIVES, Param, type_fields

__all__ = ["json_type", "check_fields", "format_errors"]



def _describe(tp: Any) -> str:
    """A short human/model-readable name of what a type expects."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _describe(args[0])
    if tp in PRIMITIVES:
        return PRIMITIVES[tp]
    if origin is list:
        return f"array of {_describe(args[0])}"
    if origin is dict:
        return f"object with {_describe(args[1])} values"
    if is_union(origin):
        return " or ".join(_describe(a) for a in args)
    if origin is typing.Literal or isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = args if origin is typing.Literal else [m.value for m in tp]
        return "one of " + ", ".join(json.dumps(v) for v in values)
    if dataclasses.is_dataclass(tp) or is_typeddict(tp):
        return "object {" + ", ".join(n for n, *_ in type_fields(tp)) + "}"
    if isinstance(getattr(tp, "model_fields", None), dict):  # a pydantic model
        return "object {" + ", ".join(tp.model_fields) + "}"
    return {list: "array", dict: "object"}.get(tp, "any value")


def _kind(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _kind(typing.get_args(tp)[0])
    if tp is dict or origin is dict or dataclasses.is_dataclass(tp) or is_typeddict(tp):
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


_SCALARS = {"integer": int, "number": float, "boolean": bool, "string": str, "null": type(None)}


def _by_schema(schema: Any, value: Any, path: str, errors: list[dict],
               strict: bool = False) -> Any:
    """The top-level scalar rules (``_coerce_scalar``) applied to every scalar leaf of a value
    that pydantic validates next, walking its JSON schema: a leaf they refuse is reported
    here, a leaf only they coerce (``42`` for a string) is passed on coerced. What the schema
    does not pin down (enums, formats pydantic parses, unions no member fits) is left to
    pydantic."""
    if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
        return value
    members = schema.get("anyOf") or schema.get("oneOf")
    if members:
        for lax in (False, True) if not strict else (False,):  # exact first, as for unions
            for m in members:
                trial: list[dict] = []
                out = _by_schema(m, value, path, trial, strict=not lax)
                if not trial:
                    return out
        return value
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _SCALARS:
        ok, out = _coerce_scalar(_SCALARS[kind], value, strict)
        if ok:  # pydantic converts the rest the same way and reports what the model sent
            return out if kind == "string" and not isinstance(value, str) else value
        errors.append({"field": path, "problem": "wrong_type", "expected": kind,
                       "got": f"{show_value(value)} ({json_type(value)})"})
        return value
    if kind == "object" and isinstance(value, dict):
        props, extra = schema.get("properties") or {}, schema.get("additionalProperties")
        return {k: _by_schema(props.get(k, extra), v, f"{path}.{k}", errors, strict)
                for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        prefix, items = schema.get("prefixItems") or [], schema.get("items")
        return [_by_schema(prefix[i] if i < len(prefix) else items, v, f"{path}[{i}]", errors,
                           strict) for i, v in enumerate(value)]
    return value


def _convert(tp: Any, value: Any, path: str, errors: list[dict], strict: bool = False) -> Any:
    """Check ``value`` against ``tp``; append one error per bad leaf; return the converted value."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert(args[0], value, path, errors, strict)

    def bad(problem: str = "wrong_type") -> None:
        err = {"field": path, "problem": problem, "expected": _describe(tp),
               "got": f"{show_value(value)} ({json_type(value)})"}
        if _allowed(tp) is not None:
            err["allowed"] = _allowed(tp)
        errors.append(err)

    if tp is Any or tp is inspect.Parameter.empty:
        return value
    if tp in PRIMITIVES:
        ok, out = _coerce_scalar(tp, value, strict)
        return out if ok else bad()
    if is_union(origin):
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
    return value  # not reachable for registered types: the rest goes to pydantic


def check_fields(specs: dict[str, Param], value: dict, prefix: str, errors: list[dict],
                  strict: bool = False) -> dict:
    out = {}
    for key in value:
        if key not in specs:
            near = difflib.get_close_matches(key, list(specs), n=1)
            errors.append({"field": prefix + key, "problem": "unexpected",
                           "expected": "one of the fields " + ", ".join(specs),
                           "got": show_value(value[key]),
                           **({"did_you_mean": prefix + near[0]} if near else {})})
    for name, spec in specs.items():
        if name not in value or (value[name] is None and not spec.required
                                 and not _accepts_none(spec)):
            if spec.required:
                errors.append({"field": prefix + name, "problem": "missing",
                               "expected": _describe(spec.type), "got": "nothing"})
            elif spec.model is not None and spec.model.fills_default:
                out[name] = spec.model.default()  # the Field's default, never the FieldInfo
            continue  # absent (or null for a defaulted field): Python fills the default
        if spec.model is not None:
            ours: list[dict] = []
            given = _by_schema(spec.model.schema, value[name], prefix + name, ours, strict)
            theirs: list[dict] = []
            out[name] = spec.model.validate(given, prefix + name, theirs)
            mine = {e["field"]: e for e in ours}  # one report per field, in pydantic's order
            errors.extend([mine.pop(e["field"], e) for e in theirs] + list(mine.values()))
            if ours:
                out[name] = None
        else:
            out[name] = _convert(spec.type, value[name], prefix + name, errors, strict)
    return out


def _accepts_none(spec: Param) -> bool:
    if spec.model is not None:
        return spec.model.accepts_none
    trial: list[dict] = []
    _convert(spec.type, None, "", trial, strict=True)
    return not trial


def format_errors(tool: str, errors: list[dict]) -> str:
    lines = [f"Invalid arguments for tool '{tool}' ({len(errors)} "
             f"problem{'s' if len(errors) != 1 else ''}):"]
    for e in errors:
        if e["problem"] == "missing":
            text = "missing required field" + ("" if "message" in e else
                                               f" (expected {e['expected']})")
        elif e["problem"] == "unexpected" and "message" in e:
            text = "unexpected field (not one of this object's fields)"
        elif e["problem"] == "unexpected":
            text = f"unexpected field (allowed: {e['expected'][len('one of the fields '):]})"
            if "did_you_mean" in e:
                text += f"; did you mean '{e['did_you_mean']}'?"
        elif "message" in e:  # from pydantic: its own sentence, e.g. "Input should be >= 0"
            text = f"{e['message']}; got {e['got']}"
        else:
            text = f"expected {e['expected']}; got {e['got']}"
        lines.append(f"- {e['field']}: {text}")
    lines.append(f"Fix these fields and call '{tool}' again.")
    return "\n".join(lines)



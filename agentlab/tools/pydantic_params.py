"""Parameters that pydantic describes and validates (chapter 02, ``notebooks/02_tool_registry``).

The chapter's own schema builder (``schema.py``) covers plain type hints. A parameter that
mentions a pydantic ``BaseModel``, a dataclass, a ``TypedDict``, a ``Field(...)`` (as default
or in ``Annotated``) or an ``annotated_types`` constraint is handed to pydantic, the field's
standard for exactly this: its JSON schema (constraints such as ``ge``/``max_length``/
``pattern`` included) and its validation, which coerces the model's JSON into the instances
the function expects. What pydantic coerces (its *lax* mode, e.g. ``"5"`` -> 5 for an ``int``
field, ``"yes"`` -> True for a ``bool`` field) is documented at
https://docs.pydantic.dev/latest/concepts/conversion_table/.

Choices made here, and why:

- Unknown keys are refused (``extra="forbid"``) in dataclasses and TypedDicts, as in the
  hand-written path (a misspelt key must not vanish silently); a ``BaseModel`` keeps its own
  ``model_config`` (the author decided).
- Attribute docstrings (a string literal under a field) describe fields, and so does an
  ``Attributes:`` section of the class docstring; the class description is its first paragraph.
- ``$ref``/``$defs`` are inlined (recursive types are refused) and ``title`` keys dropped, so
  the schema has the same shape as the hand-written one and costs fewer tokens.
- ``Annotated[T, "text"]`` describes a nested field as it does a parameter (pydantic itself
  ignores plain strings in ``Annotated``).
- A ``typing.TypedDict`` (which pydantic refuses before Python 3.12) is rebuilt as a
  ``typing_extensions.TypedDict`` with the same fields, docstring and source location.
- ``tuple``, ``set`` and ``Mapping`` parameters come here at the top level too, so they are
  described and checked exactly as they are nested; the scalar coercion rules of the
  hand-written validator are applied to nested values as well (``validation.py``).

pydantic is imported only when such a parameter is registered (it takes ~0.2 s to import).
"""
from __future__ import annotations

import collections.abc
import copy
import dataclasses
import enum
import functools
import inspect
import operator
import sys
import types
import typing
from typing import Any

import typing_extensions

from ..errors import ConfigError
from .docstrings import parse_docstring
from .kinds import is_typeddict, json_type, show_value

__all__ = ["needs_pydantic", "PydanticParam", "is_fieldinfo"]

_SCHEMA_MAPS = ("properties", "$defs", "patternProperties", "definitions")
_VALUE_KEYS = ("default", "enum", "const", "examples")
_UNEXPECTED = {"extra_forbidden", "unexpected_keyword_argument"}
#: Containers the hand-written schema walk refuses but pydantic describes faithfully enough.
_CONTAINERS = (tuple, set, frozenset, collections.abc.Mapping, collections.abc.MutableMapping)


def is_fieldinfo(value: Any) -> bool:
    """True for a ``pydantic.Field(...)`` object (without importing pydantic)."""
    fields = sys.modules.get("pydantic.fields")
    return fields is not None and isinstance(value, fields.FieldInfo)


def _is_basemodel(tp: Any) -> bool:
    main = sys.modules.get("pydantic.main")
    return main is not None and isinstance(tp, type) and issubclass(tp, main.BaseModel)


def _is_class_type(tp: Any) -> bool:
    return isinstance(tp, type) and (dataclasses.is_dataclass(tp) or is_typeddict(tp)
                                     or _is_basemodel(tp))


def _pydantic_metadata(meta: Any) -> bool:
    return type(meta).__module__.split(".")[0] in ("pydantic", "annotated_types")


def needs_pydantic(hint: Any, default: Any = inspect.Parameter.empty) -> bool:
    """Whether this parameter goes to pydantic rather than the hand-written builder."""
    if is_fieldinfo(default):
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return any(_pydantic_metadata(m) for m in args[1:]) or needs_pydantic(args[0])
    if _is_class_type(hint) or hint in _CONTAINERS or origin in _CONTAINERS:
        return True
    if origin is typing.Literal:
        return False
    return any(needs_pydantic(a) for a in args if a is not Ellipsis)


def _classes(tp: Any, found: dict[str, type], depth: int = 0) -> None:
    """Every class a schema ``$defs`` entry may stand for, by name."""
    if depth > 20:
        return
    if isinstance(tp, type) and (_is_class_type(tp) or issubclass(tp, enum.Enum)):
        if tp.__name__ in found:
            return
        found[tp.__name__] = tp
        if _is_basemodel(tp):
            hints = [f.annotation for f in tp.model_fields.values()]
        else:
            try:
                hints = list(typing.get_type_hints(tp).values()) if not issubclass(
                    tp, enum.Enum) else []
            except Exception:  # unresolvable: pydantic will say so
                hints = []
        for h in hints:
            _classes(h, found, depth + 1)
        return
    for a in typing.get_args(tp):
        _classes(a, found, depth + 1)


def _needs_rebuild(tp: Any) -> bool:
    return (sys.version_info < (3, 12) and is_typeddict(tp)
            and type(tp).__module__ == "typing")


def _portable(tp: Any, depth: int = 0) -> Any:
    """``tp`` with every ``typing.TypedDict`` in it rebuilt as a ``typing_extensions`` one
    (pydantic refuses typing's before Python 3.12); other types are returned as they are."""
    if depth > 20:
        return tp
    if _needs_rebuild(tp):
        fields = {}
        for name, hint in typing.get_type_hints(tp, include_extras=True).items():
            required = name in tp.__required_keys__
            while typing.get_origin(hint) in (typing_extensions.Required,
                                              typing_extensions.NotRequired):
                required = typing.get_origin(hint) is typing_extensions.Required
                hint = typing.get_args(hint)[0]
            wrap = typing_extensions.Required if required else typing_extensions.NotRequired
            fields[name] = wrap[_portable(hint, depth + 1)]
        new = typing_extensions.TypedDict(tp.__name__, fields)
        new.__doc__, new.__module__, new.__qualname__ = tp.__doc__, tp.__module__, tp.__qualname__
        return new
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if not args:
        return tp
    new_args = tuple(a if a is Ellipsis or isinstance(a, (str, int)) else _portable(a, depth + 1)
                     for a in (args[:1] if origin is typing.Annotated else args))
    if all(a is b for a, b in zip(new_args, args)):
        return tp
    if origin is typing.Annotated:
        return typing.Annotated[(new_args[0], *args[1:])]
    if origin is types.UnionType:
        return functools.reduce(operator.or_, new_args)
    if isinstance(tp, types.GenericAlias):
        return types.GenericAlias(origin, new_args)
    return tp.copy_with(new_args)


def _annotated_texts(cls: type) -> dict[str, str]:
    """``{field: text}`` for each field of ``cls`` annotated ``Annotated[T, "text"]``."""
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # unresolvable: pydantic will say so
        return {}
    out = {}
    for name, hint in hints.items():
        while typing.get_origin(hint) in (typing_extensions.Required,
                                          typing_extensions.NotRequired):
            hint = typing.get_args(hint)[0]
        if typing.get_origin(hint) is typing.Annotated:
            text = next((a for a in typing.get_args(hint)[1:] if isinstance(a, str)), None)
            if text:
                out[name] = text
    return out


def _describe_classes(defs: dict, classes: dict[str, type]) -> None:
    """Class descriptions from the first docstring paragraph; field texts from its sections."""
    for key, node in defs.items():
        cls = classes.get(key)
        if cls is None or not isinstance(node, dict):
            continue
        doc = cls.__doc__ or ""
        if doc.startswith(cls.__name__ + "(") or (issubclass(cls, enum.Enum)
                                                  and doc == enum.Enum.__doc__):
            doc = ""  # the text dataclasses/Enum write when a class has no docstring
        if _is_basemodel(cls) and doc == sys.modules["pydantic.main"].BaseModel.__doc__:
            doc = ""
        summary, params = parse_docstring(doc)
        node.pop("description", None)
        if summary and "An enumeration." not in summary:
            node["description"] = summary
        texts = {} if issubclass(cls, enum.Enum) else _annotated_texts(cls)
        for name, prop in (node.get("properties") or {}).items():
            text = params.get(name) or texts.get(name)  # when no Field or attribute doc did
            if text and isinstance(prop, dict) and "description" not in prop:
                prop["description"] = text


def _inline(node: Any, defs: dict, stack: tuple = ()) -> Any:
    """Replace ``$ref`` by the definition it names and drop ``title`` keys."""
    if isinstance(node, list):
        return [_inline(x, defs, stack) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        key = node["$ref"].rsplit("/", 1)[-1]
        if key in stack:
            raise ConfigError("unsupported_type", f"{key} refers to itself; recursive types "
                              "cannot be inlined in a tool schema")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline({**copy.deepcopy(defs[key]), **rest}, defs, stack + (key,))
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("title", "$defs"):
            continue
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {n: _inline(s, defs, stack) for n, s in v.items()}
        elif k in _VALUE_KEYS:
            out[k] = v
        else:
            out[k] = _inline(v, defs, stack)
    first = [k for k in ("type", "description") if k in out]  # the hand-written order
    return {**{k: out[k] for k in first}, **{k: v for k, v in out.items() if k not in first}}


class PydanticParam:
    """One tool parameter validated by pydantic (a one-field model ``v: hint = default``).

    Attributes:
        schema: its JSON schema (inlined, without titles).
        required: no default, not even in a ``Field``.
        accepts_none: ``null`` is a valid value (else ``null`` means "use the default").
        fills_default: the default lives in a ``Field(...)``, so the executor must pass it (a
            function called without it would receive the ``FieldInfo``, or miss the argument).
    """

    def __init__(self, tool: str, name: str, hint: Any, default: Any) -> None:
        from pydantic import ConfigDict, ValidationError, create_model  # lazy: heavy

        self._error_type = ValidationError
        hint = _portable(hint)
        # no Python default: let the annotation decide (``Annotated[T, Field(default=...)]``
        # has one, and then the executor must pass it, or Python would miss the argument)
        spec = hint if default is inspect.Parameter.empty else (hint, default)
        config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
        try:
            self.model = create_model(f"{tool}__{name}", __config__=config, v=spec)
            raw = self.model.model_json_schema()
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError("unsupported_type", f"tool {tool!r}, parameter {name!r}: "
                              f"pydantic cannot describe {hint!r} ({type(exc).__name__}: "
                              f"{exc})") from exc
        defs = raw.get("$defs", {})
        classes: dict[str, type] = {}
        _classes(hint, classes)
        _describe_classes(defs, classes)
        self.schema = _inline(raw["properties"]["v"], defs)
        self.required = "v" in raw.get("required", [])
        self.fills_default = not self.required and (is_fieldinfo(default)
                                                    or default is inspect.Parameter.empty)
        try:
            self.model.model_validate({"v": None})
            self.accepts_none = True
        except ValidationError:
            self.accepts_none = False

    def default(self) -> Any:
        """The default value pydantic computes (``default_factory`` called anew each time)."""
        return self.model.model_validate({}).v

    def validate(self, value: Any, path: str, errors: list[dict]) -> Any:
        """The converted value, or None with one error per problem appended to ``errors``."""
        try:
            return self.model.model_validate({"v": value}).v
        except self._error_type as exc:
            for e in exc.errors(include_url=False):
                loc = e["loc"][1:]
                field = path + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
                problem = ("missing" if e["type"] == "missing" else
                           "unexpected" if e["type"] in _UNEXPECTED else "invalid")
                got = "nothing" if problem == "missing" else \
                    f"{show_value(e['input'])} ({json_type(e['input'])})"
                errors.append({"field": field, "problem": problem, "message": e["msg"],
                               "expected": e["msg"], "got": got, "pydantic_type": e["type"]})
            return None

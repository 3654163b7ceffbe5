"""Small shared predicates of chapter 02: what kind of JSON value or Python type this is."""
from __future__ import annotations

import json
import types
import typing
from typing import Any

__all__ = ["json_type", "show_value", "is_typeddict", "is_union"]


def json_type(value: Any) -> str:
    """The JSON name of a value's type (``"integer"``, ``"array"``, ...), else its class name."""
    if isinstance(value, bool):
        return "boolean"
    return {str: "string", int: "integer", float: "number", list: "array", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)


def show_value(value: Any) -> str:
    """The value as the model wrote it (JSON), cut to 60 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def is_union(origin: Any) -> bool:
    return origin is typing.Union or origin is types.UnionType

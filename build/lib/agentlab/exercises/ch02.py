"""Checks for exercise 02, schemas for choice types (``notebooks/exercises/02_schema_types.ipynb``).

The student writes ``json_type(value)`` (the JSON type name of one Python value) and
``choice_schema(tp)`` (the JSON schema of a ``Literal[...]`` or an ``Enum`` class): the allowed
values under ``"enum"``, plus ``"type"`` only when every value has the same JSON type. The
answers are the ones ``agentlab.tools.schema_for_type`` gives.
"""
from __future__ import annotations

import enum
from typing import Callable, Literal

from .cases import Case, run_cases

__all__ = ["check_json_type", "check_choice_schema"]


class _Color(enum.Enum):
    RED = "red"
    GREEN = "green"
    BLUE = "blue"


class _Level(enum.IntEnum):
    LOW = 1
    MID = 2
    HIGH = 3


class _Mixed(enum.Enum):
    AUTO = "auto"
    ONE = 1


class _Backwards(enum.Enum):
    Z = "zeta"
    A = "alpha"


def check_json_type(fn: Callable) -> str:
    """Check ``fn(value) -> "string" | "integer" | "number" | "boolean" | "null"``."""
    bool_hint = ("bool is a subclass of int in Python (isinstance(True, int) is True): test for "
                 "bool first, or compare type(value) exactly.")
    return run_cases("json_type", [
        Case("a str", lambda: fn("fast"), "string", hint="str -> \"string\"."),
        Case("an int", lambda: fn(3), "integer", hint="int -> \"integer\"."),
        Case("a float", lambda: fn(2.5), "number", hint="float -> \"number\" (JSON's name)."),
        Case("True", lambda: fn(True), "boolean", hint=bool_hint),
        Case("False", lambda: fn(False), "boolean", hint=bool_hint),
        Case("None", lambda: fn(None), "null", hint="None is JSON null -> \"null\"."),
    ])


def _raises_type_error(fn: Callable, tp) -> str:
    try:
        fn(tp)
    except TypeError:
        return "TypeError"
    return "no error"


def check_choice_schema(fn: Callable) -> str:
    """Check ``fn(tp) -> dict`` for ``Literal[...]`` and ``Enum`` classes."""
    same_type = "add \"type\" when every value has the same JSON type (use json_type)."
    return run_cases("choice_schema", [
        Case("Literal of strings", lambda: fn(Literal["fast", "slow"]),
             {"type": "string", "enum": ["fast", "slow"]},
             hint="typing.get_args(tp) gives the values; " + same_type),
        Case("Literal of ints", lambda: fn(Literal[1, 3, 7]),
             {"type": "integer", "enum": [1, 3, 7]}, hint=same_type),
        Case("Literal of bools is boolean, not integer", lambda: fn(Literal[True, False]),
             {"type": "boolean", "enum": [True, False]},
             hint="True is an int too: json_type must check bool before int."),
        Case("a one-value Literal", lambda: fn(Literal["only"]),
             {"type": "string", "enum": ["only"]},
             hint="one value is still a list under \"enum\"."),
        Case("mixed Literal has no type", lambda: fn(Literal["auto", 1]),
             {"enum": ["auto", 1]},
             hint="values of different JSON types: leave \"type\" out, keep \"enum\"."),
        Case("Enum: the values, not the names", lambda: fn(_Color),
             {"type": "string", "enum": ["red", "green", "blue"]},
             hint="the model sends values: [member.value for member in tp]."),
        Case("IntEnum", lambda: fn(_Level), {"type": "integer", "enum": [1, 2, 3]},
             hint="an IntEnum's values are ints (and isinstance(_Level, type) is True)."),
        Case("Enum with mixed values", lambda: fn(_Mixed), {"enum": ["auto", 1]},
             hint="mixed value types: no \"type\"."),
        Case("definition order kept", lambda: fn(_Backwards),
             {"type": "string", "enum": ["zeta", "alpha"]},
             hint="iterate the Enum class (definition order); do not sort."),
        Case("not a choice type -> TypeError", lambda: _raises_type_error(fn, int), "TypeError",
             hint="raise TypeError for anything that is neither a Literal nor an Enum class."),
    ])

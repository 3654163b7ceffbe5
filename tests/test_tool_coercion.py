"""One set of rules for every parameter (issue 21): nested fields (described by pydantic) and
top-level ones (the chapter's own validator) coerce and refuse the same values; ``tuple`` and
``Mapping`` are handled the same at both levels; ``Annotated[T, "text"]`` describes nested
fields too; a ``typing.TypedDict`` works on Python 3.11 as well as a ``typing_extensions`` one."""
from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated

import pytest

from agentlab.errors import ToolError
from agentlab.tools import ToolRegistry


@dataclass
class Box:
    """A box."""

    count: int
    label: str
    weight: float = 1.0
    fragile: bool = False
    note: Annotated[str, "what to write on the lid"] = ""


def pack(box: Box, count: int = 1, label: str = "", weight: float = 1.0,
         fragile: bool = False) -> str:
    return "packed"


def problems(reg, name, args):
    with pytest.raises(ToolError) as info:
        reg.validate(name, args)
    return sorted(e["field"] for e in info.value.details["errors"])


@pytest.fixture
def reg():
    reg = ToolRegistry()
    reg.register(pack)
    return reg


@pytest.mark.parametrize("field, value", [("count", True), ("count", 5.5), ("count", "five"),
                                          ("weight", True), ("fragile", 1), ("fragile", "yes"),
                                          ("label", True), ("label", ["a"])])
def test_a_value_refused_at_top_level_is_refused_nested(reg, field, value):
    box = {"count": 1, "label": "x", field: value}
    assert problems(reg, "pack", {"box": box, field: value}) == sorted([field, f"box.{field}"])


@pytest.mark.parametrize("field, value, want", [("count", "5", 5), ("count", 7.0, 7),
                                                ("label", 42, "42"), ("weight", "2.5", 2.5),
                                                ("fragile", "true", True)])
def test_a_value_coerced_at_top_level_is_coerced_the_same_nested(reg, field, value, want):
    out = reg.validate("pack", {"box": {"count": 1, "label": "x", field: value}, field: value})
    assert out[field] == want and getattr(out["box"], field) == want
    assert type(out[field]) is type(getattr(out["box"], field)) is type(want)


def test_nested_annotated_text_describes_the_field(reg):
    box = reg.get_schema("pack")["function"]["parameters"]["properties"]["box"]
    assert box["properties"]["note"]["description"] == "what to write on the lid"


@dataclass
class Route:
    stops: tuple[str, ...]
    start: tuple[float, float]
    tags: Mapping[str, int]


def plan(route: Route, stops: tuple[str, ...], start: tuple[float, float],
         tags: Mapping[str, int]) -> str:
    return "planned"


def test_tuple_and_mapping_are_handled_the_same_at_both_levels():
    reg = ToolRegistry()
    reg.register(plan)  # was: unsupported_type at top level, accepted nested
    props = reg.get_schema("plan")["function"]["parameters"]["properties"]
    for name in ("stops", "start", "tags"):
        assert props[name] == props["route"]["properties"][name], name
    args = {"stops": ["a", "b"], "start": [1, 2.5], "tags": {"x": 1}}
    out = reg.validate("plan", {"route": args, **args})
    for name in ("stops", "start", "tags"):
        assert out[name] == getattr(out["route"], name), name
    assert out["start"] == (1.0, 2.5) and isinstance(out["stops"], tuple)
    bad = {"stops": ["a"], "start": [1], "tags": {"x": True}}
    assert problems(reg, "plan", {"route": bad, **bad}) == sorted(
        ["start[1]", "tags.x", "route.start[1]", "route.tags.x"])


class Query(typing.TypedDict):  # typing's own, not typing_extensions'
    """A search query."""

    text: str
    limit: int


def search(query: Query) -> str:
    return "found"


def test_a_typing_typeddict_parameter_is_accepted():
    reg = ToolRegistry()
    reg.register(search)  # pydantic refuses typing.TypedDict before Python 3.12
    prop = reg.get_schema("search")["function"]["parameters"]["properties"]["query"]
    assert prop["required"] == ["text", "limit"] and prop["description"] == "A search query."
    assert reg.validate("search", {"query": {"text": "a", "limit": "3"}}) == {
        "query": {"text": "a", "limit": 3}}
    assert problems(reg, "search", {"query": {"text": "a", "limit": True}}) == ["query.limit"]

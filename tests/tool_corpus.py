"""A corpus of tool signatures written the way people write them (issue #12, Build 9).

Most are ported from the schema tests of well-known agent libraries -- the signature and what
those tests expect of it, re-typed here:

- openai-agents-python ``tests/test_function_schema.py`` (simple_function, complex_args_function,
  MyClass methods, enum_and_literal_function, the ``Field``/``Annotated[T, Field]`` functions and
  the description-precedence tests);
- pydantic-ai ``tests/test_tools.py`` (google/sphinx/numpy_style_docstring,
  google_style_docstring_no_body, takes_just_model / takes_model_and_int, unknown_docstring);
- LangChain ``tests/unit_tests/utils/test_function_calling.py`` (dummy_function,
  annotated_function, a TypedDict argument);

plus ordinary modern Python (async clients, dataclasses, ``functools.partial``, callable objects).

Every tool reports what it received through ``seen(locals())``; ``tests/test_tool_corpus.py``
registers each one, checks its schema, validates accepted and rejected arguments against both
the registry and ``jsonschema`` on the same schema, runs accepted ones through the real
``ToolExecutor`` and compares what the tool got.

Documented coercions (accepted by the registry although the schema says otherwise, listed per
entry in ``coerced``): a numeric string for a number ("5" -> 5), in both paths; an integer for a
string (42 -> "42") in both paths too (issue 21: nested and top-level values follow one set of
rules; pydantic alone would refuse it); "true"/"false" for a bool. Signatures the registry refuses on purpose (``*args``/``**kwargs``, positional-only) are
in ``REFUSED`` with the code they get.
"""
from __future__ import annotations

import asyncio
import copy
import enum
import functools
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Literal, Optional

from pydantic import BaseModel, Field
from typing_extensions import NotRequired, TypedDict

RECEIVED: list[dict] = []


def seen(local_vars: dict) -> str:
    """Record what a tool received (minus ``self``/``cls``), return a short text."""
    RECEIVED.append(copy.deepcopy({k: v for k, v in local_vars.items()
                                   if k not in ("self", "cls")}))
    return "ok"


@dataclass
class Entry:
    """One signature: its schema, and arguments with what the tool must receive for them."""

    tool: Callable
    source: str
    properties: dict              # the schema's "properties", exactly
    required: list[str]
    accepted: list[tuple[dict, dict]] = field(default_factory=list)  # (arguments, received)
    rejected: list[dict] = field(default_factory=list)
    coerced: list[tuple[dict, dict]] = field(default_factory=list)   # accepted, schema says no
    description: str | None = None
    name: str | None = None


# -- openai-agents-python: tests/test_function_schema.py ------------------------------------------
def simple_function(a: int, b: int = 5):
    """
    Args:
        a: The first argument
        b: The second argument

    Returns:
        The sum of a and b
    """
    return seen(locals())


class Foo(TypedDict):
    a: int
    b: str


class InnerModel(BaseModel):
    a: int
    b: str


class OuterModel(BaseModel):
    inner: InnerModel
    foo: Foo


def complex_args_and_docs_function(model: OuterModel, some_flag: int = 0) -> str:
    """
    This function takes a model and a flag, and returns a string.

    Args:
        model: A model with an inner and foo field
        some_flag: An optional flag with a default of 0
    """
    return seen(locals())


class MyClass:
    def foo(self, a: int, b: int = 5):
        return seen(locals())

    @classmethod
    def bar(cls, a: int, b: int = 5):
        return seen(locals())

    @staticmethod
    def baz(a: int, b: int = 5):
        return seen(locals())


class MyEnum(str, enum.Enum):
    FOO = "foo"
    BAR = "bar"
    BAZ = "baz"


def enum_and_literal_function(a: MyEnum, b: Literal["a", "b", "c"]) -> str:
    return seen(locals())


def func_with_field_constraints(my_number: int = Field(..., gt=10, le=100)) -> int:
    return seen(locals())


def func_with_optional_field(required_param: str,
                             optional_param: float = Field(default=5.0, ge=0.0)) -> str:
    return seen(locals())


def add(a: Annotated[int, "First number to add"], b: Annotated[int, "Second number to add"]):
    return seen(locals())


def add_documented(a: Annotated[int, "Annotated description for a"],
                   b: Annotated[int, "Annotated description for b"]) -> int:
    """Adds two integers.

    Args:
        a: Docstring provided description.
    """
    return seen(locals())


def func_with_field_and_docstring(
        param_with_field_desc: int = Field(..., description="Field description"),
        param_with_both: str = Field(default="hello", description="Field description")) -> str:
    """
    Function with both field and docstring descriptions.

    Args:
        param_with_field_desc: Docstring description
        param_with_both: Docstring description
    """
    return seen(locals())


def func_with_string_field(
        name: str = Field(..., min_length=3, max_length=20, pattern=r"^[A-Za-z]+$")) -> str:
    return seen(locals())


def func_with_multiple_field_constraints(
        score: int = Field(..., ge=0, le=100, description="Score from 0 to 100"),
        name: str = Field(default="Unknown", min_length=1, max_length=50),
        factor: float = Field(default=1.0, gt=0.0, description="Positive multiplier")) -> str:
    return seen(locals())


def func_with_annotated_optional_field(
        required_param: str,
        optional_param: Annotated[float, Field(default=5.0, ge=0.0)]) -> str:
    return seen(locals())


# -- pydantic-ai: tests/test_tools.py ---------------------------------------------------------------
async def google_style_docstring(foo: int, bar: str) -> str:
    """Do foobar stuff, a lot.

    Args:
        foo: The foo thing.
        bar: The bar thing.
    """
    await asyncio.sleep(0)
    return seen(locals())


def sphinx_style_docstring(foo: int) -> str:  # pydantic-ai's is positional-only (see REFUSED)
    """Sphinx style docstring.

    :param foo: The foo thing.
    """
    return seen(locals())


def numpy_style_docstring(*, foo: int, bar: str) -> str:
    """Numpy style docstring.

    Parameters
    ----------
    foo : int
        The foo thing.
    bar : str
        The bar thing.
    """
    return seen(locals())


async def google_style_docstring_no_body(
        foo: int, bar: Annotated[str, Field(description="from fields")]) -> str:
    """
    Args:
        foo: The foo thing.
        bar: The bar thing.
    """
    return seen(locals())


class FooModel(BaseModel):
    x: int
    y: str


def takes_just_model(model: FooModel) -> str:
    return seen(locals())


def takes_model_and_int(model: FooModel, z: int) -> str:
    return seen(locals())


# -- LangChain: tests/unit_tests/utils/test_function_calling.py -------------------------------------
def dummy_function(arg1: int, arg2: Literal["bar", "baz"]) -> None:
    """Dummy function.

    Args:
        arg1: foo
        arg2: one of 'bar', 'baz'
    """
    return seen(locals())


def annotated_function(arg1: Annotated[int, "foo"],
                       arg2: Annotated[Literal["bar", "baz"], "one of 'bar', 'baz'"]) -> None:
    """Dummy function."""
    return seen(locals())


class Args(TypedDict):
    arg1: Annotated[Optional[int], "foo"]
    arg2: Annotated[Literal["bar", "baz"], "one of 'bar', 'baz'"]


def typed_dict_function(input_dict: Args) -> None:
    """Dummy function."""
    return seen(locals())


# -- ordinary modern Python --------------------------------------------------------------------------
class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Window:
    """A time window.

    Attributes:
        start: ISO date the window opens.
        days: how long it stays open.
    """
    start: str
    days: int = 7


async def fetch_json(url: str, timeout_s: float = 10.0, headers: Optional[dict[str, str]] = None):
    """Fetch a URL and return its JSON body.

    Args:
        url: the address to fetch.
        timeout_s: give up after this many seconds.
        headers: extra HTTP headers.
    """
    await asyncio.sleep(0)
    return seen(locals())


def schedule(title: str, window: Window, priority: Priority = Priority.LOW,
             attendees: list[str] = []) -> str:  # noqa: B006 - a default the tool never mutates
    """Schedule a meeting."""
    return seen(locals())


class Filters(TypedDict):
    tag: str
    """Only items with this tag."""
    max_price: NotRequired[float]
    """Upper price bound, in euros."""


def search_items(query: str, filters: Filters, page: int = Field(1, ge=1)) -> str:
    """Search the catalogue.

    :param query: words to look for.
    :param filters: what the items must match.
    """
    return seen(locals())


class LineItem(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d{3}$")
    quantity: int = Field(ge=1)


def place_order(items: Annotated[list[LineItem], Field(min_length=1)],
                note: str | None = None) -> str:
    """Place an order.

    Parameters
    ----------
    items
        what to order, at least one line.
    note
        a note for the warehouse.
    """
    return seen(locals())


def convert(amount: float, currency: str, rate_source: str = "ecb", api_key: str = "") -> str:
    """Convert an amount to euros.

    Args:
        amount: the amount in ``currency``.
        currency: ISO 4217 code.
        rate_source: where rates come from.
    """
    return seen(locals())


class Counter:
    """Count words in a text."""

    def __call__(self, text: str, unique: bool = False) -> str:
        return seen(locals())


def set_mode(mode: Literal["fast", "slow"] = "fast", level: int | str = 0) -> str:
    """Set the mode."""
    return seen(locals())


def ITEM(sku: str, qty: int) -> dict:  # noqa: N802 - a helper from another module
    return {"sku": sku, "quantity": qty}


CORPUS: list[Entry] = [
    Entry(simple_function, "openai-agents test_simple_function",
          {"a": {"type": "integer", "description": "The first argument"},
           "b": {"type": "integer", "default": 5, "description": "The second argument"}}, ["a"],
          accepted=[({"a": 3}, {"a": 3, "b": 5}), ({"a": 3, "b": 10}, {"a": 3, "b": 10})],
          rejected=[{"a": "not an integer"}, {}, {"a": 1, "c": 2}],
          coerced=[({"a": "3"}, {"a": 3, "b": 5})], description=""),
    Entry(complex_args_and_docs_function, "openai-agents test_complex_args_and_docs_function",
          {"model": {"type": "object", "description": "A model with an inner and foo field",
                     "properties": {
                         "inner": {"type": "object", "properties": {
                             "a": {"type": "integer"}, "b": {"type": "string"}},
                             "required": ["a", "b"]},
                         "foo": {"type": "object", "properties": {
                             "a": {"type": "integer"}, "b": {"type": "string"}},
                             "required": ["a", "b"]}},
                     "required": ["inner", "foo"]},
           "some_flag": {"type": "integer", "default": 0,
                         "description": "An optional flag with a default of 0"}}, ["model"],
          accepted=[({"model": {"inner": {"a": 1, "b": "hello"}, "foo": {"a": 2, "b": "world"}}},
                     {"model": OuterModel(inner=InnerModel(a=1, b="hello"),
                                          foo={"a": 2, "b": "world"}), "some_flag": 0})],
          rejected=[{"model": {"inner": {"a": 1, "b": "hello"}, "foo": {"a": 2, "b": "w"}},
                     "some_flag": "not an int"}, {"model": {"inner": {"a": 1}}}],
          description="This function takes a model and a flag, and returns a string."),
    Entry(MyClass().foo, "openai-agents test_class_based_functions (instance method)",
          {"a": {"type": "integer"}, "b": {"type": "integer", "default": 5}}, ["a"],
          accepted=[({"a": 1, "b": 2}, {"a": 1, "b": 2})], rejected=[{"self": 1, "a": 1}]),
    Entry(MyClass.bar, "openai-agents test_class_based_functions (class method)",
          {"a": {"type": "integer"}, "b": {"type": "integer", "default": 5}}, ["a"],
          accepted=[({"a": 1, "b": 2}, {"a": 1, "b": 2})], rejected=[{"cls": 1, "a": 1}]),
    Entry(MyClass.baz, "openai-agents test_class_based_functions (static method)",
          {"a": {"type": "integer"}, "b": {"type": "integer", "default": 5}}, ["a"],
          accepted=[({"a": 1}, {"a": 1, "b": 5})], rejected=[{"b": 1}]),
    Entry(enum_and_literal_function, "openai-agents test_enum_and_literal_function",
          {"a": {"type": "string", "enum": ["foo", "bar", "baz"]},
           "b": {"type": "string", "enum": ["a", "b", "c"]}}, ["a", "b"],
          accepted=[({"a": "foo", "b": "a"}, {"a": MyEnum.FOO, "b": "a"})],
          rejected=[{"a": "not an enum value", "b": "a"}, {"a": "foo", "b": "not a literal"}]),
    Entry(func_with_field_constraints, "openai-agents test_function_with_field_required_constraints",
          {"my_number": {"type": "integer", "exclusiveMinimum": 10, "maximum": 100}},
          ["my_number"], accepted=[({"my_number": 50}, {"my_number": 50})],
          rejected=[{"my_number": 5}, {"my_number": 150}, {}]),
    Entry(func_with_optional_field, "openai-agents test_function_with_field_optional_with_default",
          {"required_param": {"type": "string"},
           "optional_param": {"type": "number", "minimum": 0.0, "default": 5.0}},
          ["required_param"],
          accepted=[({"required_param": "test"}, {"required_param": "test", "optional_param": 5.0}),
                    ({"required_param": "test", "optional_param": 10.5},
                     {"required_param": "test", "optional_param": 10.5})],
          rejected=[{"required_param": "test", "optional_param": -1.0}]),
    Entry(add, "openai-agents test_function_uses_annotated_descriptions_without_docstring",
          {"a": {"type": "integer", "description": "First number to add"},
           "b": {"type": "integer", "description": "Second number to add"}}, ["a", "b"],
          accepted=[({"a": 1, "b": 2}, {"a": 1, "b": 2})], rejected=[{"a": 1}, {"a": 1, "b": []}]),
    Entry(add_documented,
          "openai-agents test_function_prefers_docstring_descriptions_over_annotated_metadata",
          {"a": {"type": "integer", "description": "Docstring provided description."},
           "b": {"type": "integer", "description": "Annotated description for b"}}, ["a", "b"],
          accepted=[({"a": 1, "b": 2}, {"a": 1, "b": 2})], rejected=[{"a": 1.5, "b": 2}],
          description="Adds two integers."),
    Entry(func_with_field_and_docstring, "openai-agents test_function_with_field_description_merge",
          {"param_with_field_desc": {"type": "integer", "description": "Docstring description"},
           "param_with_both": {"type": "string", "default": "hello",
                               "description": "Docstring description"}},
          ["param_with_field_desc"],
          accepted=[({"param_with_field_desc": 1},
                     {"param_with_field_desc": 1, "param_with_both": "hello"})],
          rejected=[{"param_with_both": "x"}]),
    Entry(func_with_string_field, "openai-agents test_function_with_field_string_constraints",
          {"name": {"type": "string", "minLength": 3, "maxLength": 20,
                    "pattern": r"^[A-Za-z]+$"}}, ["name"],
          accepted=[({"name": "Alice"}, {"name": "Alice"})],
          rejected=[{"name": "Al"}, {"name": "A" * 25}, {"name": "Alice123"}]),
    Entry(func_with_multiple_field_constraints,
          "openai-agents test_function_with_field_multiple_constraints",
          {"score": {"type": "integer", "minimum": 0, "maximum": 100,
                     "description": "Score from 0 to 100"},
           "name": {"type": "string", "minLength": 1, "maxLength": 50, "default": "Unknown"},
           "factor": {"type": "number", "exclusiveMinimum": 0.0, "default": 1.0,
                      "description": "Positive multiplier"}}, ["score"],
          accepted=[({"score": 85}, {"score": 85, "name": "Unknown", "factor": 1.0}),
                    ({"score": 90, "name": "Alice", "factor": 1.5},
                     {"score": 90, "name": "Alice", "factor": 1.5})],
          rejected=[{"score": 150}, {"score": 50, "name": ""}, {"score": 50, "factor": 0.0}]),
    Entry(func_with_annotated_optional_field,
          "openai-agents test_function_with_annotated_field_optional_with_default",
          {"required_param": {"type": "string"},
           "optional_param": {"type": "number", "minimum": 0.0, "default": 5.0}},
          ["required_param"],
          accepted=[({"required_param": "test"}, {"required_param": "test", "optional_param": 5.0})],
          rejected=[{"required_param": "test", "optional_param": -1.0}]),
    Entry(google_style_docstring, "pydantic-ai test_docstring_google (async)",
          {"foo": {"type": "integer", "description": "The foo thing."},
           "bar": {"type": "string", "description": "The bar thing."}}, ["foo", "bar"],
          accepted=[({"foo": 1, "bar": "x"}, {"foo": 1, "bar": "x"})], rejected=[{"foo": 1}],
          coerced=[({"foo": 1, "bar": 7}, {"foo": 1, "bar": "7"})],
          description="Do foobar stuff, a lot."),
    Entry(sphinx_style_docstring, "pydantic-ai test_docstring_sphinx",
          {"foo": {"type": "integer", "description": "The foo thing."}}, ["foo"],
          accepted=[({"foo": 2}, {"foo": 2})], rejected=[{"foo": "two"}],
          description="Sphinx style docstring."),
    Entry(numpy_style_docstring, "pydantic-ai test_docstring_numpy (keyword-only)",
          {"foo": {"type": "integer", "description": "The foo thing."},
           "bar": {"type": "string", "description": "The bar thing."}}, ["foo", "bar"],
          accepted=[({"foo": 1, "bar": "b"}, {"foo": 1, "bar": "b"})], rejected=[{"bar": "b"}],
          description="Numpy style docstring."),
    Entry(google_style_docstring_no_body, "pydantic-ai test_docstring_google_no_body (async)",
          {"foo": {"type": "integer", "description": "The foo thing."},
           "bar": {"type": "string", "description": "The bar thing."}}, ["foo", "bar"],
          accepted=[({"foo": 1, "bar": "b"}, {"foo": 1, "bar": "b"})],
          rejected=[{"foo": 1, "bar": True}, {"foo": True, "bar": "b"}],
          coerced=[({"foo": 1, "bar": 2}, {"foo": 1, "bar": "2"})], description=""),
    Entry(takes_just_model, "pydantic-ai test_takes_just_model",
          {"model": {"type": "object", "properties": {"x": {"type": "integer"},
                                                      "y": {"type": "string"}},
                     "required": ["x", "y"]}}, ["model"],
          accepted=[({"model": {"x": 0, "y": "a"}}, {"model": FooModel(x=0, y="a")})],
          rejected=[{"model": {"x": "zero", "y": "a"}}, {"x": 0, "y": "a"}]),
    Entry(takes_model_and_int, "pydantic-ai test_takes_model_and_int",
          {"model": {"type": "object", "properties": {"x": {"type": "integer"},
                                                      "y": {"type": "string"}},
                     "required": ["x", "y"]},
           "z": {"type": "integer"}}, ["model", "z"],
          accepted=[({"model": {"x": 0, "y": "a"}, "z": 0},
                     {"model": FooModel(x=0, y="a"), "z": 0})],
          rejected=[{"model": {"x": 0, "y": "a"}}]),
    Entry(dummy_function, "LangChain test_function_calling dummy_function",
          {"arg1": {"type": "integer", "description": "foo"},
           "arg2": {"type": "string", "enum": ["bar", "baz"],
                    "description": "one of 'bar', 'baz'"}}, ["arg1", "arg2"],
          accepted=[({"arg1": 1, "arg2": "bar"}, {"arg1": 1, "arg2": "bar"})],
          rejected=[{"arg1": 1, "arg2": "qux"}], description="Dummy function."),
    Entry(annotated_function, "LangChain test_function_calling annotated_function",
          {"arg1": {"type": "integer", "description": "foo"},
           "arg2": {"type": "string", "enum": ["bar", "baz"],
                    "description": "one of 'bar', 'baz'"}}, ["arg1", "arg2"],
          accepted=[({"arg1": 1, "arg2": "baz"}, {"arg1": 1, "arg2": "baz"})],
          rejected=[{"arg1": None, "arg2": "baz"}]),
    Entry(typed_dict_function, "LangChain test_function_calling (TypedDict Args)",
          {"input_dict": {"type": "object", "additionalProperties": False, "properties": {
              "arg1": {"description": "foo", "anyOf": [{"type": "integer"}, {"type": "null"}]},
              "arg2": {"type": "string", "description": "one of 'bar', 'baz'",
                       "enum": ["bar", "baz"]}},
              "required": ["arg1", "arg2"]}}, ["input_dict"],
          accepted=[({"input_dict": {"arg1": None, "arg2": "bar"}},
                     {"input_dict": {"arg1": None, "arg2": "bar"}})],
          rejected=[{"input_dict": {"arg1": 1}}, {"input_dict": {"arg1": 1, "arg2": "bar",
                                                                 "arg3": 0}}]),
    Entry(fetch_json, "modern Python: an async HTTP helper",
          {"url": {"type": "string", "description": "the address to fetch."},
           "timeout_s": {"type": "number", "default": 10.0,
                         "description": "give up after this many seconds."},
           "headers": {"anyOf": [{"type": "object", "additionalProperties": {"type": "string"}},
                                 {"type": "null"}], "default": None,
                       "description": "extra HTTP headers."}}, ["url"],
          accepted=[({"url": "u"}, {"url": "u", "timeout_s": 10.0, "headers": None}),
                    ({"url": "u", "timeout_s": 2, "headers": {"a": "b"}},
                     {"url": "u", "timeout_s": 2.0, "headers": {"a": "b"}})],
          rejected=[{"url": "u", "headers": {"a": 1.5}}, {"url": "u", "timeout_s": "soon"}],
          coerced=[({"url": "u", "timeout_s": "2.5"},
                    {"url": "u", "timeout_s": 2.5, "headers": None})]),
    Entry(schedule, "modern Python: a dataclass and an IntEnum",
          {"title": {"type": "string"},
           "window": {"type": "object", "description": "A time window.",
                      "additionalProperties": False,
                      "properties": {
                          "start": {"type": "string", "description": "ISO date the window opens."},
                          "days": {"type": "integer", "default": 7,
                                   "description": "how long it stays open."}},
                      "required": ["start"]},
           "priority": {"type": "integer", "enum": [1, 2], "default": 1},
           "attendees": {"type": "array", "items": {"type": "string"}, "default": []}},
          ["title", "window"],
          accepted=[({"title": "t", "window": {"start": "2026-01-01"}},
                     {"title": "t", "window": Window("2026-01-01"), "priority": Priority.LOW,
                      "attendees": []})],
          rejected=[{"title": "t", "window": {"start": "x", "dayz": 3}},
                    {"title": "t", "window": {"start": "x"}, "priority": 3}],
          description="Schedule a meeting."),
    Entry(search_items, "modern Python: TypedDict attribute docs, Sphinx docstring, Field",
          {"query": {"type": "string", "description": "words to look for."},
           "filters": {"type": "object", "additionalProperties": False,
                       "description": "what the items must match.",
                       "properties": {
                           "tag": {"type": "string", "description": "Only items with this tag."},
                           "max_price": {"type": "number",
                                         "description": "Upper price bound, in euros."}},
                       "required": ["tag"]},
           "page": {"type": "integer", "minimum": 1, "default": 1}}, ["query", "filters"],
          accepted=[({"query": "q", "filters": {"tag": "x"}},
                     {"query": "q", "filters": {"tag": "x"}, "page": 1})],
          rejected=[{"query": "q", "filters": {"tag": "x"}, "page": 0},
                    {"query": "q", "filters": {}}], description="Search the catalogue."),
    Entry(place_order, "modern Python: Annotated list of models, numpy docstring",
          {"items": {"type": "array", "minItems": 1, "description": "what to order, at least one line.",
                     "items": {"type": "object", "properties": {
                         "sku": {"type": "string", "pattern": r"^[A-Z]{3}-\d{3}$"},
                         "quantity": {"type": "integer", "minimum": 1}},
                         "required": ["sku", "quantity"]}},
           "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                    "description": "a note for the warehouse."}}, ["items"],
          accepted=[({"items": [ITEM("ABC-123", 2)]},
                     {"items": [LineItem(sku="ABC-123", quantity=2)], "note": None})],
          rejected=[{"items": []}, {"items": [ITEM("abc", 2)]}, {"items": [ITEM("ABC-123", 0)]}],
          description="Place an order."),
    Entry(functools.partial(convert, api_key="secret"), "modern Python: functools.partial",
          {"amount": {"type": "number", "description": "the amount in ``currency``."},
           "currency": {"type": "string", "description": "ISO 4217 code."},
           "rate_source": {"type": "string", "default": "ecb",
                           "description": "where rates come from."}}, ["amount", "currency"],
          accepted=[({"amount": 5, "currency": "NOK"},
                     {"amount": 5.0, "currency": "NOK", "rate_source": "ecb",
                      "api_key": "secret"})],
          rejected=[{"amount": 5, "currency": "NOK", "api_key": "forged"},
                    {"amount": [5], "currency": "NOK"}],
          description="Convert an amount to euros."),
    Entry(Counter(), "modern Python: a callable object", {
        "text": {"type": "string"}, "unique": {"type": "boolean", "default": False}}, ["text"],
        accepted=[({"text": "a b"}, {"text": "a b", "unique": False})],
        rejected=[{"text": "a", "unique": "maybe"}],
        coerced=[({"text": "a", "unique": "true"}, {"text": "a", "unique": True})],
        description="Count words in a text.", name="count_words"),
    Entry(set_mode, "modern Python: Literal default and a union",
          {"mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
           "level": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0}}, [],
          accepted=[({}, {"mode": "fast", "level": 0}),
                    ({"level": "5"}, {"mode": "fast", "level": "5"})],
          rejected=[{"mode": "medium"}, {"level": 1.5}], description="Set the mode."),
]


def args_function(x: int, *numbers: float, flag: bool = False, **kwargs: Any): ...


def positional_only(foo: int, /) -> str: ...


def unknown_docstring(**kwargs: int) -> str:
    """Unknown style docstring."""


#: Signatures refused at registration, with the code (a JSON object has named keys only).
REFUSED: list[tuple[Callable, str, str]] = [
    (args_function, "unsupported_signature", "openai-agents test_varargs_function"),
    (positional_only, "unsupported_signature", "pydantic-ai sphinx_style_docstring(foo, /)"),
    (unknown_docstring, "unsupported_signature", "pydantic-ai test_docstring_unknown"),
    (MyClass.foo, "unsupported_type", "an unbound method (needs self)"),
]

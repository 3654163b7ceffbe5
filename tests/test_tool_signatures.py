"""Tools written the way people write them (issue #12): pydantic ``Field`` and ``BaseModel``
parameters, methods, partials, Sphinx/numpy docstrings, TypedDict attribute docs, async tools.

Each test names the bug it pins down; all of them failed before the registry learnt these forms.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Awaitable, Optional

import pytest
from pydantic import BaseModel, Field
from typing_extensions import NotRequired, TypedDict

from agentlab.errors import ConfigError, ToolError
from agentlab.tools import ToolRegistry, function_schema


def _params(func, **kw) -> dict:
    return function_schema(func, **kw)["function"]["parameters"]


def _call(reg: ToolRegistry, name: str, args: dict) -> Any:
    """What the tool really receives: validate, then call (as the executor does)."""
    return reg.get_function(name)(**reg.validate(name, args))


# -- pydantic Field -----------------------------------------------------------------------------
def scale(factor: float = Field(default=5.0, ge=0.0)) -> float:
    """Scale by a factor."""
    return factor


def bounded(n: int = Field(..., gt=10, le=100), tag: str = Field("x", min_length=1,
                                                                  max_length=3)) -> int:
    return n


def described(city: Annotated[str, Field(description="the city name", pattern=r"^[A-Z]")]):
    return city


def test_field_default_reaches_the_tool_as_its_value_not_the_fieldinfo():
    reg = ToolRegistry()
    reg.register(scale)
    assert _call(reg, "scale", {}) == 5.0  # was: the FieldInfo object, reported as success
    assert _params(scale)["properties"]["factor"] == {"type": "number", "minimum": 0.0,
                                                      "default": 5.0}
    with pytest.raises(ToolError) as info:  # was: -1 accepted
        reg.validate("scale", {"factor": -1})
    assert info.value.details["errors"][0]["field"] == "factor"
    assert "greater than or equal to 0" in info.value.message


def test_required_field_keeps_required_and_its_bounds():
    params = _params(bounded)
    assert params["required"] == ["n"]  # was: optional, bounds lost
    assert params["properties"]["n"] == {"type": "integer", "exclusiveMinimum": 10,
                                         "maximum": 100}
    assert params["properties"]["tag"]["maxLength"] == 3
    reg = ToolRegistry()
    reg.register(bounded)
    for bad in ({"n": 10}, {"n": 101}, {}, {"n": 50, "tag": "long"}):
        with pytest.raises(ToolError):
            reg.validate("bounded", bad)
    assert reg.validate("bounded", {"n": "50"}) == {"n": 50, "tag": "x"}


def test_annotated_field_description_and_pattern():
    prop = _params(described)["properties"]["city"]
    assert prop == {"type": "string", "description": "the city name", "pattern": "^[A-Z]"}
    reg = ToolRegistry()
    reg.register(described)
    with pytest.raises(ToolError, match="should match pattern"):
        reg.validate("described", {"city": "oslo"})


# -- BaseModel, dataclass, TypedDict through pydantic ----------------------------------------------
class Address(BaseModel):
    """A postal address.

    Attributes:
        street: street and number.
    """
    street: str
    city: str = Field(description="the city")
    zip: Optional[str] = None


class Order(BaseModel):
    items: list[str] = Field(min_length=1)
    ship_to: Address
    express: bool = False


def place_order(order: Order, note: str = "") -> str:
    """Place an order."""
    return type(order).__name__


def test_basemodel_parameter_is_accepted_and_the_tool_gets_an_instance():
    reg = ToolRegistry()
    reg.register(place_order)  # was: unsupported_type
    prop = reg.get_schema("place_order")["function"]["parameters"]["properties"]["order"]
    assert prop["required"] == ["items", "ship_to"] and "$ref" not in str(prop)
    assert prop["properties"]["ship_to"]["description"] == "A postal address."
    assert prop["properties"]["ship_to"]["properties"]["street"]["description"] == \
        "street and number."
    order = reg.validate("place_order", {"order": {"items": ["a"], "ship_to": {
        "street": "1 Main", "city": "Oslo"}}})["order"]
    assert isinstance(order, Order) and isinstance(order.ship_to, Address)
    with pytest.raises(ToolError) as info:
        reg.validate("place_order", {"order": {"items": [], "ship_to": {"street": True}}})
    fields = [e["field"] for e in info.value.details["errors"]]
    assert fields == ["order.items", "order.ship_to.street", "order.ship_to.city"]


class Filters(TypedDict):
    min_price: float
    """Lowest price, in euros."""
    tags: NotRequired[list[str]]
    """Only items with all of these tags."""


def find(filters: Filters) -> dict:
    return filters


def test_typeddict_attribute_docstrings_describe_fields():
    props = _params(find)["properties"]["filters"]["properties"]
    assert props["min_price"]["description"] == "Lowest price, in euros."  # was: lost
    assert props["tags"]["description"] == "Only items with all of these tags."


# -- methods and partials -----------------------------------------------------------------------
class Shop:
    """A shop."""

    def __init__(self, currency: str) -> None:
        self.currency = currency

    def price(self, item: str, quantity: int = 1) -> str:
        """Price of an item.

        Args:
            item: the item's name.
        """
        return f"{item} x{quantity} in {self.currency}"

    @classmethod
    def make(cls, currency: str) -> str:
        """Make a shop."""
        return currency

    @staticmethod
    def tax(amount: float) -> float:
        """Tax on an amount."""
        return amount * 0.25


def test_methods_register_without_self_and_unbound_ones_are_refused():
    reg = ToolRegistry()
    reg.register(Shop("EUR").price)
    reg.register(Shop.make)
    reg.register(Shop.tax)
    reg.register(Shop.__dict__["tax"], name="tax2")  # the staticmethod object itself
    assert list(_params(Shop("EUR").price)["properties"]) == ["item", "quantity"]
    assert _call(reg, "price", {"item": "pen"}) == "pen x1 in EUR"
    assert _call(reg, "make", {"currency": "NOK"}) == "NOK"
    assert _call(reg, "tax2", {"amount": 4}) == 1.0
    with pytest.raises(ConfigError) as info:  # was: `self` as a required property
        reg.register(Shop.price, name="unbound")
    assert info.value.code == "unsupported_type" and "obj.method" in info.value.message
    with pytest.raises(ConfigError, match="classmethod"):
        reg.register(Shop.__dict__["make"], name="raw_cm")


def lookup(query: str, limit: int = 5, api_key: str = "") -> str:
    """Look something up.

    Args:
        query: what to look for.
    """
    return f"{query}:{limit}:{api_key}"


def test_partial_keeps_the_functions_description_types_and_hides_fixed_keywords():
    tool = functools.partial(lookup, api_key="secret")
    reg = ToolRegistry()
    reg.register(tool)  # was: needed name=..., described as "partial(func, *args, ...)"
    fn = reg.get_schema("lookup")["function"]
    assert fn["description"] == "Look something up."
    assert fn["parameters"]["properties"] == {
        "query": {"type": "string", "description": "what to look for."},
        "limit": {"type": "integer", "default": 5}}
    with pytest.raises(ToolError):  # was: untyped, a list accepted for a str
        reg.validate("lookup", {"query": ["a"]})
    with pytest.raises(ToolError, match="api_key"):
        reg.validate("lookup", {"query": "a", "api_key": "forged"})
    assert _call(reg, "lookup", {"query": "a"}) == "a:5:secret"


# -- docstring styles and precedence ---------------------------------------------------------------
def sphinx(query: str, limit: int = 5) -> list:
    """Search the corpus for pages that
    mention a query.

    :param query: the words to
        look for.
    :param int limit: how many pages.
    :returns: the pages.
    """


def numpy_style(query: str, limit: int = 5) -> list:
    """Search the corpus.

    Parameters
    ----------
    query : str
        the words to look for.
    limit : int, optional
        how many pages.

    Returns
    -------
    list
        the pages.
    """


def test_sphinx_and_numpy_docstrings_describe_parameters():
    fn = function_schema(sphinx)["function"]
    assert fn["description"] == "Search the corpus for pages that mention a query."
    props = fn["parameters"]["properties"]
    assert props["query"]["description"] == "the words to look for."  # was: missing
    assert props["limit"]["description"] == "how many pages."
    props = _params(numpy_style)["properties"]
    assert props["query"]["description"] == "the words to look for."
    assert props["limit"]["description"] == "how many pages."
    assert function_schema(numpy_style)["function"]["description"] == "Search the corpus."


def both(city: Annotated[str, "from Annotated"],
         days: Annotated[int, Field(description="from Field")] = 1,
         unit: Annotated[str, "from Annotated"] = "C") -> str:
    """Weather.

    Args:
        city: from the docstring.
        days: from the docstring.
    """


def test_description_precedence_docstring_then_annotated_then_field():
    """openai-agents (function_schema) and LangChain (_infer_arg_descriptions) let the docstring
    win over an ``Annotated`` string and a ``Field`` description; so do we."""
    props = _params(both)["properties"]
    assert props["city"]["description"] == "from the docstring."  # was: "from Annotated"
    assert props["days"]["description"] == "from the docstring."
    assert props["unit"]["description"] == "from Annotated"


# -- what cannot be a tool, said at registration -----------------------------------------------------
async def stream_pages(query: str):
    yield query


def sync_returning_awaitable(query: str) -> Awaitable[str]: ...


def pages(query: str):
    yield query


def test_generators_and_awaitable_returning_functions_are_refused():
    reg = ToolRegistry()
    for func, text in ((stream_pages, "async generator"), (pages, "generator"),
                       (sync_returning_awaitable, "async def")):
        with pytest.raises(ConfigError) as info:
            reg.register(func)
        assert info.value.code == "unsupported_type" and text in info.value.message


async def fetch(url: str) -> str:
    """Fetch a page."""
    return url


def test_async_tools_register_as_async():
    reg = ToolRegistry()
    reg.register(fetch)
    reg.register(functools.partial(fetch), name="fetch2")
    assert reg.is_async("fetch") and reg.is_async("fetch2")
    assert list(reg.get_schema("fetch")["function"]["parameters"]["properties"]) == ["url"]


def test_timeout_option_must_be_finite():
    reg = ToolRegistry()
    for bad in (float("inf"), float("nan"), True, 0):
        with pytest.raises(ConfigError):
            reg.register(fetch, timeout=bad)

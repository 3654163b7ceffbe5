"""ToolRegistry: schemas from type hints and docstrings (cross-checked with pydantic), options,
registration errors, and validate()'s coercions and error reports."""
from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional, Union

import pytest
from pydantic import TypeAdapter, create_model
from typing_extensions import NotRequired, TypedDict

from agentlab.errors import ConfigError, ToolError
from agentlab.tools import ToolRegistry, function_schema, parse_docstring, schema_for_type


# -- types used by the signatures below (module level, so string annotations resolve) ----------
class Unit(enum.Enum):
    C = "celsius"
    F = "fahrenheit"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Address:
    """A postal address.

    Attributes:
        street: street and number.
        zip: postal code, if known.
    """
    street: str
    city: str
    zip: Optional[str] = None


class Filters(TypedDict):
    min_price: float
    tags: NotRequired[list[str]]


@dataclass
class Order:
    items: list[str]
    address: Address
    quantity: int = 1
    notes: list[str] = field(default_factory=list)


@dataclass
class Positive:
    n: int

    def __post_init__(self):
        if self.n <= 0:
            raise ValueError("n must be positive")


def f_scalars(a: str, b: int, c: float, d: bool): ...
def f_containers(tags: list[str], matrix: list[list[int]], scores: dict[str, float],
                 raw: dict, anything: list, whatever: Any = None): ...
def f_unions(x: Optional[int] = None, y: int | None = None, z: Union[int, str] = 0,
             w: list[int | str] | None = None): ...
def f_literals(mode: Literal["fast", "slow"], n: Literal[1, 2, 3] = 1,
               flag: Literal[True] = True, mixed: Literal["a", 1] = "a"): ...
def f_enums(unit: Unit = Unit.C, level: Level = Level.LOW, units: list[Unit] = []): ...
def f_objects(address: Address, filters: Filters, orders: list[Order] = [],
              maybe: Optional[Address] = None): ...
def f_annotated(count: Annotated[int, "how many"] = 3,
                note: Annotated[Optional[str], "a note"] = None): ...
def f_strings(xs: "list[int]", addr: "Address",
              unit: "Unit | None" = None) -> "NoSuchType": ...  # noqa: F821

SIGNATURES = [f_scalars, f_containers, f_unions, f_literals, f_enums, f_objects, f_annotated,
              f_strings]


def _normalize(s: Any, defs: dict | None = None) -> Any:
    """Schema equality up to presentation: refs inlined, titles/descriptions dropped,
    const == one-value enum, additionalProperties true/false and empty items ignored."""
    if isinstance(s, list):
        return [_normalize(x, defs) for x in s]
    if not isinstance(s, dict):
        return s
    defs = s.get("$defs", defs)
    if "$ref" in s:
        s = {**defs[s["$ref"].split("/")[-1]], **{k: v for k, v in s.items() if k != "$ref"}}
    out = {}
    for k, v in s.items():
        if k in ("title", "description", "$defs") or (k == "additionalProperties"
                                                       and isinstance(v, bool)):
            continue
        if k == "items" and v == {} or k == "required" and not v:
            continue
        if k == "const":
            out["enum"] = [v]
        else:
            out[k] = sorted(v) if k == "required" else _normalize(v, defs)
    return out


def _pydantic_parameters(func) -> dict:
    """pydantic's schema of a model with one field per parameter (the reference)."""
    hints = {}
    for name, ann in func.__annotations__.items():
        if name == "return":
            continue
        while isinstance(ann, str):  # this module uses `from __future__ import annotations`
            ann = eval(ann, globals())
        hints[name] = ann
    fields = {n: (hints.get(n, Any), ... if p.default is p.empty else p.default)
              for n, p in inspect.signature(func).parameters.items()}
    return create_model("Args", **fields).model_json_schema()


@pytest.mark.parametrize("func", SIGNATURES, ids=[f.__name__ for f in SIGNATURES])
def test_schema_matches_pydantic(func):
    ours = function_schema(func)["function"]["parameters"]
    assert _normalize(ours) == _normalize(_pydantic_parameters(func))


def test_schema_shapes_a_model_sees():
    props = function_schema(f_unions)["function"]["parameters"]["properties"]
    assert props["x"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}
    props = function_schema(f_literals)["function"]["parameters"]["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["flag"]["type"] == "boolean" and "type" not in props["mixed"]
    props = function_schema(f_enums)["function"]["parameters"]["properties"]
    assert props["unit"] == {"type": "string", "enum": ["celsius", "fahrenheit"],
                             "default": "celsius"}
    assert props["level"]["type"] == "integer"
    addr = function_schema(f_objects)["function"]["parameters"]["properties"]["address"]
    assert addr["additionalProperties"] is False and addr["required"] == ["street", "city"]
    assert addr["description"] == "A postal address."
    assert addr["properties"]["zip"]["description"] == "postal code, if known."


def test_annotated_description_and_top_level_shape():
    params = function_schema(f_annotated)["function"]["parameters"]
    assert params["properties"]["count"] == {"type": "integer", "description": "how many",
                                             "default": 3}
    assert params["required"] == [] and params["additionalProperties"] is False


def test_schema_for_type_refuses_what_json_cannot_say():
    for tp in (set[int], tuple[int, str], dict[int, str], bytes):
        with pytest.raises(ConfigError) as info:
            schema_for_type(tp)
        assert info.value.code == "unsupported_type"


# -- docstrings ---------------------------------------------------------------------------------
def test_docstring_first_paragraph_and_exact_arg_names():
    def search(query: str, max_query_len: int = 5) -> str:
        """Search the offline corpus for pages that
        mention every word of the query.

        Results are ranked by score.

        Args:
            max_query_len (int): longest query accepted; longer ones
                are cut.
            query: words to look for.

        Returns:
            query: this line is about the return value, not the parameter.
        """
    fn = function_schema(search)["function"]
    assert fn["description"] == ("Search the offline corpus for pages that mention every word "
                                 "of the query.")
    props = fn["parameters"]["properties"]
    assert props["query"]["description"] == "words to look for."
    assert props["max_query_len"]["description"] == "longest query accepted; longer ones are cut."


def test_docstring_without_args_section():
    assert parse_docstring("Just one line.") == ("Just one line.", {})
    assert parse_docstring(None) == ("", {})
    assert parse_docstring("Summary.\n\nReturns:\n    x: not a parameter\n") == ("Summary.", {})


# -- registration -------------------------------------------------------------------------------
def test_decorator_forms_names_and_order():
    reg = ToolRegistry()

    @reg.tool
    def alpha(x: int) -> int:
        """Alpha."""
        return x

    @reg.tool("beta_tool", "Custom text.", timeout=2.5, side_effects=True)
    def beta() -> None: ...

    @reg.tool()
    def gamma() -> None: ...

    assert alpha(3) == 3  # the decorator returns the function unchanged
    assert reg.list_tools() == ["alpha", "beta_tool", "gamma"] and len(reg) == 3
    assert [s["function"]["name"] for s in reg.get_all_schemas()] == reg.list_tools()
    assert reg.get_schema("beta_tool")["function"]["description"] == "Custom text."
    assert reg.get_options("beta_tool") == {"timeout": 2.5, "side_effects": True,
                                            "idempotency_key": False}
    assert reg.get_options("alpha")["timeout"] is None
    assert "alpha" in reg and "delta" not in reg
    assert reg.get_function("delta") is None and reg.get_schema("delta") is None


def test_duplicate_name_is_refused_unless_replace():
    reg = ToolRegistry()
    reg.register(lambda: 1, name="one")
    with pytest.raises(ConfigError) as info:
        reg.register(lambda: 2, name="one")
    assert info.value.code == "tool_exists" and "replace=True" in info.value.message
    reg.register(lambda: 3, name="one", replace=True)
    assert reg.get_function("one")() == 3


def test_bad_signatures_and_names_are_refused_clearly():
    reg = ToolRegistry()

    def star(*items: str): ...
    def kw(**options: str): ...
    def pos(x: int, /): ...
    for func, text in ((star, "*items"), (kw, "**options"), (pos, "positional-only x")):
        with pytest.raises(ConfigError) as info:
            reg.register(func)
        assert info.value.code == "unsupported_signature" and text in info.value.message
    with pytest.raises(ConfigError, match="pass name="):
        reg.register(lambda: 1)
    with pytest.raises(ConfigError) as info:
        reg.register(f_scalars, timeout=-1)
    assert info.value.code == "invalid_option"


def test_string_annotations_and_unresolvable_return():
    reg = ToolRegistry()
    reg.register(f_strings)  # -> "NoSuchType" must not matter
    props = reg.get_schema("f_strings")["function"]["parameters"]["properties"]
    assert props["xs"] == {"type": "array", "items": {"type": "integer"}}
    assert props["addr"]["required"] == ["street", "city"]

    def broken(x: "NoSuchParamType") -> str: ...  # noqa: F821
    with pytest.raises(ConfigError, match="'x'"):
        reg.register(broken)


def test_side_effect_tool_hides_idempotency_key():
    reg = ToolRegistry()

    @reg.tool(side_effects=True)
    def write(path: str, idempotency_key: str = "") -> None: ...

    assert list(reg.get_schema("write")["function"]["parameters"]["properties"]) == ["path"]
    assert reg.get_options("write")["idempotency_key"] is True
    with pytest.raises(ToolError, match="idempotency_key"):
        reg.validate("write", {"path": "a", "idempotency_key": "forged"})


# -- validate ------------------------------------------------------------------------------------
@pytest.fixture
def reg():
    reg = ToolRegistry()
    for f in SIGNATURES:
        reg.register(f)

    @reg.tool
    def positive(p: Positive) -> int:
        return p.n
    return reg


def test_validate_coerces_only_what_is_lossless(reg):
    out = reg.validate("f_scalars", {"a": 42, "b": "5", "c": 5, "d": "TRUE"})
    assert out == {"a": "42", "b": 5, "c": 5.0, "d": True}
    assert type(out["c"]) is float
    assert reg.validate("f_scalars", {"a": "x", "b": 7.0, "c": "2.5", "d": False})["b"] == 7
    for bad in ({"b": 5.7}, {"b": "five"}, {"b": True}, {"d": "yes"}, {"d": 1}, {"c": "nan"},
                {"a": 1.5}):
        with pytest.raises(ToolError) as info:
            reg.validate("f_scalars", {"a": "x", "b": 1, "c": 1.0, "d": True, **bad})
        assert [e["field"] for e in info.value.details["errors"]] == list(bad)


def test_validate_reports_every_bad_field_at_once(reg):
    with pytest.raises(ToolError) as info:
        reg.validate("f_literals", {"mode": "medium", "n": 7, "flag": False, "moed": "fast"})
    err = info.value
    assert err.code == "invalid_arguments"
    assert err.message == (
        "Invalid arguments for tool 'f_literals' (4 problems):\n"
        "- moed: unexpected field (allowed: mode, n, flag, mixed); did you mean 'mode'?\n"
        '- mode: expected one of "fast", "slow"; got "medium" (string)\n'
        "- n: expected one of 1, 2, 3; got 7 (integer)\n"
        "- flag: expected one of true; got false (boolean)\n"
        "Fix these fields and call 'f_literals' again.")
    assert err.details["errors"][1]["allowed"] == ["fast", "slow"]


def test_validate_missing_and_not_an_object(reg):
    with pytest.raises(ToolError, match=r"- mode: missing required field \(expected one of"):
        reg.validate("f_literals", {})
    with pytest.raises(ToolError, match="expected a JSON object"):
        reg.validate("f_literals", ["fast"])
    with pytest.raises(ToolError) as info:
        reg.validate("nope", {})
    assert info.value.code == "tool_not_found" and "f_scalars, f_containers" in info.value.message


def test_validate_builds_dataclasses_and_enum_members(reg):
    out = reg.validate("f_objects", {
        "address": {"street": "1 Main St", "city": "Oslo"},
        "filters": {"min_price": 3},
        "orders": [{"items": ["a"], "address": {"street": "s", "city": "c"}, "quantity": "2"}]})
    assert out["address"] == Address("1 Main St", "Oslo")
    assert out["filters"] == {"min_price": 3.0}  # a TypedDict stays a dict
    assert out["orders"] == [Order(["a"], Address("s", "c"), 2)]
    out = reg.validate("f_enums", {"unit": "fahrenheit", "level": "2", "units": ["celsius"]})
    assert out == {"unit": Unit.F, "level": Level.HIGH, "units": [Unit.C]}
    assert reg.validate("f_literals", {"mode": "fast", "n": "2"})["n"] == 2


def test_validate_nested_paths(reg):
    with pytest.raises(ToolError) as info:
        reg.validate("f_objects", {"address": {"street": 1.5}, "filters": {"min_price": "x"},
                                   "orders": [{"items": ["a", 2.5], "address": None}],
                                   "maybe": {"city": 3.5}})
    fields = [e["field"] for e in info.value.details["errors"]]
    assert fields == ["address.street", "address.city", "filters.min_price", "orders[0].items[1]",
                      "orders[0].address", "maybe.street", "maybe.city"]


def test_validate_unions_prefer_exact_types_and_null_means_default(reg):
    assert reg.validate("f_unions", {"z": "5", "w": ["1", 2]}) == {"z": "5", "w": ["1", 2]}
    assert reg.validate("f_unions", {"x": "5"}) == {"x": 5}
    assert reg.validate("f_unions", {"x": None}) == {"x": None}
    assert reg.validate("f_annotated", {"count": None}) == {}  # Python's default applies
    with pytest.raises(ToolError, match=r"- x: expected integer or null; got \[\] \(array\)"):
        reg.validate("f_unions", {"x": []})


def test_validate_reports_a_rejected_dataclass(reg):
    with pytest.raises(ToolError, match=r"- p: Value error, n must be positive"):
        reg.validate("positive", {"p": {"n": 0}})
    assert reg.validate("positive", {"p": {"n": 2}}) == {"p": Positive(2)}


def test_the_naive_registry_fails_the_same_cross_check():
    """The pydantic cross-check can fail: the article's flat TYPE_MAP does."""
    from agentlab.naive.tools import NaiveToolRegistry
    naive = NaiveToolRegistry()

    def f_plain(x: Optional[int] = None, tags: list[str] = [], mode: Literal["a", "b"] = "a"): ...
    naive.register(f_plain)
    props = naive.get_all_schemas()[0]["function"]["parameters"]["properties"]
    assert props == {"x": {"type": "string"}, "tags": {"type": "string"},
                     "mode": {"type": "string"}}
    assert _normalize(naive.get_all_schemas()[0]["function"]["parameters"]) != \
        _normalize(_pydantic_parameters(f_plain))
    with pytest.raises(NameError):
        naive.register(f_strings)  # the unresolvable return annotation breaks it


@pytest.mark.parametrize("tp", [Address, Filters, Order, Optional[Address], list[Order]],
                         ids=["dataclass", "TypedDict", "nested", "optional", "list"])
def test_hand_written_object_schemas_match_pydantic(tp):
    """Registered tools send dataclass/TypedDict parameters through pydantic; the chapter's own
    walk (``schema_for_type``) still describes them, and must agree with pydantic."""
    assert _normalize(schema_for_type(tp)) == _normalize(TypeAdapter(tp).json_schema())

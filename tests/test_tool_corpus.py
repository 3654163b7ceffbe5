"""The tool corpus (``tests/tool_corpus.py``): schema, accepted and rejected arguments checked
against both the registry and ``jsonschema`` on the same schema, and what each tool receives
when the real ``ToolExecutor`` runs it."""
from __future__ import annotations

import jsonschema
import pytest

from agentlab.errors import ConfigError, ToolError
from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.tools import ToolRegistry

from tool_corpus import CORPUS, RECEIVED, REFUSED

IDS = [e.source.split(" ", 1)[0] + ":" + (e.name or getattr(e.tool, "__name__", None)
                                          or e.tool.func.__name__) for e in CORPUS]


def registered(entry):
    reg = ToolRegistry()
    reg.register(entry.tool, name=entry.name)
    name = reg.list_tools()[0]
    return reg, name, reg.get_schema(name)["function"]


def test_the_corpus_is_large_enough():
    assert len(CORPUS) >= 25


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_schema(entry):
    _, _, fn = registered(entry)
    params = fn["parameters"]
    assert params["properties"] == entry.properties
    assert params["required"] == entry.required and params["additionalProperties"] is False
    jsonschema.Draft202012Validator.check_schema(params)
    if entry.description is not None:
        assert fn["description"] == entry.description


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_accepted_and_rejected_agree_with_jsonschema(entry):
    reg, name, fn = registered(entry)
    validator = jsonschema.Draft202012Validator(fn["parameters"])
    for args, _ in entry.accepted:
        assert validator.is_valid(args), (args, list(validator.iter_errors(args)))
        reg.validate(name, args)
    for args in entry.rejected:
        assert not validator.is_valid(args), args
        with pytest.raises(ToolError) as info:
            reg.validate(name, args)
        assert info.value.code == "invalid_arguments"
    for args, _ in entry.coerced:  # documented coercions: the schema says no, we accept
        assert not validator.is_valid(args), args
        reg.validate(name, args)


@pytest.mark.parametrize("entry", CORPUS, ids=IDS)
def test_what_the_tool_receives(entry):
    reg, name, _ = registered(entry)
    ex = ToolExecutor(reg)
    for args, expected in entry.accepted + entry.coerced:
        RECEIVED.clear()
        [result] = ex.execute([ToolCall("c1", name, args)])
        assert result.success, result.result
        assert RECEIVED == [expected]
        assert [type(v) for v in RECEIVED[0].values()] == [type(v) for v in expected.values()]


@pytest.mark.parametrize("func,code,source", REFUSED, ids=[r[2] for r in REFUSED])
def test_refused_signatures(func, code, source):
    with pytest.raises(ConfigError) as info:
        ToolRegistry().register(func)
    assert info.value.code == code

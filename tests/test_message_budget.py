"""MessageManager budgets that count everything sent (issue #12): tool schemas, a default
budget from the model table, over_budget / context_overflow when nothing more can go, the
compression note where the API and the article expect it, and validated knobs."""
from __future__ import annotations

import json

import pytest

from agentlab.errors import AgentError, ConfigError
from agentlab.messages import MessageManager, synthetic_history
from agentlab.models import model_info
from agentlab.sim import check_request
from agentlab.tokens import count_messages_tokens, count_tools_tokens
from agentlab.tools import ToolRegistry


def forty_tools() -> list[dict]:
    reg = ToolRegistry()
    for i in range(40):
        def tool(query: str, limit: int = 5, region: str = "eu") -> str:
            return query
        tool.__doc__ = (f"Search source number {i} of the company knowledge base for documents "
                        "that match the query, newest first.\n\nArgs:\n    query: the words to "
                        "look for.\n    limit: how many documents.\n    region: data region.")
        reg.register(tool, name=f"search_{i}")
    return reg.get_all_schemas()


def test_tool_schemas_are_counted_in_the_budget():
    tools = forty_tools()
    schema_tokens = count_tools_tokens(tools)
    assert schema_tokens > 1500
    mm = MessageManager("You are a researcher.", max_tokens=3000, tools=tools)
    for m in synthetic_history(12, seed=1):
        mm.append(m)
    sent = count_messages_tokens(mm.get_messages(), mm.model, tools)
    assert mm.count_tokens() == sent  # was: the schemas (~2,000 tokens) left out
    assert mm.tools_tokens == schema_tokens
    assert sent <= mm.max_tokens and mm.compressions  # compressed because of the schemas
    later = MessageManager("You are a researcher.", max_tokens=3000)
    later.set_tools(tools)  # what the runtime calls
    assert later.count_tokens() == count_messages_tokens(later.get_messages(), later.model, tools)


def test_default_budget_comes_from_the_model_table():
    info = model_info("gpt-4o")
    assert MessageManager().max_tokens == info.context_window - info.max_output_tokens == 111616
    assert MessageManager(model="gpt-4.1").max_tokens == 1047576 - 32768
    assert MessageManager(max_tokens=5000).max_tokens == 5000


def test_an_unlisted_model_gets_its_familys_budget_or_a_warned_conservative_one():
    """Issue 21: ``gpt-4`` (an 8,192-token model) got 120,000 silently. A dated or suffixed name
    takes its family's window (the longest table name it extends at a '-'); anything else gets
    the conservative default, with a warning that says how to set it."""
    import warnings
    from agentlab.messages import DEFAULT_MAX_TOKENS
    from agentlab.models import model_family
    assert model_family("gpt-4o-mini-2099-01-01") == "gpt-4o-mini"
    assert model_family("gpt-4o") == "gpt-4o" and model_family("gpt-4") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a family's budget needs no warning
        assert MessageManager(model="gpt-5-chat-latest").max_tokens == 400000 - 128000
    for name in ("gpt-4", "my-local-llama"):
        with pytest.warns(UserWarning, match=f"{name}.*register_model"):
            assert MessageManager(model=name).max_tokens == DEFAULT_MAX_TOKENS <= 8192


def call_message(i: int, args_words: int) -> list[dict]:
    args = json.dumps({"text": "word " * args_words})
    return [{"role": "assistant", "content": None, "tool_calls": [{
        "id": f"c{i}", "type": "function", "function": {"name": "write", "arguments": args}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "ok"}]


@pytest.mark.parametrize("case", ["tool_call_arguments", "list_content", "system_prompt",
                                  "tool_schemas"])
def test_nothing_left_to_drop_sets_over_budget_and_raises_context_overflow(case):
    mm = MessageManager("sys" if case != "system_prompt" else "rules " * 2000, max_tokens=1000,
                        tools=forty_tools() if case == "tool_schemas" else None)
    mm.append({"role": "user", "content": "Write the report."})
    if case == "tool_call_arguments":
        mm.extend(call_message(1, 3000))
    elif case == "list_content":
        mm.append({"role": "user", "content": [{"type": "text", "text": "data " * 3000}]})
    assert mm.count_tokens() > mm.max_tokens
    assert mm.over_budget  # was: never set
    with pytest.raises(AgentError) as info:
        mm.check_budget()  # was: never raised; the request went out over budget
    assert info.value.code == "context_overflow"
    assert info.value.details["max_tokens"] == 1000
    check_request({"model": "gpt-4o", "messages": mm.get_messages()})  # still pair-safe


def test_on_overflow_raise_raises_from_append_after_keeping_the_message():
    mm = MessageManager("sys", max_tokens=1000, on_overflow="raise")
    mm.append({"role": "user", "content": "Write the report."})
    with pytest.raises(AgentError) as info:
        mm.extend(call_message(1, 3000))
    assert info.value.code == "context_overflow"
    assert [m["role"] for m in mm.get_messages()] == ["system", "user", "assistant", "tool"]


def test_fits_again_after_compression_is_not_over_budget():
    mm = MessageManager("sys", max_tokens=2000)
    mm.extend(synthetic_history(40, seed=3))
    assert mm.compressions and not mm.over_budget
    assert mm.check_budget() == mm.count_tokens()


def test_the_note_is_not_a_mid_conversation_system_message():
    mm = MessageManager("You are a researcher.", max_tokens=2000)
    mm.extend(synthetic_history(40, seed=3))
    msgs = mm.get_messages()
    roles = [m["role"] for m in msgs]
    assert roles.count("system") == 1 and roles[0] == "system"  # was: a second system message
    assert "earlier messages were removed" in msgs[0]["content"]
    assert msgs[1]["content"].startswith("Research asyncio")  # the task follows
    assert mm.count_tokens() == count_messages_tokens(msgs, mm.model)


def test_note_role_user_puts_the_note_after_the_task():
    mm = MessageManager("You are a researcher.", max_tokens=2000, note_role="user")
    mm.extend(synthetic_history(40, seed=3))
    msgs = mm.get_messages()
    assert msgs[0] == {"role": "system", "content": "You are a researcher."}
    assert msgs[2]["role"] == "user" and "earlier messages were removed" in msgs[2]["content"]
    check_request({"model": "gpt-4o", "messages": msgs})
    assert mm.count_tokens() == count_messages_tokens(msgs, mm.model)
    again = MessageManager("You are a researcher.", max_tokens=2000, note_role="user")
    again.restore(msgs)
    assert again.get_messages() == msgs


@pytest.mark.parametrize("kwargs", [
    {"max_tokens": 0}, {"max_tokens": -1}, {"max_tokens": float("inf")},
    {"max_tokens": float("nan")}, {"max_tokens": True}, {"compression_threshold": 0},
    {"compression_threshold": 1.5}, {"compression_threshold": float("nan")},
    {"compression_threshold": None}, {"compress_to": 0}, {"keep_recent": 0},
    {"max_message_tokens": 0}, {"summary_max_tokens": -5}, {"note_role": "developer"},
    {"on_overflow": "ignore"}])
def test_knobs_are_validated_at_construction(kwargs):
    with pytest.raises(ConfigError) as info:
        MessageManager("sys", **kwargs)
    assert info.value.code == "invalid_config"

"""Offline tiktoken: bundled files, hash checks, model mapping, OpenAI's counting recipe."""
from __future__ import annotations

import pytest

from agentlab import tokens


def test_encoding_for_maps_model_families():
    assert tokens.encoding_for("gpt-4o").name == "o200k_base"
    assert tokens.encoding_for("gpt-4.1-mini").name == "o200k_base"
    assert tokens.encoding_for("o3-mini").name == "o200k_base"
    assert tokens.encoding_for("gpt-4").name == "cl100k_base"
    assert tokens.encoding_for("gpt-3.5-turbo").name == "cl100k_base"
    assert tokens.encoding_for("llama3:8b").name == "o200k_base"


def test_bundled_encodings_match_published_tokenisation():
    # Known token ids from the published encodings.
    assert tokens.get_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert tokens.get_encoding("o200k_base").encode("hello world") == [24912, 2375]


def test_hash_mismatch_is_a_clear_error(tmp_path, monkeypatch):
    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"aGVsbG8= 0\n")
    monkeypatch.setattr(tokens, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="SHA-256"):
        tokens._read_ranks("o200k_base")


def test_message_counting_follows_the_recipe():
    msg = {"role": "user", "content": "hello world"}
    # 3 per message + "user" (1) + "hello world" (2); the request adds 3 to prime the reply.
    assert tokens.count_message_tokens(msg) == 6
    assert tokens.count_messages_tokens([msg]) == 9
    named = dict(msg, name="bob")
    assert tokens.count_message_tokens(named) == 6 + 1 + 1


def test_tools_add_tokens_and_empty_adds_none():
    tool = {"type": "function", "function": {
        "name": "web_search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string", "description": "what to look for"},
            "mode": {"type": "string", "enum": ["fast", "deep"]}}}}}
    assert tokens.count_tools_tokens([]) == 0
    assert tokens.count_tools_tokens([tool]) > 20
    msgs = [{"role": "user", "content": "hi"}]
    assert tokens.count_messages_tokens(msgs, tools=[tool]) == \
        tokens.count_messages_tokens(msgs) + tokens.count_tools_tokens([tool])


def test_tool_calls_are_counted_as_json():
    msg = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}
    assert tokens.count_message_tokens(msg) > 10

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


# -- the free upper bound (chapter 04 counts exactly only near its budget) ------------------

def _random_texts(seed: int, n: int) -> list[str]:
    """Seeded random unicode: ASCII runs, CJK, emoji (astral), combining marks, lone surrogates,
    control characters, whitespace runs and special-token text."""
    import random
    rng = random.Random(seed)
    ranges = [(0x20, 0x7E), (0x00, 0x1F), (0x4E00, 0x9FFF), (0x1F300, 0x1FAFF), (0x0300, 0x036F),
              (0xD800, 0xDFFF), (0x0400, 0x04FF), (0x10000, 0x10FFFF), (0x2000, 0x206F)]
    out = []
    for _ in range(n):
        parts = [chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(0, 60))]
        parts.insert(rng.randint(0, len(parts)), rng.choice(["", " " * 9, "<|endoftext|>", "\n\n"]))
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_utf8_bytes_bound_the_tokens_of_corpus_and_random_unicode(name):
    from agentlab import research
    enc = tokens.get_encoding(name)
    pages = [p.text() for p in research.corpus().pages.values()]
    texts = pages + [line for p in pages for line in p.splitlines()] + _random_texts(7, 400)
    slack = [tokens.text_tokens_bound(t) - len(enc.encode(t, disallowed_special=())) for t in texts]
    assert min(slack) >= 0
    assert tokens.text_tokens_bound("\ud800") == 3 and enc.encode("\ud800") == enc.encode("\ufffd")
    ascii_english = sum(tokens.text_tokens_bound(p) for p in pages) / sum(
        len(enc.encode(p)) for p in pages)
    assert 2 < ascii_english < 8  # loose: ~4 bytes per token on English prose


def test_message_and_tool_bounds_hold_for_every_model_family():
    from agentlab import research
    from agentlab.messages import synthetic_history
    schemas = research.research_tools().get_all_schemas()
    history = synthetic_history(40, seed=3)
    for model in ("gpt-4o", "gpt-4"):
        for m in history:
            assert tokens.message_tokens_bound(m) >= tokens.count_message_tokens(m, model)
        assert tokens.tools_tokens_bound(schemas) >= tokens.count_tools_tokens(schemas, model)
        assert (tokens.messages_tokens_bound(history, schemas)
                >= tokens.count_messages_tokens(history, model, schemas))
    assert tokens.tools_tokens_bound([]) == 0 == tokens.count_tools_tokens([])

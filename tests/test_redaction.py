"""The one redaction layer (``agentlab.redaction``): shapes, registered secrets, whole tokens."""
from __future__ import annotations

import json
import logging

import pytest

from agentlab import redaction
from agentlab.redaction import REDACTED, RedactingFilter, redact, redact_text, register_secret


@pytest.fixture(autouse=True)
def _no_leftover_secrets():
    redaction.forget_secrets()
    yield
    redaction.forget_secrets()


@pytest.mark.parametrize("key, kept", [
    ("sk-proj-" + "a1B2c3D4e5F6g7H8i9", "sk-proj-"), ("sk-" + "Zz09" * 6, "sk-"),
    ("gsk_" + "q" * 24, "gsk_"), ("AIza" + "SyA1234567890abcdefghijklmnopqrs", "AIza"),
    ("xai-" + "k" * 30, "xai-"), ("hf_" + "h" * 34, "hf_"), ("AKIA" + "ABCDEFGHIJKLMNOP", "AKIA"),
])
def test_well_known_key_shapes_are_masked_keeping_their_prefix(key, kept):
    assert redact_text(f"the key is {key}.") == f"the key is {kept}{REDACTED}."


def test_ordinary_text_is_never_mangled_even_with_a_short_key_registered():
    assert register_secret("sk-sim") is False  # too short: ignored, see the module docstring
    text = "ask-simon about task-based risk-simulation sk-sim"
    assert redact_text(text) == text
    assert redact_text("Bearer abc") == "Bearer abc"  # too short to be a token


def test_registered_secrets_match_whole_tokens_or_anywhere_when_long():
    register_secret("pass1234")  # 8-19 characters: whole tokens only
    long_key = "vllm" + "0123456789abcdef" * 2 + "ZZZZ"  # 40 characters, no known shape
    register_secret(long_key)
    assert redact_text("pass1234 xpass1234 pass12345") == f"{REDACTED} xpass1234 pass12345"
    assert redact_text(f"key={long_key}&x{long_key}y") == f"key={REDACTED}&x{REDACTED}y"


def test_redact_walks_values_masks_credential_keys_and_never_changes_the_input():
    value = {"api_key": "k", "total_tokens": 3, "password": None,
             "nested": [("Bearer abcdefgh12345678",), {"clientSecret": "x"}]}
    got = redact(value, secrets=["per-call-secret-1"])
    assert got == {"api_key": REDACTED, "total_tokens": 3, "password": None,
                   "nested": [[f"Bearer {REDACTED}"], {"clientSecret": REDACTED}]}
    assert value["api_key"] == "k"
    assert redact("a per-call-secret-1 here", ["per-call-secret-1"]) == f"a {REDACTED} here"


def test_the_logging_filter_masks_messages_arguments_and_tracebacks(caplog):
    secret = "groq-style-" + "s3cr3t" * 4
    register_secret(secret)
    log = logging.getLogger("agentlab.test_redaction")
    log.addFilter(RedactingFilter())
    try:
        with caplog.at_level(logging.INFO, logger=log.name):
            log.info("calling with %s", secret)
            try:
                raise RuntimeError(f"401: bad key {secret}")
            except RuntimeError:
                log.exception("failed")
    finally:
        log.filters.clear()
    assert secret not in caplog.text and REDACTED in caplog.text


@pytest.mark.parametrize("key, kept", [
    ("gsk_live_" + "4f9a" * 8, "gsk_"), ("sk-proj-" + "Xy_7" * 6 + "-" + "q1w2" * 3, "sk-proj-"),
    ("sk_live_" + "51Hx" * 6, "sk_live_"), ("glpat-" + "x1_Y" * 6, "glpat-"),
])
def test_key_shapes_with_inner_separators_are_masked_whole(key, kept):
    assert redact_text(f"use {key}, then") == f"use {kept}{REDACTED}, then"


def test_credential_names_inside_tool_call_argument_text_are_masked():
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "login", "arguments":
            '{"user": "ann", "password": "hunter2-hunter2", "apiKey": "k"}'}},
        {"id": "b", "type": "function", "function": {"name": "s", "arguments": '{"q": "x"}'}},
        {"id": "c", "type": "function", "function": {"name": "s", "arguments": '{"token": "t'}}]}
    got = redact([message], keys=False)[0]["tool_calls"]
    assert json.loads(got[0]["function"]["arguments"]) == {
        "user": "ann", "password": REDACTED, "apiKey": REDACTED}
    assert got[1]["function"]["arguments"] == '{"q": "x"}'  # nothing masked: the text as sent
    assert got[2]["function"]["arguments"] == '{"token": "t'  # not JSON: the text rules only
    assert "hunter2" in message["tool_calls"][0]["function"]["arguments"]  # input unchanged


def test_llm_client_registers_its_key_however_it_was_given(monkeypatch):
    from agentlab import sim
    from agentlab.llm import LLMClient
    keys = ["given-" + "a1" * 10, "env-key-" + "b2" * 10, "client-" + "c3" * 10]
    monkeypatch.setenv("OPENAI_API_KEY", keys[1])
    LLMClient(client=sim.Simulator().client(), api_key=keys[0])
    LLMClient(client=sim.Simulator().client(api_key=None))
    LLMClient(client=sim.Simulator().client(api_key=keys[2]))
    assert set(keys) <= set(redaction.registered_secrets())

"""Text crossing to the model is valid UTF-8 (issue 21): a tool result holding lone surrogates
is repaired and says so; bytes that are not UTF-8 (a PNG, latin-1 text) become an explicit
marker with type, size and sha256, never U+FFFD garbage passed off as the result."""
from __future__ import annotations

import hashlib
import json
import os

import pytest

from agentlab import sim
from agentlab.executor import ToolExecutor, to_text
from agentlab.llm import ToolCall
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
LATIN1 = "café crème, naïve".encode("latin-1")


def run_one(value):
    reg = ToolRegistry()
    reg.register(lambda: value, name="give", description="Returns a fixed value.")
    return ToolExecutor(reg).execute([ToolCall("c1", "give", {})])[0]


@pytest.mark.parametrize("text, want", [
    (os.fsdecode(b"report-\xff.txt"), "report-\ufffd.txt"),   # surrogateescape from a file name
    ("split emoji \ud83d!", "split emoji \ufffd!"),            # half of 😀
    ("a pair \ud83d\ude00 joins", "a pair 😀 joins"),           # two halves make one emoji
])
def test_lone_surrogates_are_replaced_and_flagged(text, want):
    res = run_one(text)
    assert res.success and res.result.startswith(want)
    res.result.encode("utf-8")  # no UnicodeEncodeError
    lone = "\ud83d\ude00" not in text
    assert ("not valid Unicode" in res.result) is lone
    assert to_text({"name": text}).encode("utf-8")  # nested text too


@pytest.mark.parametrize("data, kind", [(PNG, "image/png"), (LATIN1, "application/octet-stream")])
def test_bytes_that_are_not_utf8_become_an_explicit_marker(data, kind):
    res = run_one(data)
    assert "\ufffd" not in res.result
    assert res.result == (f"[binary result: {kind}, {len(data)} bytes, sha256 "
                          f"{hashlib.sha256(data).hexdigest()}; not UTF-8 text, so not shown]")
    nested = json.loads(to_text({"file": data}))["file"]
    assert nested.startswith(f"[binary result: {kind}, {len(data)} bytes")
    assert run_one("plain ü".encode()).result == "plain ü"  # UTF-8 bytes are text


def test_a_tool_result_with_a_surrogate_reaches_the_next_request_repaired():
    reg = ToolRegistry()
    reg.register(lambda: os.fsdecode(b"file-\xfe"), name="ls", description="Lists a file.")
    s = sim.Simulator([sim.call("ls", {}), sim.text("done")])
    result = AgentRuntime(s.llm(), reg).run("list it")
    assert (result.stopped_reason, result.content, result.errors) == ("completed", "done", [])
    tool_msg = [m for m in s.requests[-1]["body"]["messages"] if m["role"] == "tool"][0]
    assert tool_msg["content"].startswith("file-\ufffd")


def test_the_repair_note_survives_truncation():
    text = to_text("x" * 500 + "\udcff", max_chars=100)
    assert "truncated: 401 of 501" in text and text.endswith("replaced with U+FFFD]")

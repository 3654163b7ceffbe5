"""Real provider responses, replayed (issue 11): ``data/providers/`` (sources in its
README and ``corpus.json``), plus a few *documented* shapes (issue 21: what a public issue or
provider document shows, not a recording; ``corpus.json["documented"]``). Each goes through a real ``openai.OpenAI`` client on an
``httpx2.MockTransport``, once one byte per chunk (SSE split anywhere, JSON split mid-token) and
once in one piece, and the ``LLMResponse`` must say what the recording's own test asserts."""
from __future__ import annotations

import json
from pathlib import Path

import httpx2
import openai
import pytest

from agentlab.errors import ProviderError
from agentlab.llm import LLMClient, collect_stream

HERE = Path(__file__).resolve().parents[1] / "data" / "providers"
_ALL = json.loads((HERE / "corpus.json").read_text(encoding="utf-8"))
CORPUS, DOCUMENTED = _ALL["entries"], _ALL.get("documented", [])
MSGS = [{"role": "user", "content": "replayed"}]


def replay(entry: dict, split: str):
    data = (HERE / entry["file"]).read_bytes()
    streamed = entry["file"].endswith(".sse")

    def handler(request):
        body = (data[i:i + 1] for i in range(len(data))) if split == "bytes" else data
        kind = "text/event-stream" if streamed else "application/json"
        return httpx2.Response(200, headers={"content-type": kind}, content=body)
    sdk = openai.OpenAI(api_key="k", base_url="http://provider.test/v1",
                        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    llm = LLMClient(model=entry["model"], client=sdk, max_retries=0, seed=0)  # no second chance
    return collect_stream(llm.stream(MSGS)) if streamed else llm.chat(MSGS)


@pytest.mark.parametrize("split", ["bytes", "whole"])
@pytest.mark.parametrize("entry", CORPUS + DOCUMENTED, ids=[e["file"] for e in CORPUS + DOCUMENTED])
def test_a_recorded_response_says_what_its_source_asserts(entry, split):
    want = entry["expect"]
    if "error" in want:
        with pytest.raises(ProviderError) as info:
            replay(entry, split)
        assert info.value.code == want["error"] and want["error_contains"] in info.value.message
        # False unless said: the provider blamed the request
        assert info.value.retryable is want.get("retryable", False)
        return
    got = replay(entry, split)
    for key in ("content", "refusal", "finish_reason"):
        if key in want:
            assert getattr(got, key) == want[key], key
    if "content_contains" in want:
        assert want["content_contains"] in got.content
    if want.get("content_nonempty"):
        assert got.content and got.content.strip()
    if "tool_calls" in want:
        assert [(t.name, t.arguments) for t in got.tool_calls] == [(n, a) for _, n, a in want["tool_calls"]]
        assert all(t.parse_error is None for t in got.tool_calls)
        for (wanted_id, _, _), call in zip(want["tool_calls"], got.tool_calls):
            assert call.id == wanted_id if wanted_id else call.id
        if want.get("fresh_ids"):  # the provider sent "" : the client gave each call its own id
            assert all(t.id.startswith("call_") and len(t.id) > 20 for t in got.tool_calls)
    if "raw_arguments" in want:  # arguments sent as an object: kept as canonical JSON text
        assert [t.raw_arguments for t in got.tool_calls] == want["raw_arguments"]
    for key, value in want.get("usage", {}).items():
        assert got.usage[key] == value, key


def test_the_corpus_is_real_varied_and_documented():
    providers = {e["provider"].split(" (")[0] for e in CORPUS}
    assert len(CORPUS) >= 20 and len(providers) >= 5
    assert sum(e["file"].endswith(".sse") for e in CORPUS) >= 10
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for e in CORPUS:
        assert (HERE / e["file"]).is_file() and e["file"] in readme
        assert {"repo", "path", "commit", "asserted_in"} <= set(e["source"])
        assert len(e["source"]["commit"]) == 40
    for e in DOCUMENTED:  # not recordings: each names the public page that shows the shape
        assert (HERE / e["file"]).is_file() and e["file"] in readme
        assert e["source"]["url"].startswith("https://") and e["source"]["what"]
    listed = {p.name for p in HERE.iterdir() if p.suffix in (".sse", ".json") and p.name != "corpus.json"}
    assert listed == {e["file"] for e in CORPUS + DOCUMENTED}


def test_what_real_providers_do_differently_is_in_the_corpus():
    def raw(name):
        return (HERE / name).read_bytes()
    assert b'"refusal":"I\'m' in raw("openai__stream_refusal.sse")  # refusal fragments
    snow = raw("snowflake__stream_no_finish_reason.sse")
    assert b'"finish_reason"' not in snow and b"[DONE]" in snow and b'"refusal":""' in snow
    assert json.loads(raw("gemini__tool_call_without_id.json"))["choices"][0]["message"][
        "tool_calls"][0]["id"] == ""
    assert json.loads(raw("snowflake__tool_call_empty_finish_reason.json"))["choices"][0][
        "finish_reason"] == ""
    assert b": OPENROUTER PROCESSING" in raw("openrouter__stream_error.sse")  # SSE comments
    assert b"event: error" in raw("groq__stream_error_event.sse")

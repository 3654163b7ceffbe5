"""What OpenAI-compatible servers really send that is not the textbook shape (issue 21):
arguments as a JSON object, an error (or an HTML page) in a 200 body, the legacy
``function_call`` answer, parallel streamed calls without ``index`` that reuse one id, usage
with only ``prompt_tokens``. Each is either accepted as a real client accepts it or a typed
``ProviderError`` carrying the server's own words, retried only when a retry can help."""
from __future__ import annotations

import json

import httpx2
import pytest

from agentlab.errors import ProviderError
from agentlab.llm import LLMClient, collect_stream
from test_llm import MSGS, Wire, completion, delta, make, sse, stream_response


def test_arguments_sent_as_an_object_are_accepted_in_chat_and_stream():
    body = completion(content=None, finish="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": {"x": 1, "y": "é"}}}]
    got = make(Wire(httpx2.Response(200, json=body))).chat(MSGS)
    tc = got.tool_calls[0]
    assert (tc.name, tc.arguments, tc.parse_error) == ("f", {"x": 1, "y": "é"}, None)
    assert json.loads(tc.raw_arguments) == {"x": 1, "y": "é"}  # a canonical JSON string
    msg = LLMClient.to_assistant_message(got)
    assert isinstance(msg["tool_calls"][0]["function"]["arguments"], str)
    stream = sse(delta(tool_calls=[{"index": 0, "id": "call_a", "type": "function",
                                    "function": {"name": "f", "arguments": {"x": 1, "y": "é"}}}]),
                 delta(finish="tool_calls"))
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert [(t.name, t.arguments, t.parse_error) for t in final.tool_calls] == [("f", {"x": 1, "y": "é"}, None)]
    assert json.loads(final.tool_calls[0].raw_arguments) == {"x": 1, "y": "é"}


def test_arguments_as_a_non_object_value_are_a_parse_error_not_a_crash():
    body = completion(content=None, finish="tool_calls")
    body["choices"][0]["message"]["tool_calls"] = [
        {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": [1, 2]}}]
    tc = make(Wire(httpx2.Response(200, json=body))).chat(MSGS).tool_calls[0]
    assert tc.arguments == {} and "must be a JSON object" in tc.parse_error


@pytest.mark.parametrize("error, code, retried", [
    ({"message": "Invalid tool schema", "type": "invalid_request_error", "code": None}, "bad_request", False),
    ({"code": 502, "message": "Upstream provider returned an error"}, "provider_unavailable", True),
    ({"code": 429, "message": "Rate limit exceeded upstream"}, "rate_limited", True),
])
def test_an_error_object_in_a_200_body_is_a_typed_error_with_the_servers_words(error, code, retried):
    wire = Wire(httpx2.Response(200, json={"error": error}))
    with pytest.raises(ProviderError) as info:
        make(wire, max_retries=2).chat(MSGS)
    e = info.value
    assert (e.code, e.retryable, len(wire.requests)) == (code, retried, 3 if retried else 1)
    assert e.message.startswith(f"error in a 200 body from mock.local: {error['message']}")
    assert e.details["status"] == 200 and e.details["host"] == "mock.local"


def test_an_html_200_body_is_a_typed_error_with_its_first_bytes_and_not_retried():
    page = "<html><head><title>Sign in</title></head><body>Please log in to continue" + " " * 2000
    wire = Wire(httpx2.Response(200, headers={"content-type": "text/html"}, text=page))
    with pytest.raises(ProviderError) as info:
        make(wire, max_retries=2).chat(MSGS)
    e = info.value
    assert (e.code, e.retryable, len(wire.requests)) == ("bad_response", False, 1)
    assert "200 from mock.local" in e.message and "Please log in" in e.message
    assert e.details["server_message"].startswith("<html><head><title>Sign in")
    assert len(e.message) < 600


def test_the_legacy_function_call_answer_becomes_a_tool_call():
    body = completion(content=None, finish="function_call")
    body["choices"][0]["message"]["function_call"] = {"name": "get_weather",
                                                      "arguments": '{"city": "Paris"}'}
    got = make(Wire(httpx2.Response(200, json=body))).chat(MSGS)
    assert got.finish_reason == "tool_calls" and got.has_tool_calls
    tc = got.tool_calls[0]
    assert (tc.name, tc.arguments) == ("get_weather", {"city": "Paris"})
    assert tc.id.startswith("call_") and len(tc.id) > 20  # a fresh id the tool message answers
    stream = sse(delta(role="assistant", function_call={"name": "get_weather", "arguments": ""}),
                 delta(function_call={"arguments": '{"city": '}),
                 delta(function_call={"arguments": '"Paris"}'}), delta(finish="function_call"))
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert final.finish_reason == "tool_calls"
    assert [(t.name, t.arguments) for t in final.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_parallel_streamed_calls_without_index_reusing_one_id_stay_two_calls():
    frag = lambda **f: delta(tool_calls=[{"id": "call_0", "type": "function", "function": f}])  # noqa: E731
    stream = sse(frag(name="web_search", arguments=""), frag(arguments='{"query": "a"}'),
                 frag(name="fetch_url", arguments=""), frag(arguments='{"url": "u"}'),
                 delta(finish="tool_calls"))
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert [(t.name, t.arguments) for t in final.tool_calls] == [
        ("web_search", {"query": "a"}), ("fetch_url", {"url": "u"})]
    assert len({t.id for t in final.tool_calls}) == 2
    same = sse(frag(name="web_search", arguments='{"query": "a"}'),
               frag(name="web_search", arguments='{"query": "b"}'), delta(finish="tool_calls"))
    final = collect_stream(make(Wire(lambda: stream_response(same))).stream(MSGS))
    assert [t.arguments for t in final.tool_calls] == [{"query": "a"}, {"query": "b"}]


def test_a_name_repeated_on_every_fragment_still_makes_one_call():
    frag = lambda a: delta(tool_calls=[{"id": "call_0", "function": {"name": "f", "arguments": a}}])  # noqa: E731
    stream = sse(frag('{"x"'), frag(": 1}"), delta(finish="tool_calls"))
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert [(t.name, t.arguments) for t in final.tool_calls] == [("f", {"x": 1})]


@pytest.mark.parametrize("usage, total", [({"prompt_tokens": 12}, 12),
                                          ({"prompt_tokens": 12, "completion_tokens": 3}, 15),
                                          ({"prompt_tokens": 12, "completion_tokens": 3,
                                            "total_tokens": 0}, 15)])
def test_usage_without_total_tokens_adds_prompt_and_completion(usage, total):
    body = {**completion(), "usage": usage}
    got = make(Wire(httpx2.Response(200, json=body))).chat(MSGS)
    assert got.usage["total_tokens"] == total
    assert got.usage["completion_tokens"] == usage.get("completion_tokens", 0)
    stream = sse(delta(content="hi"), delta(finish="stop"), {"choices": [], "usage": usage})
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert final.usage["total_tokens"] == total


def test_text_that_is_not_utf8_never_escapes_chat_as_a_bare_exception():
    wire = Wire(httpx2.Response(200, json=completion()))
    bad = [{"role": "user", "content": "split emoji \ud83d here"}]
    with pytest.raises(ProviderError) as info:
        make(wire).chat(bad)
    assert info.value.code == "bad_request" and info.value.details["param"] == "messages[0]"
    assert wire.requests == []  # refused before any network


def _runtime(*bodies):
    from agentlab.runtime import AgentRuntime
    from agentlab.tools import ToolRegistry
    reg, ran = ToolRegistry(), []

    @reg.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        ran.append(city)
        return f"sunny in {city}"
    wire = Wire(*[httpx2.Response(200, json=b) for b in bodies])
    return AgentRuntime(make(wire), reg), wire, ran


@pytest.mark.parametrize("shape", ["legacy function_call", "arguments as an object"])
def test_a_run_executes_the_call_whatever_its_shape(shape):
    first = completion(content=None, finish="tool_calls")
    msg = first["choices"][0]["message"]
    if shape == "legacy function_call":
        first["choices"][0]["finish_reason"] = "function_call"
        msg["function_call"] = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    else:
        msg["tool_calls"] = [{"id": "call_1", "type": "function",
                              "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]
    rt, wire, ran = _runtime(first, completion("It is sunny."))
    result = rt.run("weather in Paris?")
    assert (result.stopped_reason, result.content, ran) == ("completed", "It is sunny.", ["Paris"])
    sent = wire.requests[1]["messages"]
    call = sent[-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert sent[-1] == {"role": "tool", "tool_call_id": call["id"], "content": "sunny in Paris"}


def test_a_trailing_header_repeat_without_arguments_opens_no_extra_call():
    frag = lambda a: delta(tool_calls=[{"id": "call_0", "function": {"name": "f", "arguments": a}}])  # noqa: E731
    stream = sse(frag('{"x": 1}'), frag(""), delta(finish="tool_calls"))
    final = collect_stream(make(Wire(lambda: stream_response(stream))).stream(MSGS))
    assert [(t.name, t.arguments) for t in final.tool_calls] == [("f", {"x": 1})]


@pytest.mark.parametrize("content_type, body, code", [
    ("text/html", b"<html><body>Please log in to continue</body></html>", "bad_response"),
    ("application/json", json.dumps({"error": {"message": "Invalid tool schema",
                                               "type": "invalid_request_error"}}).encode(),
     "bad_request")])
def test_a_streamed_request_answered_with_a_page_or_an_error_object_says_so(content_type, body, code):
    wire = Wire(lambda: httpx2.Response(200, headers={"content-type": content_type}, content=body))
    with pytest.raises(ProviderError) as info:
        collect_stream(make(wire, max_retries=2).stream(MSGS))
    assert (info.value.code, info.value.retryable, len(wire.requests)) == (code, False, 1)
    assert ("Please log in" if code == "bad_response" else "Invalid tool schema") in info.value.message


def test_an_event_stream_under_another_content_type_is_still_read():
    body = sse(delta(content="hel"), delta(content="lo"), delta(finish="stop"))
    wire = Wire(lambda: httpx2.Response(200, headers={"content-type": "text/plain"}, content=body))
    assert collect_stream(make(wire).stream(MSGS)).content == "hello"


@pytest.mark.parametrize("with_calls", [False, True])
def test_a_streamed_request_answered_with_a_whole_completion_takes_it_as_the_answer(with_calls):
    body = completion(content="hello there", finish="stop")
    if with_calls:
        body = completion(content=None, finish="tool_calls")
        body["choices"][0]["message"]["tool_calls"] = [
            {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]
    wire = Wire(lambda: httpx2.Response(200, json=body))  # application/json, no event stream
    client = make(wire, max_retries=2)
    parts = list(client.stream(MSGS))
    final = collect_stream(parts)
    assert len(wire.requests) == 1 and [a.error_code for a in client.attempts] == [None]
    if with_calls:
        assert [(t.id, t.name, t.arguments) for t in final.tool_calls] == [("call_a", "f", {"x": 1})]
        assert (final.content, final.finish_reason, len(parts)) == (None, "tool_calls", 1)
    else:
        assert (final.content, final.finish_reason, len(parts)) == ("hello there", "stop", 2)
    assert final.usage == body["usage"]

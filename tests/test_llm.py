"""LLMClient (chapter 01): retries, errors, parsing, streaming, speed.

Most tests talk to a tiny ``httpx2.MockTransport`` handler written here (statuses, headers and
SSE bodies are then exactly what the test says); the last ones run against ``agentlab.sim``.
"""
from __future__ import annotations

import json
import time

import httpx2
import openai
import pytest

from agentlab.errors import ProviderError
from agentlab.llm import (Attempt, LLMClient, LLMResponse, ToolCall, backoff_delay,
                          collect_stream, parse_arguments, should_retry)

MSGS = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "web_search", "parameters": {
    "type": "object", "properties": {"query": {"type": "string"}}}}}]


def completion(content="hello", tool_calls=None, finish="stop"):
    msg = {"role": "assistant", "content": content}
    if tool_calls:
        msg["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                             for i, n, a in tool_calls]
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def sse(*chunks, done=True):
    """An SSE body from chunk dicts (choices deltas); usage chunks pass through as given."""
    lines = [f"data: {json.dumps({'id': 'c1', 'object': 'chat.completion.chunk', 'created': 0, 'model': 'gpt-4o', **c})}\n\n"
             for c in chunks]
    return ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()


def delta(finish=None, **d):
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def stream_response(body: bytes):
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)


class Wire:
    """A scripted endpoint: one response (or exception) per request, then the last one repeats."""

    def __init__(self, *plan):
        self.plan, self.requests, self.times = list(plan), [], []

    def __call__(self, request):
        self.requests.append(json.loads(request.content))
        self.times.append(time.monotonic())
        item = self.plan[min(len(self.requests), len(self.plan)) - 1]
        if isinstance(item, Exception):
            raise type(item)(str(item), request=request)
        if isinstance(item, int):
            return httpx2.Response(item, json={"error": {"message": f"status {item}",
                                                         "type": "x", "code": None}})
        return item() if callable(item) else item


def ok(**kw):
    return httpx2.Response(200, json=completion(**kw))


def make(wire, **kw):
    http = httpx2.Client(transport=httpx2.MockTransport(wire))
    sdk = openai.OpenAI(api_key="sk-test", base_url="http://mock.local/v1", http_client=http)
    kw.setdefault("retry_base_delay", 0.001)
    return LLMClient(client=sdk, seed=0, **kw)


# -- retrying ------------------------------------------------------------------------------------

def test_429_500_ok_is_exactly_three_requests():
    wire = Wire(429, 500, ok())
    llm = make(wire)
    assert llm.chat(MSGS).content == "hello"
    assert len(wire.requests) == 3
    assert [(a.n, a.status, a.error_code) for a in llm.attempts] == [
        (1, 429, "rate_limited"), (2, 500, "provider_unavailable"), (3, 200, None)]
    assert llm.attempts[0].delay_s > 0 and llm.attempts[2].delay_s == 0


@pytest.mark.parametrize("status,code", [(400, "bad_request"), (401, "auth_failed"),
                                         (403, "auth_failed"), (404, "bad_request"),
                                         (422, "bad_request")])
def test_client_errors_are_raised_at_once(status, code):
    wire = Wire(status, ok())
    with pytest.raises(ProviderError) as info:
        make(wire).chat(MSGS)
    assert len(wire.requests) == 1
    e = info.value
    assert (e.code, e.retryable, e.details["status"], e.details["attempts"]) == (code, False, status, 1)
    assert e.details["body"]["message"] == f"status {status}"
    assert isinstance(e.__cause__, openai.APIStatusError)


@pytest.mark.parametrize("item,code", [(429, "rate_limited"), (503, "provider_unavailable"),
                                       (408, "provider_timeout"), (409, "conflict"),
                                       (httpx2.ReadTimeout("slow"), "provider_timeout"),
                                       (httpx2.ConnectError("refused"), "provider_unavailable")])
def test_exhausted_retries_raise_retryable_provider_error(item, code):
    wire = Wire(item)
    with pytest.raises(ProviderError) as info:
        make(wire, max_retries=2).chat(MSGS)
    assert len(wire.requests) == 3
    assert (info.value.code, info.value.retryable, info.value.details["attempts"]) == (code, True, 3)
    assert "gave up after 3 attempts" in info.value.message


def test_retry_after_is_a_floor():
    limited = httpx2.Response(429, headers={"retry-after": "0.5"}, json={"error": {"message": "slow"}})
    wire = Wire(limited, ok())
    llm = make(wire)
    llm.chat(MSGS)
    assert wire.times[1] - wire.times[0] >= 0.5
    assert 0.5 <= llm.attempts[0].delay_s < 0.6


def test_retry_after_ms_and_cap():
    slept = []
    wire = Wire(httpx2.Response(429, headers={"retry-after-ms": "250"}),
                httpx2.Response(429, headers={"retry-after": "3600"}), ok())
    make(wire, sleep=slept.append, max_retry_delay=2.0).chat(MSGS)
    assert slept[0] >= 0.25 and slept[1] == 2.0


def test_backoff_full_jitter_is_seeded_and_capped():
    import random
    draws = [backoff_delay(3, 1.0, 30.0, None, random.Random(1)) for _ in range(3)]
    assert len(set(draws)) == 1 and 0 <= draws[0] <= 8.0
    many = [backoff_delay(10, 1.0, 30.0, rng=random.Random(i)) for i in range(400)]
    assert max(many) <= 30.0 and min(many) < 3.0  # full jitter reaches near zero
    assert backoff_delay(2000, 1.0, 5.0, rng=random.Random(0)) <= 5.0  # no overflow
    assert should_retry(502) and should_retry(429) and not should_retry(401)


def test_same_seed_same_schedule():
    def delays(seed):
        slept = []
        wire = Wire(429, 429, 429, ok())
        llm = make(wire, sleep=slept.append)
        llm._rng.seed(seed)
        llm.chat(MSGS)
        return slept
    assert delays(3) == delays(3) != delays(4)
    assert all(d <= 0.001 * 2 ** k for k, d in enumerate(delays(3)))


def test_timeout_budget_bounds_retries():
    slept = []
    wire = Wire(httpx2.Response(429, headers={"retry-after": "5"}))
    with pytest.raises(ProviderError) as info:
        make(wire, sleep=slept.append).chat(MSGS, timeout=1.0)
    assert len(wire.requests) == 1 and slept == []
    assert "time budget" in info.value.message and info.value.code == "rate_limited"


def test_sdk_retries_are_off_even_on_a_given_client():
    wire = Wire(500)
    http = httpx2.Client(transport=httpx2.MockTransport(wire))
    sdk = openai.OpenAI(api_key="k", base_url="http://mock.local/v1", http_client=http,
                        max_retries=5)
    with pytest.raises(ProviderError):
        LLMClient(client=sdk, max_retries=0).chat(MSGS)
    assert len(wire.requests) == 1


def test_history_keeps_every_attempt_across_calls():
    wire = Wire(500, ok(), ok())
    llm = make(wire)
    llm.chat(MSGS)
    llm.chat(MSGS)
    assert [(a.call, a.n) for a in llm.history] == [(1, 1), (1, 2), (2, 1)]
    assert [a.n for a in llm.attempts] == [1] and isinstance(llm.attempts[0], Attempt)


# -- what is sent ---------------------------------------------------------------------------------

def test_body_is_what_the_api_expects():
    wire = Wire(ok())
    make(wire, model="m1").chat(MSGS, tools=TOOLS, tool_choice="required", max_tokens=9)
    assert wire.requests[0] == {"model": "m1", "messages": MSGS, "temperature": 0.0,
                                "tools": TOOLS, "tool_choice": "required", "max_tokens": 9}


@pytest.mark.parametrize("messages,tools,param", [
    ([], None, "messages"), ("hi", None, "messages"), (["hi"], None, "messages[0]"),
    ([{"role": "robot", "content": "x"}], None, "messages[0].role"),
    (MSGS, [{"name": "f"}], "tools[0]"),
    (MSGS, [{"type": "function", "function": {"description": "no name"}}], "tools[0]")])
def test_malformed_requests_never_reach_the_network(messages, tools, param):
    wire = Wire(ok())
    llm = make(wire)
    with pytest.raises(ProviderError) as info:
        llm.chat(messages, tools=tools)
    with pytest.raises(ProviderError):
        llm.stream(messages, tools=tools)  # checked before the first next()
    assert wire.requests == []
    assert (info.value.code, info.value.details["param"]) == ("bad_request", param)


# -- parsing ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,args,error", [
    ('{"q": 1}', {"q": 1}, None), ("", {}, None),
    ('{"q": ', {}, "not valid JSON"), ("[1, 2]", {}, "JSON object, got list"),
    ("null", {}, "got NoneType"), ("'single'", {}, "not valid JSON")])
def test_parse_arguments_never_raises(raw, args, error):
    got, err = parse_arguments(raw)
    assert got == args
    assert (err is None) if error is None else (error in err)


def test_malformed_arguments_in_chat_become_parse_errors():
    wire = Wire(ok(content=None, finish="tool_calls",
                   tool_calls=[("call_1", "web_search", '{"query": "a"}'),
                               ("call_2", "web_search", '{"query": ')]))
    r = make(wire).chat(MSGS, tools=TOOLS)
    assert r.tool_calls[0] == ToolCall("call_1", "web_search", {"query": "a"}, '{"query": "a"}')
    bad = r.tool_calls[1]
    assert (bad.arguments, bad.raw_arguments) == ({}, '{"query": ')
    assert "not valid JSON" in bad.parse_error
    assert r.usage == {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}


# -- streaming -------------------------------------------------------------------------------------

TOOL_STREAM = sse(
    delta(role="assistant", content=None,
          tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                       "function": {"name": "web_search", "arguments": ""}}]),
    delta(tool_calls=[{"index": 1, "id": "call_2", "type": "function",
                       "function": {"name": "read_url", "arguments": '{"u'}}]),
    delta(tool_calls=[{"index": 0, "function": {"arguments": '{"query"'}}]),
    delta(tool_calls=[{"index": 0}]),  # a delta without `function`
    delta(tool_calls=[{"index": 1, "function": {"arguments": 'rl": "x"}'}}]),
    delta(tool_calls=[{"index": 0, "function": {"arguments": ': "a"}'}}]),
    delta(finish="tool_calls"),
    {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})


def test_streamed_tool_calls_equal_non_streamed():
    calls = [("call_1", "web_search", '{"query": "a"}'), ("call_2", "read_url", '{"url": "x"}')]
    wire = Wire(ok(content=None, tool_calls=calls, finish="tool_calls"),
                lambda: stream_response(TOOL_STREAM))
    llm = make(wire)
    plain = llm.chat(MSGS, tools=TOOLS)
    streamed = list(llm.stream(MSGS, tools=TOOLS))
    assert len(streamed) == 1 and streamed[0].content is None
    assert streamed[0] == plain  # tool calls, usage and finish reason
    assert wire.requests[1]["stream"] is True
    assert wire.requests[1]["stream_options"] == {"include_usage": True}


def test_stream_yields_text_then_final():
    body = sse(delta(role="assistant", content="Hel"), delta(content="lo"), delta(finish="stop"),
               {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2,
                                         "total_tokens": 5}})
    out = list(make(Wire(lambda: stream_response(body))).stream(MSGS))
    assert [o.content for o in out] == ["Hel", "lo", None]
    assert out[-1] == LLMResponse(None, [], {"prompt_tokens": 3, "completion_tokens": 2,
                                             "total_tokens": 5}, "stop")
    assert collect_stream(out).content == "Hello"


def test_stream_malformed_fragments_never_raise():
    body = sse(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{oops"}}]),
               delta(tool_calls=[{"id": "d", "function": {"name": "g", "arguments": "[]"}}]),  # no index
               delta(finish="tool_calls"))
    final = list(make(Wire(lambda: stream_response(body))).stream(MSGS))[-1]
    assert [(t.id, t.name, t.arguments) for t in final.tool_calls] == [("c", "f", {}), ("d", "g", {})]
    assert all(t.parse_error for t in final.tool_calls)


def test_truncated_stream_before_any_text_is_retried():
    wire = Wire(lambda: stream_response(sse(delta(tool_calls=[{"index": 0, "id": "c",
                                                                "function": {"name": "f"}}]),
                                            done=False)),
                lambda: stream_response(sse(delta(content="ok"), delta(finish="stop"))))
    llm = make(wire)
    assert [o.content for o in llm.stream(MSGS)] == ["ok", None]
    assert len(wire.requests) == 2
    assert llm.attempts[0].error_code == "provider_unavailable"


def test_truncated_stream_after_text_ends_incomplete():
    wire = Wire(lambda: stream_response(sse(delta(content="par"), done=False)), ok())
    out = list(make(wire).stream(MSGS))
    assert [o.content for o in out] == ["par", None]
    assert out[-1].finish_reason == "incomplete" and len(wire.requests) == 1


def test_stream_status_errors_are_retried_then_raised():
    wire = Wire(503, 401)
    with pytest.raises(ProviderError) as info:
        list(make(wire).stream(MSGS))
    assert len(wire.requests) == 2 and info.value.code == "auth_failed"


# -- helpers ---------------------------------------------------------------------------------------

def test_to_assistant_message_keeps_raw_arguments():
    r = LLMResponse(None, [ToolCall("c1", "f", {"a": 1}, '{"a": 1}'),
                           ToolCall("c2", "g", {}, "{bad", "not valid JSON")])
    msg = LLMClient.to_assistant_message(r)
    assert msg == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{bad"}}]}
    assert LLMClient.to_assistant_message(LLMResponse("hi"))["content"] == "hi"
    assert json.loads(LLMClient.to_assistant_message(
        LLMResponse(None, [ToolCall("c", "f", {"x": "é"})]))["tool_calls"][0]["function"]["arguments"]) == {"x": "é"}


def test_from_env_uses_key_and_base_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("AGENTLAB_MODEL", "gpt-4.1")
    llm = LLMClient.from_env(max_retries=1)
    assert (llm.model, str(llm.client.base_url), llm.client.api_key) == (
        "gpt-4.1", "http://127.0.0.1:9/v1/", "sk-real")
    assert llm.client.max_retries == 0 and llm.max_retries == 1
    assert LLMClient.from_env(model="x").model == "x"


# -- speed -------------------------------------------------------------------------------------------

def test_chat_is_much_cheaper_than_create_at_600_messages():
    wire = Wire(ok())
    llm = make(wire)
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": "word " * 30}
               for i in range(600)]

    def best(fn, k=3):
        times = []
        for _ in range(k):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return min(times)
    ours = best(lambda: llm.chat(history))
    sdk = best(lambda: llm.client.chat.completions.create(model="gpt-4o", messages=history))
    assert sdk / ours >= 20, (sdk, ours)


# -- against the simulator -------------------------------------------------------------------------

sim = pytest.importorskip("agentlab.sim")
from agentlab.naive.llm import NaiveLLMClient  # noqa: E402

CALLS = [sim.call("web_search", {"query": "asyncio"}), sim.call("read_url", {"url": "https://x"})]


def test_sim_plan_429_500_ok_and_400():
    s = sim.Simulator(sim.Script([sim.text("hi")]), faults=sim.FaultPlan([429, 500]))
    assert s.llm(retry_base_delay=0.001, seed=0).chat(MSGS).content == "hi"
    assert [r["status"] for r in s.requests] == [429, 500, 200]
    s = sim.Simulator(faults=sim.FaultPlan([400]))
    with pytest.raises(ProviderError, match="bad_request"):
        s.llm().chat(MSGS)
    assert len(s.requests) == 1


def test_sim_retry_after_half_a_second():
    s = sim.Simulator(faults=sim.FaultPlan([("rate_limit", {"retry_after": 0.5})]))
    s.llm(retry_base_delay=0.001, seed=0).chat(MSGS)
    assert s.requests[1]["at"] - s.requests[0]["at"] >= 0.5


def test_sim_streamed_tool_calls_equal_non_streamed_with_usage():
    s = sim.Simulator(sim.Script([CALLS]))
    llm = s.llm()
    plain = llm.chat(MSGS, tools=TOOLS)
    streamed = collect_stream(llm.stream(MSGS, tools=TOOLS))
    assert plain.tool_calls == streamed.tool_calls
    assert [t.arguments for t in streamed.tool_calls] == [c.arguments for c in CALLS]
    assert streamed.usage == plain.usage and streamed.usage["total_tokens"] > 0
    assert streamed.finish_reason == plain.finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_sim_malformed_arguments_never_raise(stream):
    s = sim.Simulator(sim.Script([CALLS]), faults=sim.FaultPlan(["malformed_arguments"]))
    llm = s.llm()
    r = collect_stream(llm.stream(MSGS, tools=TOOLS)) if stream else llm.chat(MSGS, tools=TOOLS)
    assert len(r.tool_calls) == 2 and all(t.parse_error and t.arguments == {} for t in r.tool_calls)
    assert all(t.raw_arguments for t in r.tool_calls)


def test_sim_truncated_tool_stream_is_retried():
    s = sim.Simulator(sim.Script([CALLS]), faults=sim.FaultPlan(["truncated_stream"]))
    llm = s.llm(retry_base_delay=0.001)
    r = collect_stream(llm.stream(MSGS, tools=TOOLS))
    assert len(s.requests) == 2 and r.finish_reason == "tool_calls"
    assert [a.error_code for a in llm.attempts] == ["provider_unavailable", None]


def test_naive_client_retries_a_401_and_ours_does_not():
    s = sim.Simulator(faults=sim.FaultPlan([401] * 10))
    with pytest.raises(openai.AuthenticationError):
        NaiveLLMClient(client=s.client(), retry_base_delay=0.001).chat(MSGS)
    naive_requests = len(s.requests)
    s.reset()
    with pytest.raises(ProviderError, match="auth_failed"):
        s.llm().chat(MSGS)
    assert (naive_requests, len(s.requests)) == (4, 1)


def test_from_env_without_key_uses_the_simulator(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = LLMClient.from_env()
    assert "sim" in str(llm.client.base_url) and llm.chat(MSGS).content


def test_the_offline_default_is_found_without_importing_the_simulator(monkeypatch):
    """``agentlab.sim`` imports ``agentlab.llm`` (``Simulator.llm``); the client reaches its
    offline default through the entry point pyproject declares, never an import of sim."""
    import importlib.util
    from pathlib import Path

    from agentlab.llm import offline
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("code_shape", root / "scripts" / "code_shape.py")
    shape = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shape)
    graph = shape.import_graph(root)
    arrows = {(a.split(".")[1], b.split(".")[1]) for a, targets in graph.items() for b in targets
              if a.count(".") and b.count(".")}
    assert ("sim", "llm") in arrows and ("llm", "sim") not in arrows
    assert offline.offline_endpoint().__class__ is sim.Simulator  # declared in pyproject.toml
    monkeypatch.setattr(offline, "_factory", [lambda: sim.Simulator(sim.Script([sim.text("own")]))])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert LLMClient.from_env().chat(MSGS).content == "own"


def test_llmclient_over_real_http_with_serve():
    s = sim.Simulator(sim.Script([CALLS]), faults=sim.FaultPlan([("rate_limit", {"retry_after": 0.1})]))
    with s.serve() as url:
        llm = LLMClient(base_url=url, api_key="sk-sim", retry_base_delay=0.001, timeout=10)
        plain = llm.chat(MSGS, tools=TOOLS)
        streamed = collect_stream(llm.stream(MSGS, tools=TOOLS))
    assert [a.status for a in llm.history] == [429, 200, 200]
    assert llm.history[0].delay_s >= 0.1
    assert streamed.tool_calls == plain.tool_calls and streamed.usage == plain.usage


def test_per_call_timeout_bounds_a_slow_model():
    s = sim.Simulator(latency=sim.Latency(first_token_ms=5000, jitter=0.0))
    t0 = time.monotonic()
    with pytest.raises(ProviderError) as info:
        s.llm(retry_base_delay=0.001).chat(MSGS, timeout=0.3)
    assert time.monotonic() - t0 < 1.5
    assert info.value.code == "provider_timeout" and len(s.requests) == 1


def test_per_call_timeout_bounds_a_stream_after_text():
    def slow_body():
        for i in range(20):
            time.sleep(0.05)
            yield sse(delta(content=f"w{i} "), done=False)
    wire = Wire(lambda: httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                        content=slow_body()))
    got, t0 = [], time.monotonic()
    with pytest.raises(ProviderError) as info:
        for part in make(wire).stream(MSGS, timeout=0.3):
            got.append(part.content)
    assert 0.3 <= time.monotonic() - t0 < 0.9 and 3 <= len(got) < 20
    assert info.value.code == "provider_timeout" and info.value.details["partial"] is True


@pytest.mark.parametrize("plan", [[], ["malformed_arguments"]])
def test_to_assistant_message_round_trips_through_the_strict_simulator(plan):
    s = sim.Simulator(sim.Script([CALLS, sim.text("done")]), faults=sim.FaultPlan(plan))
    llm = s.llm()
    r = llm.chat(MSGS, tools=TOOLS)
    history = MSGS + [LLMClient.to_assistant_message(r)] + [
        {"role": "tool", "tool_call_id": t.id, "content": t.parse_error or "ok"} for t in r.tool_calls]
    assert llm.chat(history, tools=TOOLS).content == "done"
    sent = s.requests[1]["body"]["messages"][1]["tool_calls"]
    assert [c["function"]["arguments"] for c in sent] == [t.raw_arguments for t in r.tool_calls]


# -- what real providers do differently (issue 11) -------------------------------------------------
# Shapes below are the ones recorded from real endpoints (see data/providers/README.md).

def test_refusal_is_kept_in_chat_and_stream():
    said = "I'm sorry, I can't assist with that request."
    refused = completion(content=None)
    refused["choices"][0]["message"]["refusal"] = said
    body = sse(delta(role="assistant", content=None, refusal=""),
               *[delta(refusal=w) for w in ("I'm sorry, ", "I can't assist", " with that request.")],
               delta(finish="stop"))
    llm = make(Wire(httpx2.Response(200, json=refused), lambda: stream_response(body)))
    plain = llm.chat(MSGS)
    streamed = list(llm.stream(MSGS))
    assert (plain.content, plain.refusal, plain.finish_reason) == (None, said, "stop")
    assert [s.content for s in streamed] == [None]  # a refusal is not text to show as deltas
    assert collect_stream(streamed).refusal == said == streamed[-1].refusal
    assert LLMClient.to_assistant_message(plain) == {"role": "assistant", "content": "",
                                                    "refusal": said}


def test_empty_refusal_string_is_no_refusal():
    body = sse(delta(role="assistant", content="4", refusal=""), delta(content="", refusal=""))
    final = list(make(Wire(lambda: stream_response(body))).stream(MSGS))[-1]
    assert final.refusal is None and final.finish_reason == "stop"


def test_stream_with_done_but_no_finish_reason_is_complete_and_sent_once():
    calls = sse(delta(role="assistant", tool_calls=[{"index": 0, "id": "call_1", "type": "function",
                                                     "function": {"name": "web_search", "arguments": ""}}]),
                delta(tool_calls=[{"index": 0, "function": {"arguments": '{"query": "a"}'}}]),
                {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
    wire = Wire(lambda: stream_response(calls))
    final = list(make(wire).stream(MSGS, tools=TOOLS))[-1]
    assert len(wire.requests) == 1
    assert (final.finish_reason, final.tool_calls[0].arguments) == ("tool_calls", {"query": "a"})
    text = sse(delta(role="assistant", content="Hi"), delta(content=" there"))
    out = list(make(Wire(lambda: stream_response(text))).stream(MSGS))
    assert collect_stream(out).content == "Hi there" and out[-1].finish_reason == "stop"


def test_stream_closed_after_complete_arguments_is_complete_but_cut_arguments_are_not():
    whole = sse(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f",
                                                                      "arguments": '{"a": 1}'}}]), done=False)
    wire = Wire(lambda: stream_response(whole))
    final = list(make(wire).stream(MSGS))[-1]
    assert (len(wire.requests), final.finish_reason) == (1, "tool_calls")
    cut = sse(delta(tool_calls=[{"index": 0, "id": "c", "function": {"name": "f",
                                                                    "arguments": '{"a": '}}]), done=False)
    wire = Wire(lambda: stream_response(cut))
    with pytest.raises(ProviderError) as info:
        list(make(wire, max_retries=1).stream(MSGS))
    assert len(wire.requests) == 2 and info.value.code == "provider_unavailable"


@pytest.mark.parametrize("body", [{**completion(), "choices": []}, {**completion(), "choices": None}])
def test_no_choices_is_an_empty_response_error_not_an_empty_answer(body):
    wire = Wire(httpx2.Response(200, json=body))
    with pytest.raises(ProviderError) as info:
        make(wire, max_retries=1).chat(MSGS)
    assert (info.value.code, info.value.retryable, len(wire.requests)) == ("empty_response", True, 2)
    stream = sse({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}})
    with pytest.raises(ProviderError) as info:
        list(make(Wire(lambda: stream_response(stream)), max_retries=0).stream(MSGS))
    assert info.value.code == "empty_response"


def test_missing_or_repeated_tool_call_ids_are_made_unique():
    no_id = ok(content=None, finish="tool_calls", tool_calls=[("", "f", "{}"), ("", "f", '{"x": 1}')])
    llm = make(Wire(no_id))
    first = llm.chat(MSGS)
    ids = [t.id for t in first.tool_calls]
    assert all(i.startswith("call_") and len(i) > 10 for i in ids) and len(set(ids)) == 2
    history = MSGS + [LLMClient.to_assistant_message(first)] + [
        {"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
    again = llm.chat(history)  # same empty ids: must not collide with turn 1's
    assert not {t.id for t in again.tool_calls} & set(ids)
    repeat = ok(content=None, finish="tool_calls", tool_calls=[("call_0", "f", "{}")])
    llm = make(Wire(repeat))
    one = llm.chat(MSGS).tool_calls[0].id
    assert one == "call_0"  # a provider's own id is kept...
    history = MSGS + [{"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_0", "content": "ok"}]
    assert llm.chat(history).tool_calls[0].id != "call_0"  # ...unless the history already has it


def test_streamed_calls_without_ids_get_unique_ids():
    body = sse(delta(tool_calls=[{"index": 0, "function": {"name": "f", "arguments": "{}"}}]),
               delta(tool_calls=[{"index": 1, "id": "", "function": {"name": "g", "arguments": "{}"}}]),
               delta(finish="tool_calls"))
    final = list(make(Wire(lambda: stream_response(body))).stream(MSGS))[-1]
    ids = [t.id for t in final.tool_calls]
    assert len(set(ids)) == 2 and all(i.startswith("call_") and i not in ("call_0", "call_1") for i in ids)


def test_error_message_keeps_status_server_message_and_host():
    nf = httpx2.Response(404, json={"error": {"message": "The model `gpt-5x` does not exist or you "
                                                         "do not have access to it.",
                                              "type": "invalid_request_error", "param": None,
                                              "code": "model_not_found"}})
    with pytest.raises(ProviderError) as info:
        make(Wire(nf), model="gpt-5x").chat(MSGS)
    e = info.value
    assert e.message.startswith("HTTP 404 from mock.local: The model `gpt-5x` does not exist")
    assert (e.code, e.details["host"], e.details["status"]) == ("model_not_found", "mock.local", 404)
    assert e.details["server_message"].startswith("The model `gpt-5x`")
    long = httpx2.Response(500, text="<html>" + "x" * 5000 + "</html>")
    with pytest.raises(ProviderError) as info:
        make(Wire(long), max_retries=0).chat(MSGS)
    assert "HTTP 500 from mock.local" in info.value.message and len(info.value.message) < 600
    with pytest.raises(ProviderError) as info:
        make(Wire(httpx2.ConnectError("refused")), max_retries=0).chat(MSGS)
    assert "mock.local" in info.value.message and info.value.details["host"] == "mock.local"


def test_base_url_without_key_uses_that_endpoint_with_a_placeholder_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    monkeypatch.delenv("AGENTLAB_MODEL", raising=False)
    llm = LLMClient.from_env()
    assert str(llm.client.base_url) == "http://127.0.0.1:11434/v1/" and llm.client.api_key
    assert llm.endpoint == "gpt-4o at http://127.0.0.1:11434/v1 (OPENAI_BASE_URL, no key: placeholder sent)"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert LLMClient.from_env().endpoint == (
        "gpt-4o on the built-in simulator (no OPENAI_API_KEY / OPENAI_BASE_URL set)")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    assert LLMClient.from_env().endpoint == "gpt-4o at https://api.openai.com/v1 (OPENAI_API_KEY)"

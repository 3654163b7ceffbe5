"""Tests for agentlab.sim: real openai.OpenAI clients against the simulator."""
from __future__ import annotations

import json
import subprocess
import sys

import openai
import pytest

from agentlab import sim
from agentlab.sim import Simulator, call, text

TOOLS = [
    {"type": "function", "function": {
        "name": "web_search", "description": "Search the web.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "max_results": {"type": "integer"}},
            "required": ["query"]}}},
    {"type": "function", "function": {
        "name": "read_url", "description": "Read a page.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}},
                       "required": ["url"]}}},
]
USER = [{"role": "user", "content": "Find out about agents."}]


def create(client, messages=USER, tools=TOOLS, **kw):
    return client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools, **kw)


def assistant_msg(resp) -> dict:
    return resp.choices[0].message.model_dump(exclude_none=True,
                                              exclude={"annotations", "refusal"})


def answered(resp, result="ok") -> list[dict]:
    """USER + the assistant's tool calls + one tool result per call."""
    msg = assistant_msg(resp)
    return USER + [msg] + [{"role": "tool", "tool_call_id": tc["id"], "content": result}
                           for tc in msg["tool_calls"]]


# ------------------------------------------------------------------ policies, non-streaming

def test_script_tool_call_then_text():
    s = Simulator([call("web_search", {"query": "agents"}), text("All done.")])
    c = s.client()
    r1 = create(c)
    tc = r1.choices[0].message.tool_calls[0]
    assert (tc.type, tc.function.name) == ("function", "web_search")
    assert json.loads(tc.function.arguments) == {"query": "agents"}
    assert tc.id.startswith("call_") and r1.choices[0].finish_reason == "tool_calls"
    r2 = create(c, answered(r1))
    assert r2.choices[0].message.content == "All done."
    assert r2.choices[0].finish_reason == "stop" and r2.model == "gpt-4o"
    assert [r["status"] for r in s.requests] == [200, 200]
    assert s.requests[1]["body"]["messages"][-1]["role"] == "tool"


def test_script_retry_gets_same_answer_and_end_of_script():
    s = Simulator([text("one")])
    c = s.client()
    assert create(c).choices[0].message.content == "one"
    assert create(c).choices[0].message.content == "one"  # same request, same reply
    later = USER + [{"role": "assistant", "content": "one"}]
    assert create(c, later).choices[0].message.content == sim.SCRIPT_ENDED


def test_parallel_calls_have_distinct_ids():
    s = Simulator([[call("web_search", {"query": "a"}), call("read_url", {"url": "u"})]])
    calls = create(s.client()).choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["web_search", "read_url"]
    assert len({c.id for c in calls}) == 2


def test_tool_user_calls_every_tool_then_cites_results():
    s = Simulator()  # ToolUser by default
    c = s.client()
    r1 = create(c)
    calls = r1.choices[0].message.tool_calls
    assert [json.loads(x.function.arguments) for x in calls] == [
        {"query": "example"}, {"url": "example"}]
    r2 = create(c, answered(r1, result="Agents are programs that act. " * 10))
    content = r2.choices[0].message.content
    assert "web_search: Agents are programs that act." in content and "read_url:" in content
    assert len(content.splitlines()[1]) < 100  # cites only the start of each result


def test_synthesize_arguments_nested_enum_array():
    schema = {"type": "object", "required": ["mode", "tags", "opts", "n"], "properties": {
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "opts": {"type": "object", "required": ["flag"], "properties": {
            "flag": {"type": "boolean"}, "unused": {"type": "string"}}},
        "n": {"type": ["number", "null"]}, "optional": {"type": "string"}}}
    assert sim.synthesize_arguments(schema) == {
        "mode": "fast", "tags": [1], "opts": {"flag": True}, "n": 1.5}


def test_function_policy_and_usage_counts():
    from agentlab.tokens import count_messages_tokens, count_text_tokens
    s = Simulator(sim.Function(lambda messages, tools: f"{len(messages)} messages"))
    r = create(s.client())
    assert r.choices[0].message.content == "1 messages"
    assert r.usage.prompt_tokens == count_messages_tokens(USER, "gpt-4o", TOOLS)
    assert r.usage.completion_tokens == count_text_tokens("1 messages", "gpt-4o")
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_max_tokens_truncates_with_finish_reason_length():
    s = Simulator([text("one two three four five six seven eight nine ten")])
    r = create(s.client(), max_tokens=3)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3 and r.choices[0].message.content == "one two three"


def test_unknown_path_is_404_and_models_listed():
    c = Simulator().client()
    with pytest.raises(openai.NotFoundError):
        c.embeddings.create(model="text-embedding-3-small", input="x")
    assert "gpt-4o" in [m.id for m in c.models.list()]


# ------------------------------------------------------------------ strict mode

def bad_request(messages, tools=TOOLS) -> dict:
    with pytest.raises(openai.BadRequestError) as info:
        create(Simulator().client(), messages, tools)
    assert info.value.status_code == 400
    return info.value.body  # the SDK exposes the "error" object


def test_strict_orphan_tool_message():
    msgs = USER + [{"role": "tool", "tool_call_id": "call_x", "content": "r"}]
    assert bad_request(msgs) == {
        "message": "Invalid parameter: messages with role 'tool' must be a response to a "
                   "preceeding message with 'tool_calls'.",
        "type": "invalid_request_error", "param": "messages.[1].role", "code": None}


def test_strict_unanswered_tool_calls_lists_missing_ids():
    s = Simulator([[call("web_search", {"query": "a"}), call("read_url", {"url": "u"})]])
    r = create(s.client())
    msgs = answered(r)[:-1] + [{"role": "user", "content": "and?"}]  # drop the 2nd result
    err = bad_request(msgs)
    missing = r.choices[0].message.tool_calls[1].id
    assert err["message"] == (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        f"{missing}")
    assert (err["param"], err["type"]) == ("messages.[1].role", "invalid_request_error")


def test_strict_malformed_tool_schemas():
    def tool(**fn):
        return [{"type": "function", "function": fn}]
    assert bad_request(USER, tool(parameters={"type": "object"}))["param"] == \
        "tools[0].function.name"
    err = bad_request(USER, tool(name="f", parameters={"type": "string"}))
    assert err["code"] == "invalid_function_parameters" and "type: \"object\"" in err["message"]
    err = bad_request(USER, tool(name="has space"))
    assert err["code"] == "invalid_value" and "^[a-zA-Z0-9_-]+$" in err["message"]


def test_strict_unknown_role_and_empty_messages():
    err = bad_request([{"role": "robot", "content": "hi"}])
    assert (err["param"], err["code"]) == ("messages[0].role", "invalid_value")
    assert err["message"].startswith("Invalid value: 'robot'. Supported values are:")
    assert bad_request([])["code"] == "empty_array"


def test_check_request_without_http():
    sim.check_request({"model": "m", "messages": USER})  # valid: returns None
    with pytest.raises(sim.SimulatorHTTPError) as info:
        sim.check_request({"messages": USER})
    assert info.value.status == 400 and "model" in info.value.message
    with pytest.raises(sim.SimulatorHTTPError) as info:
        sim.check_request({"model": "m"})
    assert info.value.body["error"]["code"] == "missing_required_parameter"


def test_strict_off_accepts_orphans_and_logs_errors():
    msgs = USER + [{"role": "tool", "tool_call_id": "call_x", "content": "r"}]
    s = Simulator([text("fine")], strict=False)
    assert create(s.client(), msgs).choices[0].message.content == "fine"
    strict = Simulator()
    with pytest.raises(openai.BadRequestError):
        create(strict.client(), msgs)
    entry = strict.requests[0]
    assert entry["status"] == 400 and entry["response"] is None
    assert entry["error"]["param"] == "messages.[1].role"


def test_check_request_is_linear_in_messages():
    import time
    history = [{"role": "system", "content": "s"}]
    for i in range(20000):
        history += [{"role": "user", "content": "q"},
                    {"role": "assistant", "content": None, "tool_calls": [
                        {"id": f"c{i}", "type": "function",
                         "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": f"c{i}", "content": "r"}]
    t = time.perf_counter()
    sim.check_request({"model": "m", "messages": history})
    assert time.perf_counter() - t < 1.0  # 60k messages; a quadratic check takes minutes


# ------------------------------------------------------------------ streaming

def collect(stream) -> tuple[dict, list]:
    """Assemble a stream the way a careful client does; also return the raw chunks."""
    chunks = list(stream)
    content, calls, finish, usage = None, {}, None, None
    for ch in chunks:
        usage = ch.usage or usage
        for choice in ch.choices:
            d = choice.delta
            if d.content is not None:
                content = (content or "") + d.content
            for tc in d.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                if tc.function:
                    slot["name"] += tc.function.name or ""
                    slot["arguments"] += tc.function.arguments or ""
            finish = choice.finish_reason or finish
    return {"content": content, "calls": [calls[i] for i in sorted(calls)], "finish": finish,
            "usage": usage}, chunks


def flat(resp) -> dict:
    m = resp.choices[0].message
    return {"content": m.content, "finish": resp.choices[0].finish_reason,
            "calls": [{"id": t.id, "name": t.function.name, "arguments": t.function.arguments}
                      for t in m.tool_calls or []]}


PARALLEL = [[call("web_search", {"query": "agent runtimes", "max_results": 3}),
             call("read_url", {"url": "https://example.org/agents"})],
            text("Agents loop: think, call tools, read results. 智能体循环调用工具。")]


def test_stream_equals_non_stream_for_tool_calls_and_text():
    c = Simulator(PARALLEL).client()
    r1 = create(c)
    s1, _ = collect(create(c, stream=True, stream_options={"include_usage": True}))
    assert {k: s1[k] for k in ("content", "calls", "finish")} == flat(r1)
    assert s1["usage"] == r1.usage
    r2 = create(c, answered(r1))
    s2, chunks = collect(create(c, answered(r1), stream=True))
    assert {k: s2[k] for k in ("content", "calls", "finish")} == flat(r2)
    assert sum(1 for ch in chunks if ch.choices and ch.choices[0].delta.content) >= 5


def test_stream_usage_chunk_last_and_null_before():
    c = Simulator([text("hello there, streaming world")]).client()
    _, chunks = collect(create(c, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert all(ch.usage is None for ch in chunks[:-1])
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-2].choices[0].finish_reason == "stop"
    _, plain = collect(create(c, stream=True))
    assert all(ch.usage is None for ch in plain) and plain[-1].choices[0].finish_reason == "stop"


def test_stream_tool_fragments_follow_real_shape():
    c = Simulator(PARALLEL).client()
    _, chunks = collect(create(c, stream=True))
    frags = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or []]
    for index in (0, 1):
        mine = [f for f in frags if f.index == index]
        head, rest = mine[0], mine[1:]
        assert head.id.startswith("call_") and head.type == "function"
        assert head.function.name and head.function.arguments == ""
        assert len(rest) >= 3  # arguments arrive in several pieces
        assert all(f.id is None and f.type is None and f.function.name is None for f in rest)


def test_stream_wire_format():
    s = Simulator([text("hi")])
    reply = s.handle("POST", "/v1/chat/completions", json.dumps(
        {"model": "gpt-4o", "messages": USER, "stream": True}).encode())
    raw = b"".join(reply.iter_bytes())
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = raw.split(b"\n\n")
    assert events[-2:] == [b"data: [DONE]", b""]
    assert all(e.startswith(b"data: ") for e in events[:-1])


# ------------------------------------------------------------------ faults and latency

def test_fault_plan_429_500_then_success():
    s = Simulator([text("ok")], faults=sim.FaultPlan([429, 500, None]))
    c = s.client()  # max_retries=0: every attempt is ours
    with pytest.raises(openai.RateLimitError) as info:
        create(c)
    assert info.value.body["code"] == "rate_limit_exceeded" and info.value.body["type"] == "requests"
    with pytest.raises(openai.InternalServerError):
        create(c)
    assert create(c).choices[0].message.content == "ok"
    assert [(r["status"], r["fault"]) for r in s.requests] == [
        (429, "rate_limit"), (500, "server_error"), (200, None)]


def test_rate_limit_retry_after_header_and_named_entries():
    plan = sim.FaultPlan([("rate_limit", {"retry_after": 0.5}), "unavailable", 401])
    c = Simulator([text("ok")], faults=plan).client()
    with pytest.raises(openai.RateLimitError) as info:
        create(c)
    assert info.value.response.headers["retry-after"] == "0.5"
    with pytest.raises(openai.InternalServerError) as info:
        create(c)
    assert info.value.status_code == 503
    with pytest.raises(openai.AuthenticationError):
        create(c)
    with pytest.raises(ValueError):
        sim.FaultPlan(["no_such_fault"])


def test_timeout_fault_raises_api_timeout_error():
    s = Simulator([text("ok")], faults=["timeout"])
    with pytest.raises(openai.APITimeoutError):
        create(s.client())
    assert s.requests[0]["fault"] == "timeout" and s.requests[0]["status"] == 0
    assert create(s.client()).choices[0].message.content == "ok"


def test_malformed_arguments_in_both_modes():
    s = Simulator([call("web_search", {"query": "agents"})],
                  faults=["malformed_arguments", "malformed_arguments"])
    c = s.client()
    plain = create(c).choices[0].message.tool_calls[0].function.arguments
    streamed, _ = collect(create(c, stream=True))
    for args in (plain, streamed["calls"][0]["arguments"]):
        with pytest.raises(json.JSONDecodeError):
            json.loads(args)
    assert plain == streamed["calls"][0]["arguments"]


def test_truncated_stream_has_no_finish_and_no_done():
    s = Simulator([text("a fairly long answer that is streamed in many small pieces")],
                  faults=["truncated_stream"])
    reply = s.handle("POST", "/v1/chat/completions", json.dumps(
        {"model": "gpt-4o", "messages": USER, "stream": True}).encode())
    raw = b"".join(reply.iter_bytes())
    assert b"[DONE]" not in raw and b'"finish_reason":"stop"' not in raw
    s.reset()
    got, chunks = collect(create(s.client(), stream=True))
    assert got["finish"] is None and 1 < len(chunks)
    assert s.requests[0]["fault"] == "truncated_stream"


@pytest.mark.parametrize("n_calls", [1, 2, 3])
def test_a_truncated_tool_stream_stops_inside_arguments(n_calls):
    calls = [call("web_search", {"query": f"q{i} " * 8}) for i in range(n_calls)]
    s = Simulator([calls], faults=["truncated_stream"])
    got, _ = collect(create(s.client(), stream=True))
    cut = [c["arguments"] for c in got["calls"]][-1]
    assert got["finish"] is None and len(got["calls"]) == n_calls // 2 + 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut)  # never whole JSON: a client must not take it as complete


def test_random_faults_are_seeded():
    def statuses(seed):
        s = Simulator([text("ok")], faults=sim.Faults(rate_limit=0.3, server_error=0.2, seed=seed))
        c = s.client()
        for _ in range(30):
            try:
                create(c)
            except openai.APIStatusError:
                pass
        return [r["status"] for r in s.requests]
    a = statuses(1)
    assert a == statuses(1) and {200, 429, 500} == set(a)
    with pytest.raises(ValueError):
        sim.Faults(rate_limit=0.8, server_error=0.5)


def test_latency_first_token_and_time_scale():
    import time
    lat = sim.Latency(first_token_ms=100, tokens_per_second=1000, jitter=0.0)
    s = Simulator([text("hi")], latency=lat)
    t = time.perf_counter()
    create(s.client())
    assert 0.09 < time.perf_counter() - t < 2.0
    fast = Simulator([text("hi")], latency=sim.Latency(first_token_ms=5000, time_scale=0))
    t = time.perf_counter()
    create(fast.client())
    assert time.perf_counter() - t < 1.0


def test_streaming_latency_spaces_chunks():
    import time
    lat = sim.Latency(first_token_ms=0, tokens_per_second=100, jitter=0.0)
    c = Simulator([text("word " * 30)], latency=lat).client()
    arrivals = []
    t = time.perf_counter()
    for _ in create(c, stream=True):
        arrivals.append(time.perf_counter() - t)
    assert arrivals[-1] > 0.25  # ~30 tokens at 100 tokens/s
    assert arrivals[1] < arrivals[-1] / 2  # chunks arrive as they are made, not all at the end


def test_slow_reply_beyond_client_timeout_times_out():
    lat = sim.Latency(first_token_ms=3000, jitter=0.0)
    s = Simulator([text("hi")], latency=lat)
    with pytest.raises(openai.APITimeoutError):
        create(s.client(timeout=0.2))
    assert s.requests[0]["status"] == 0 and s.requests[0]["error"]["type"] == "timeout"


# ------------------------------------------------------------------ serve()

def test_serve_create_and_stream_with_plain_openai_client():
    s = Simulator(PARALLEL)
    with s.serve() as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with openai.OpenAI(base_url=url, api_key="x") as client:
            r1 = create(client)
            got, chunks = collect(create(client, stream=True,
                                         stream_options={"include_usage": True}))
            r2 = create(client, answered(r1))
    assert {k: got[k] for k in ("content", "calls", "finish")} == flat(r1)
    assert got["usage"] == r1.usage and len(chunks) > 5
    assert r2.choices[0].message.content.startswith("Agents loop")
    assert [r["stream"] for r in s.requests] == [False, True, False]


def test_serve_errors_and_timeout():
    s = Simulator([text("ok")], faults=[("rate_limit", {"retry_after": 2}), "timeout"])
    with s.serve() as url:
        with openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=0.5) as client:
            with pytest.raises(openai.RateLimitError) as info:
                create(client)
            assert info.value.response.headers["retry-after"] == "2"
            with pytest.raises(openai.APITimeoutError):
                create(client)
            assert create(client).choices[0].message.content == "ok"
            with pytest.raises(openai.BadRequestError):
                create(client, [])


def test_serve_streams_chunks_as_they_are_made():
    import time
    lat = sim.Latency(first_token_ms=0, tokens_per_second=100, jitter=0.0)
    s = Simulator([text("word " * 30)], latency=lat)
    with s.serve() as url, openai.OpenAI(base_url=url, api_key="x") as client:
        t = time.perf_counter()
        arrivals = [time.perf_counter() - t for _ in create(client, stream=True)]
    assert arrivals[-1] > 0.25 and arrivals[1] < arrivals[-1] / 2


# ------------------------------------------------------------------ determinism, API, misc

def run_conversation(seed: int) -> list:
    s = Simulator(seed=seed)  # ToolUser: calls, then text
    c = s.client()
    r1 = create(c)
    r2 = create(c, answered(r1))
    got, _ = collect(create(c, stream=True))
    return [r1.model_dump(), r2.model_dump(), got]


def test_same_seed_same_ids_and_replies():
    a, b = run_conversation(7), run_conversation(7)
    assert a == b
    other = run_conversation(8)
    assert other[0]["id"] != a[0]["id"]
    assert other[0]["choices"][0]["message"]["tool_calls"][0]["id"] != \
        a[0]["choices"][0]["message"]["tool_calls"][0]["id"]


def test_import_is_light():
    code = ("import sys, threading, agentlab.sim as s; "
            "heavy = [m for m in ('tiktoken', 'openai', 'httpx2') if m in sys.modules]; "
            "print(heavy, threading.active_count(), len(s.__all__))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[:2] == ["[]", "1"]


def test_public_names_resolve():
    for name in sim.__all__:
        if name != "Researcher":
            assert getattr(sim, name) is not None
    with pytest.raises(AttributeError):
        sim.NoSuchThing  # noqa: B018


def test_researcher_is_exported_lazily():
    pytest.importorskip("agentlab.sim.researcher")
    assert isinstance(sim.Researcher(), sim.Policy)


def test_llm_shortcut_uses_the_simulator():
    pytest.importorskip("agentlab.llm")
    s = Simulator([text("hello")])
    resp = s.llm().chat(USER)
    assert resp.content == "hello" and resp.usage["total_tokens"] > 0
    assert len(s.requests) == 1 and s.requests[0]["body"]["model"] == "gpt-4o"


def test_concurrent_requests_are_all_logged():
    from concurrent.futures import ThreadPoolExecutor
    s = Simulator(faults=sim.FaultPlan([500] * 10))
    c = s.client()

    def one(_):
        try:
            return create(c).choices[0].finish_reason
        except openai.InternalServerError:
            return 500
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(one, range(40)))
    assert got.count(500) == 10 and got.count("tool_calls") == 30
    assert len(s.requests) == 40 and sum(r["fault"] == "server_error" for r in s.requests) == 10


def test_policy_error_is_a_500_naming_the_bug():
    def broken(messages, tools):
        raise KeyError("oops")
    s = Simulator(broken)
    with pytest.raises(openai.InternalServerError) as info:
        create(s.client())
    assert "KeyError" in info.value.body["message"]
    assert s.requests[0]["error"]["type"] == "server_error"


def test_tool_choice_none_hides_tools_and_bad_json_is_400():
    c = Simulator().client()
    r = create(c, tool_choice="none")
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].message.content.startswith("Simulated answer to: Find out")
    s = Simulator()
    reply = s.handle("POST", "/v1/chat/completions", b"{not json")
    assert reply.status == 400 and b"could not parse the JSON body" in reply.body


def test_reset_clears_log_and_rewinds_plan():
    s = Simulator([text("ok")], faults=[429])
    c = s.client()
    with pytest.raises(openai.RateLimitError):
        create(c)
    create(c)
    s.reset()
    assert s.requests == []
    with pytest.raises(openai.RateLimitError):
        create(c)


# ------------------------------------------------------------------ what the real API rejects (issue 11)

def raw_post(s, body) -> tuple[int, dict]:
    reply = s.handle("POST", "/v1/chat/completions", json.dumps(body).encode())
    return reply.status, json.loads(reply.body)


def test_strict_unknown_model_is_a_404_unless_registered():
    from agentlab.models import register_model, unregister_model
    s = Simulator([text("ok")])
    status, body = raw_post(s, {"model": "gpt-4o-but-not-really", "messages": USER})
    assert (status, body) == (404, {"error": {
        "message": "The model `gpt-4o-but-not-really` does not exist or you do not have access to it.",
        "type": "invalid_request_error", "param": None, "code": "model_not_found"}})
    register_model("my-local-llama", context_window=8192, max_output_tokens=2048)
    try:
        assert raw_post(s, {"model": "my-local-llama", "messages": USER})[0] == 200
    finally:
        unregister_model("my-local-llama")
    assert raw_post(Simulator([text("ok")], strict=False),
                    {"model": "anything", "messages": USER})[0] == 200


@pytest.mark.parametrize("field,value,param,code,message", [
    ("model", 42, "model", "invalid_type",
     "Invalid type for 'model': expected a string, but got an integer instead."),
    ("content", 5, "messages[0].content", "invalid_type",
     "Invalid type for 'messages[0].content': expected one of a string or array of objects, but got an integer instead."),
    ("temperature", "hot", "temperature", "invalid_type",
     "Invalid type for 'temperature': expected a decimal, but got a string instead."),
    ("temperature", 5, "temperature", "decimal_above_max_value",
     "Invalid 'temperature': decimal above maximum value. Expected a value <= 2, but got 5 instead."),
    ("stream", "yes", "stream", "invalid_type",
     "Invalid type for 'stream': expected a boolean, but got a string instead."),
    ("max_tokens", -1, "max_tokens", "integer_below_min_value",
     "Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got -1 instead."),
    ("max_tokens", 20000, "max_tokens", "invalid_value",
     "max_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided 20000."),
])
def test_strict_rejects_bad_parameters_like_the_real_api(field, value, param, code, message):
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    if field == "content":
        body["messages"][0]["content"] = value
    else:
        body[field] = value
    status, err = raw_post(Simulator([text("ok")]), body)
    assert (status, err["error"]) == (400, {"message": message, "type": "invalid_request_error",
                                            "param": param, "code": code})


def test_strict_context_length_exceeded_with_the_real_message():
    from agentlab.tokens import count_messages_tokens
    big = [{"role": "user", "content": "word " * 130_000}]
    s = Simulator([text("ok")])
    status, err = raw_post(s, {"model": "gpt-4o", "messages": big})
    n = count_messages_tokens(big, "gpt-4o")
    assert status == 400 and n > 128_000
    assert err["error"] == {"message": f"This model's maximum context length is 128000 tokens. However, "
                                       f"your messages resulted in {n} tokens. Please reduce the length "
                                       "of the messages.", "type": "invalid_request_error",
                            "param": "messages", "code": "context_length_exceeded"}
    fits = [{"role": "user", "content": "word " * 120_000}]
    m = count_messages_tokens(fits, "gpt-4o")
    status, err = raw_post(s, {"model": "gpt-4o", "messages": fits, "max_tokens": 16000})
    assert status == 400 and err["error"]["message"] == (
        f"This model's maximum context length is 128000 tokens. However, you requested {m + 16000} "
        f"tokens ({m} in the messages, 16000 in the completion). Please reduce the length of the "
        "messages or completion.")
    assert raw_post(s, {"model": "gpt-4.1", "messages": big})[0] == 200  # a 1M-token window


def test_refuse_and_filtered_items_have_the_real_wire_shape():
    said = "I'm sorry, I can't help with that."
    s = Simulator([sim.refuse(said), sim.refuse(said)])
    r = create(s.client(), USER, tools=TOOLS)
    msg = r.choices[0].message
    assert (msg.content, msg.refusal, r.choices[0].finish_reason) == (None, said, "stop")
    got, chunks = collect(create(s.client(), USER, tools=TOOLS, stream=True))
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert refusal == said and got["content"] is None and got["finish"] == "stop"
    f = Simulator([sim.filtered("Here is how")])
    r = create(f.client())
    assert (r.choices[0].finish_reason, r.choices[0].message.content) == ("content_filter", "Here is how")


def test_max_tokens_cuts_tool_calls_with_finish_reason_length():
    s = Simulator([[call("web_search", {"query": "a long query " * 20}), call("read_url", {"url": "x"})]])
    r = create(s.client(), max_tokens=12)
    calls = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "length" and len(calls) == 1
    with pytest.raises(json.JSONDecodeError):
        json.loads(calls[0].function.arguments)
    assert r.usage.completion_tokens == 12


@pytest.mark.parametrize("stream", [False, True])
def test_error_in_body_fault_is_a_200_carrying_an_error_object(stream):
    """What OpenRouter documents for an error after the model started (issue 21): HTTP 200 with
    ``{"error": {"code": 502, ...}}``; the client retries it and names the server's message."""
    s = Simulator([text("ok")], faults=sim.FaultPlan(["error_in_body", ("error_in_body", {
        "message": "Upstream idle timeout"}), None]))
    from agentlab.errors import ProviderError
    from agentlab.llm import collect_stream
    msgs = [{"role": "user", "content": "hi"}]
    llm = s.llm(max_retries=1, retry_base_delay=0.001)
    with pytest.raises(ProviderError) as info:
        collect_stream(llm.stream(msgs)) if stream else llm.chat(msgs)
    assert (info.value.code, info.value.retryable, info.value.details["status"]) == (
        "provider_unavailable", True, None if stream else 200)
    assert "Upstream idle timeout" in info.value.message
    assert [(r["status"], r["fault"]) for r in s.requests] == [(200, "error_in_body")] * 2
    got = collect_stream(llm.stream(msgs)) if stream else llm.chat(msgs)
    assert got.content == "ok"

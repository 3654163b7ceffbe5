"""Whole runs against what real providers send (issue 11): refusals, cut-short tool calls,
streams without a finish reason, empty answers, tool calls without ids.

The client (``agentlab.llm``) keeps what the provider said; the runtime decides what a run
does with it (``agentlab/runtime/turn.py``: ``_stop_if_refused``, ``CUT_SHORT``).
"""
from __future__ import annotations

import json

import httpx2
import openai
import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.llm import LLMClient
from agentlab.runtime import AgentRuntime, RunState
from agentlab.tools import ToolRegistry

def counting_registry():
    reg, ran = ToolRegistry(), []

    @reg.tool()
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: what to look up.
        """
        ran.append(key)
        return f"value of {key}"
    return reg, ran


def wire_llm(*replies) -> tuple[LLMClient, list]:
    """An LLMClient on a scripted endpoint: one reply per request (dict: JSON, bytes: SSE)."""
    sent: list = []

    def handler(request):
        sent.append(json.loads(request.content))
        reply = replies[min(len(sent), len(replies)) - 1]
        if isinstance(reply, bytes):
            return httpx2.Response(200, headers={"content-type": "text/event-stream"},
                                   content=reply)
        return httpx2.Response(200, json=reply)
    sdk = openai.OpenAI(api_key="k", base_url="http://provider.test/v1",
                        http_client=httpx2.Client(transport=httpx2.MockTransport(handler)))
    return LLMClient(client=sdk, retry_base_delay=0.001, max_retries=1, seed=0), sent


def completion(message: dict, finish="stop") -> dict:
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "gpt-4o",
            "choices": [{"index": 0, "message": {"role": "assistant", **message},
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}


def no_id_call(key: str) -> dict:
    return completion({"content": None, "tool_calls": [
        {"id": "", "type": "function", "function": {"name": "lookup",
                                                    "arguments": json.dumps({"key": key})}}]},
        "tool_calls")


# -- what already holds with the client changes -----------------------------------------------

def test_tool_calls_without_ids_each_run_once_per_turn_with_checkpoints(tmp_path):
    reg, ran = counting_registry()
    llm, _ = wire_llm(no_id_call("a"), no_id_call("b"), completion({"content": "done"}))
    rt = AgentRuntime(llm, reg, checkpoints=CheckpointManager(str(tmp_path)))
    r = rt.run("look both up")
    assert r.state is RunState.FINISHED and ran == ["a", "b"]  # turn 2 was not replayed
    results = [m["content"] for m in rt.messages.get_messages() if m["role"] == "tool"]
    assert results == ["value of a", "value of b"]


def test_a_stream_without_finish_reason_is_one_request_per_turn():
    reg, ran = counting_registry()
    call = (b'data: {"id":"x","object":"chat.completion.chunk","created":0,"model":"m","choices":'
            b'[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a",'
            b'"type":"function","function":{"name":"lookup","arguments":"{\\"key\\": \\"a\\"}"}}]}}]}'
            b'\n\ndata: [DONE]\n\n')
    text = (b'data: {"id":"y","object":"chat.completion.chunk","created":0,"model":"m","choices":'
            b'[{"index":0,"delta":{"role":"assistant","content":"done"}}]}\n\ndata: [DONE]\n\n')
    llm, sent = wire_llm(call, text)
    events = list(AgentRuntime(llm, reg).run_stream("go"))
    assert events[-1]["state"] == "finished" and events[-1]["content"] == "done"
    assert len(sent) == 2 and ran == ["a"]


def test_no_choices_ends_the_run_in_error_not_as_an_empty_success():
    reg, _ = counting_registry()
    empty = {**completion({"content": "x"}), "choices": []}
    llm, sent = wire_llm(empty)
    r = AgentRuntime(llm, reg).run("go")
    assert r.state is RunState.ERROR and r.errors[-1]["code"] == "empty_response"
    assert len(sent) == 2  # retried once (max_retries=1), as a 5xx would be


# -- what the runtime does with it ---------------------------------------------------------

REFUSAL = "I'm sorry, I can't help with that."


def unless_bad(bad_reply):
    """A model that answers ``bad_reply`` to a task containing "bad", else "fine"."""
    def respond(messages, tools):
        last = [m for m in messages if m["role"] == "user"][-1]["content"]
        return bad_reply if "bad" in last else sim.text("fine")
    return sim.Function(respond)


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_ends_the_run_as_error_refused_with_the_refusal_text(stream):
    reg, ran = counting_registry()
    s = sim.Simulator(unless_bad(sim.refuse(REFUSAL)))
    rt = AgentRuntime(s.llm(), reg)
    if stream:
        events = list(rt.run_stream("do something bad"))
        r = events[-1]["result"]
        assert [e["refusal"] for e in events if e["type"] == "refusal"] == [REFUSAL]
    else:
        r = rt.run("do something bad")
    assert (r.state, r.content) == (RunState.ERROR, REFUSAL)
    assert r.errors[-1]["code"] == "refused" and r.errors[-1]["details"]["refusal"] == REFUSAL
    assert rt.run("something else").state is RunState.FINISHED  # the history stayed valid
    assert ran == []


def test_length_with_tool_calls_runs_none_of_them_and_ends_exhausted():
    reg, ran = counting_registry()
    calls = [sim.call("lookup", {"key": "a long key " * 30}), sim.call("lookup", {"key": "b"})]
    s = sim.Simulator([sim.call("lookup", {"key": "first"}), calls, sim.text("ok")] * 2)
    rt = AgentRuntime(s.llm(), reg)
    chat = rt.llm.chat
    rt.llm.chat = lambda *a, **k: chat(*a, max_tokens=12, **k)
    r = rt.run("go")
    assert s.requests[1]["response"]["choices"][0]["finish_reason"] == "length"
    assert (r.state, r.stopped_reason) == (RunState.EXHAUSTED, "length")
    assert r.errors[-1]["code"] == "output_truncated" and ran == ["first"]
    assert [c["name"] for c in r.tool_calls_made] == ["lookup"]  # what was done so far
    rt.llm.chat = chat
    assert rt.run("try again").state is RunState.FINISHED  # history valid for the strict sim


def test_content_filter_with_tool_calls_runs_none_of_them():
    reg, ran = counting_registry()
    s = sim.Simulator(unless_bad(sim.filtered(sim.call("lookup", {"key": "x"}))))
    rt = AgentRuntime(s.llm(), reg)
    r = rt.run("something bad")
    assert (r.state, r.stopped_reason) == (RunState.ERROR, "content_filter") and ran == []
    assert rt.run("again").state is RunState.FINISHED

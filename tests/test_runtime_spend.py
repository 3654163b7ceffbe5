"""Issue 21: what a run spends and what it keys, whatever the server sends -- idempotency keys
unique across runs, malformed repeats caught by the loop guard, a cost cap that holds without
reported usage. A stub LLM plays servers that number calls ``call_0`` and omit usage."""
from __future__ import annotations

import pytest

from agentlab.llm.responses import LLMResponse, ToolCall, parse_arguments
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.tools import ToolRegistry


class StubLLM:
    """A server that answers from a list (the last reply repeats) and may omit usage."""

    def __init__(self, replies, model="gpt-4o-mini", usage=None):
        self.replies, self.model, self.usage, self.requests = list(replies), model, usage, []

    def chat(self, messages, tools=None, temperature=None, timeout=None):
        self.requests.append(messages)
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, str):
            return LLMResponse(content=reply, usage=dict(self.usage or {}), finish_reason="stop")
        calls = [ToolCall(cid, name, *parse_arguments(raw)[:1], raw, parse_arguments(raw)[1])
                 for cid, name, raw in reply]
        return LLMResponse(content=None, tool_calls=calls, usage=dict(self.usage or {}),
                           finish_reason="tool_calls")


def side_effect_registry(seen: list) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool(side_effects=True)
    def send(to: str, idempotency_key: str = "") -> str:
        """Send a message.

        Args:
            to: the recipient.
        """
        seen.append(idempotency_key)
        return f"sent to {to}"
    return reg


def test_idempotency_keys_differ_across_runs_when_the_server_reuses_call_ids():
    seen: list = []
    reg = side_effect_registry(seen)
    for _ in range(2):  # a server numbering its calls call_0, call_1 in every conversation
        llm = StubLLM([[("call_0", "send", '{"to": "bob"}')], "done"])
        assert AgentRuntime(llm, reg).run("send it").state is RunState.FINISHED
    assert len(seen) == 2 and seen[0] != seen[1] and all(k.endswith("call_0") for k in seen)


def test_a_model_repeating_the_same_malformed_call_is_caught_by_the_loop_guard():
    seen: list = []
    bad = [[(f"call_{i}", "send", '{"to": bob}')] for i in range(20)]  # not JSON, new ids
    llm = StubLLM([*bad, "done"], usage={"prompt_tokens": 10, "completion_tokens": 5,
                                         "total_tokens": 15})
    r = AgentRuntime(llm, side_effect_registry(seen), config=RuntimeConfig(max_turns=20)).run("go")
    assert (r.state, r.stopped_reason, r.turns) == (RunState.ERROR, "loop_detected", 3)
    assert seen == []  # none of them ran


def test_different_malformed_calls_are_not_a_loop():
    bad = [[(f"call_{i}", "send", '{"to": bob' + "!" * i + "}")] for i in range(3)]
    r = AgentRuntime(StubLLM([*bad, "done"]), side_effect_registry([])).run("go")
    assert (r.state, r.turns) == (RunState.FINISHED, 4)


class UnmeteredSearch(StubLLM):
    """A provider that never reports usage but bills every request like the simulator does:
    the prompt as sent (messages and tool schemas) plus each reply's tokens."""

    def __init__(self):
        super().__init__([], model="gpt-4o-mini")
        self.bill = {"prompt_tokens": 0, "completion_tokens": 0}

    def chat(self, messages, tools=None, temperature=None, timeout=None):
        from agentlab.tokens import count_messages_tokens, count_text_tokens
        n = len(self.requests)
        self.requests.append(messages)
        raw = '{"to": "reader %d, %s"}' % (n, "please read this carefully " * 20)
        self.bill["prompt_tokens"] += count_messages_tokens(messages, self.model, tools)
        self.bill["completion_tokens"] += (count_text_tokens("send", self.model)
                                           + count_text_tokens(raw, self.model))
        return LLMResponse(content=None, tool_calls=[ToolCall(f"call_{n}", "send",
                                                              parse_arguments(raw)[0], raw)],
                           usage={}, finish_reason="tool_calls")

    def billed_usd(self):
        from agentlab.models import cost_usd
        return cost_usd(self.model, self.bill["prompt_tokens"], self.bill["completion_tokens"])


def test_the_cost_cap_holds_with_a_provider_that_never_reports_usage():
    """Issue 21: $0.02 on gpt-4o-mini without usage ran all 60 turns and billed $0.0429."""
    llm = UnmeteredSearch()
    llm.max_tokens = 200  # the client's output cap: the worst case of one reply
    rt = AgentRuntime(llm, side_effect_registry([]),
                      config=RuntimeConfig(max_turns=60, max_cost_usd=0.02))
    r = rt.run("send a long letter to many readers")
    assert r.state is RunState.EXHAUSTED and r.stopped_reason.startswith("cost_budget"), r.errors
    assert 5 < len(llm.requests) < 60 and llm.billed_usd() <= 0.02
    assert r.cost_usd == pytest.approx(llm.billed_usd(), rel=1e-9)  # charged what was billed
    assert r.usage["prompt_tokens"] == llm.bill["prompt_tokens"]


def test_a_cancelled_model_call_is_charged_for_the_prompt_it_sent():
    import threading
    from agentlab.tokens import count_messages_tokens
    sent = {}

    class Slow(StubLLM):
        def chat(self, messages, tools=None, temperature=None, timeout=None):
            sent["prompt"] = count_messages_tokens(messages, self.model, tools)
            threading.Timer(0.05, rt.cancel).start()
            threading.Event().wait(2.0)
            return LLMResponse(content="too late", usage={}, finish_reason="stop")
    rt = AgentRuntime(Slow(["x"]), side_effect_registry([]))
    r = rt.run("hello")
    assert r.state is RunState.CANCELLED
    assert r.usage["prompt_tokens"] == sent["prompt"] > 0 and r.usage["completion_tokens"] == 0
    assert r.cost_usd > 0

"""run_stream(): the same loop as run(), yielding events as they happen."""
from __future__ import annotations

import json
import threading

from agentlab import sim
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.tools import ToolRegistry


def registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str, limit: int = 1) -> str:
        """Look a key up.

        Args:
            key: what to look up.
            limit: how many results.
        """
        return json.dumps({"key": key, "limit": limit})
    return reg


def stream(policy, config=None, **sim_kw):
    s = sim.Simulator(policy, **sim_kw)
    rt = AgentRuntime(s.llm(retry_base_delay=0.001), registry(), config=config)
    return rt, s


def test_events_text_deltas_and_done():
    answer = "The key has a value and this sentence streams in several deltas."
    rt, s = stream([sim.call("lookup", {"key": "a", "limit": 3}), sim.text(answer)])
    events = list(rt.run_stream("go"))
    kinds = [e["type"] for e in events]
    assert kinds[:4] == ["turn_start", "tool_start", "tool_end", "turn_end"]
    assert kinds[-2:] == ["turn_end", "done"] and kinds.count("text") > 1
    assert "".join(e["content"] for e in events if e["type"] == "text") == answer
    done = events[-1]["result"]
    assert (done.state, done.content, done.turns) == (RunState.FINISHED, answer, 2)
    assert all(r["body"].get("stream") for r in s.requests)


def test_fragmented_tool_arguments_are_assembled():
    rt, _ = stream([sim.call("lookup", {"key": "a long key " * 5, "limit": 7}), sim.text("ok")])
    events = list(rt.run_stream("go"))
    start = next(e for e in events if e["type"] == "tool_start")
    end = next(e for e in events if e["type"] == "tool_end")
    assert start["arguments"] == {"key": "a long key " * 5, "limit": 7}
    assert end["ok"] and json.loads(end["result"])["limit"] == 7


def test_usage_is_counted_in_streaming_mode():
    rt, s = stream([sim.call("lookup", {"key": "a"}), sim.text("fine")])
    result = list(rt.run_stream("go"))[-1]["result"]
    assert result.total_tokens > 0 and result.usage["prompt_tokens"] > 0


def test_limits_and_loops_match_run():
    loop = sim.Function(lambda m, t: sim.call("lookup", {"key": "same"}))
    rt, _ = stream(loop)
    assert list(rt.run_stream("go"))[-1]["stopped_reason"] == "loop_detected"
    rt, _ = stream([sim.call("lookup", {"key": str(i)}) for i in range(9)],
                   RuntimeConfig(max_turns=2))
    events = list(rt.run_stream("go"))
    assert events[-1]["state"] == "exhausted" and events[-1]["stopped_reason"] == "max_turns (2)"
    assert [e["code"] for e in events if e["type"] == "error"] == ["max_turns"]


def test_persistently_truncated_stream_ends_in_error_event():
    rt, _ = stream(["hello there"], faults=sim.Faults(truncated_stream=1.0))
    events = list(rt.run_stream("go"))
    assert events[-1]["state"] == "error"
    assert any(e["type"] == "error" for e in events)


def test_cancel_between_chunks():
    rt, _ = stream(["word " * 200], latency=sim.Latency(first_token_ms=1, tokens_per_second=2000))
    seen = []
    for ev in rt.run_stream("go"):
        seen.append(ev["type"])
        if ev["type"] == "text" and seen.count("text") == 3:
            threading.Thread(target=rt.cancel).start()
    assert seen[-1] == "done" and rt.last_result.state is RunState.CANCELLED
    assert seen.count("text") < 100

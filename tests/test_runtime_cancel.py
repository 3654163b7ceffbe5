"""cancel() as the chapter's contract (issue #13): a cancel sent any time before the run ends is
honoured, model calls and tool batches are interrupted at once, breaking out of run_stream()
ends the run CANCELLED with a result, and the history left behind is valid for the next run."""
from __future__ import annotations

import asyncio
import importlib.util
import threading
import time
from pathlib import Path

import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.sim.strict import check_request
from agentlab.tools import ToolRegistry

SLOW_S = 3.0


def registry(state: dict | None = None) -> ToolRegistry:
    reg = ToolRegistry()
    state = state if state is not None else {}

    @reg.tool()
    def slow(key: str) -> str:
        """A slow sync lookup.

        Args:
            key: what to look up.
        """
        threading.Event().wait(SLOW_S)
        return f"slow {key}"

    @reg.tool()
    async def aslow(key: str) -> str:
        """A slow async lookup.

        Args:
            key: what to look up.
        """
        try:
            await asyncio.sleep(SLOW_S)
        except asyncio.CancelledError:
            state["async_cancelled"] = True
            raise
        return f"aslow {key}"

    @reg.tool()
    def fast(key: str) -> str:
        """A fast lookup.

        Args:
            key: what to look up.
        """
        return f"fast {key}"
    return reg


def tools_then_text(*calls):
    """First turn: ``calls`` in parallel; once tool results are in: a text answer."""
    return sim.Function(lambda m, t: sim.text("done") if m[-1]["role"] == "tool"
                        else [sim.call(name, {"key": k}) for name, k in calls])


def runtime(policy, *, first_token_ms: float = 0.0, config=None, reg=None, **kw):
    latency = sim.Latency(first_token_ms=first_token_ms, tokens_per_second=0, jitter=0) \
        if first_token_ms else None
    s = sim.Simulator(policy, latency=latency)
    rt = AgentRuntime(s.llm(retry_base_delay=0.001, timeout=30.0), reg or registry(),
                      config=config or RuntimeConfig(tool_timeout=30.0), **kw)
    return rt, s


def assert_valid_for_a_follow_up(rt: AgentRuntime) -> list[str]:
    """The real API's rules hold, no task is left unanswered, and a follow-up run works;
    returns the user messages the follow-up sent."""
    msgs = rt.messages.get_messages()
    check_request({"model": "gpt-4o", "messages": [*msgs, {"role": "user", "content": "next"}]})
    assert msgs[-1]["role"] != "user", msgs[-1]
    s = sim.Simulator(["fine"], strict=True)
    rt.llm = s.llm()
    assert rt.run("next task").state is RunState.FINISHED
    sent = s.requests[0]["body"]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"][-1] == "next task"
    return [m["content"] for m in sent if m["role"] == "user"]


def run_cancelled_after(rt: AgentRuntime, delay_s: float):
    """Run with a cancel ``delay_s`` in; the run must end CANCELLED within 0.5 s of it."""
    threading.Timer(delay_s, rt.cancel).start()
    t0 = time.monotonic()
    r = rt.run("task")
    assert time.monotonic() - t0 < 0.5 + delay_s
    assert r.state is RunState.CANCELLED
    return r


def test_cancel_before_run_is_honoured_and_leaves_no_trace():
    rt, s = runtime(["never"])
    rt.cancel()
    r = rt.run("task A")
    assert (r.state, r.stopped_reason, r.turns) == (RunState.CANCELLED, "cancelled", 0)
    assert s.requests == [] and rt.last_result is r
    assert [m["role"] for m in rt.messages.get_messages()] == ["system"]
    assert assert_valid_for_a_follow_up(rt) == ["next task"]  # the cancel was spent


def test_cancel_as_the_run_starts_is_never_lost():
    rt, _ = runtime(sim.Function(lambda m, t: sim.text("answer")), first_token_ms=100)
    states = []
    for _ in range(20):
        go = threading.Barrier(2)
        threading.Thread(target=lambda: (go.wait(), rt.cancel())).start()
        go.wait()
        states.append(rt.run("task").state)
    assert states == [RunState.CANCELLED] * 20


def test_cancel_during_a_slow_model_call_returns_at_once():
    rt, _ = runtime(["never seen"], first_token_ms=SLOW_S * 1000)
    threading.Timer(0.2, rt.cancel).start()
    t0 = time.monotonic()
    r = rt.run("task")
    assert time.monotonic() - t0 < 0.5 + 0.2
    assert (r.state, r.turns, r.content) == (RunState.CANCELLED, 1, "")
    assert_valid_for_a_follow_up(rt)


def test_cancel_during_a_slow_streamed_call_returns_at_once():
    rt, _ = runtime(["never seen"], first_token_ms=SLOW_S * 1000)
    threading.Timer(0.2, rt.cancel).start()
    t0 = time.monotonic()
    events = list(rt.run_stream("task"))
    assert time.monotonic() - t0 < 0.5 + 0.2
    assert events[-1]["state"] == "cancelled" and not any(e["type"] == "text" for e in events)


def test_cancel_during_a_parallel_batch_interrupts_both_tools():
    state: dict = {}
    rt, _ = runtime(tools_then_text(("slow", "a"), ("aslow", "b")), reg=registry(state))
    r = run_cancelled_after(rt, 0.3)
    assert [(c["name"], c["error_code"]) for c in r.tool_calls_made] == [
        ("slow", "cancelled"), ("aslow", "cancelled")]
    tool_msgs = [m for m in rt.messages.get_messages() if m["role"] == "tool"]
    assert len(tool_msgs) == 2 and all("cancelled" in m["content"] for m in tool_msgs)
    time.sleep(0.1)
    assert state.get("async_cancelled") and rt.executor.running_tasks == 0
    assert "slow" in [n for n, _ in rt.executor.abandoned_calls]  # a thread cannot be killed
    assert_valid_for_a_follow_up(rt)


def test_cancel_during_a_serial_tool_and_through_a_wrapped_executor(only_execute):
    for wrap in (False, True):
        rt, _ = runtime(tools_then_text(("slow", "a"), ("fast", "b")),
                        config=RuntimeConfig(parallel_tool_calls=False, tool_timeout=30.0))
        if wrap:
            rt.executor = only_execute(rt.executor)  # knows nothing of cancel=
        threading.Timer(0.2, rt.cancel).start()
        t0 = time.monotonic()
        r = rt.run("task")
        assert time.monotonic() - t0 < 0.5 + 0.2 and r.state is RunState.CANCELLED
        assert [c["error_code"] for c in r.tool_calls_made] == ["cancelled", "not_executed"]
        assert_valid_for_a_follow_up(rt)


def test_breaking_out_of_run_stream_ends_the_run_cancelled(tmp_path):
    cm = CheckpointManager(tmp_path)
    rt, _ = runtime(["word " * 50], checkpoints=cm)
    ended = []
    rt.on("run_end", lambda e: ended.append(e["result"]))
    for event in rt.run_stream("task"):
        if event["type"] == "text":
            break  # the generator is closed here
    r = rt.last_result
    assert r is not None and (r.state, r.stopped_reason) == (RunState.CANCELLED, "cancelled")
    assert ended == [r] and rt.run_state is RunState.CANCELLED
    final = cm.list_checkpoints(r.run_id)[-1]
    assert final["saved_due_to"] == "cancelled"  # the final checkpoint, resumable with its task
    assert cm.load(final["id"]).messages[-1] == {"role": "user", "content": "task"}
    assert assert_valid_for_a_follow_up(rt) == ["next task"]  # the next run sees one task


def test_the_model_stream_is_closed_when_the_run_stops():
    rt, _ = runtime(["word " * 200])
    closed, real_stream = threading.Event(), rt.llm.stream

    def stream(*args, **kwargs):  # the client's stream, noting when it is closed
        try:
            yield from real_stream(*args, **kwargs)
        finally:
            closed.set()
    rt.llm.stream = stream
    for event in rt.run_stream("task"):
        if event["type"] == "text":
            break
    assert closed.wait(1.0) and rt.last_result.state is RunState.CANCELLED


@pytest.mark.parametrize("stop_at", ["tool_start", "tool_end", "turn_end"])
def test_breaking_out_at_a_tool_event_answers_every_call(stop_at):
    rt, _ = runtime(tools_then_text(("fast", "a"), ("fast", "b")))
    stream = rt.run_stream("task")
    for event in stream:
        if event["type"] == stop_at:
            stream.close()
            break
    assert rt.last_result.state is RunState.CANCELLED
    assert len(rt.last_result.tool_calls_made) == 2
    assert_valid_for_a_follow_up(rt)


def test_a_cancel_after_the_last_model_call_is_spent_with_its_run():
    rt, _ = runtime(sim.Function(lambda m, t: sim.text("answer")))
    sent = []
    rt.on("llm_end", lambda e: sent or (sent.append(1), rt.cancel()))
    assert rt.run("first").state is RunState.FINISHED  # too late for this run...
    assert rt.run("second").state is RunState.FINISHED  # ...and not carried into the next


def test_the_cancel_soak_gives_its_verdict(capsys):
    spec = importlib.util.spec_from_file_location(
        "cancel_soak", Path(__file__).resolve().parents[1] / "benchmarks" / "cancel_soak.py")
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    assert soak.main(["--runs", "4", "--time-scale", "0.2"]) == 0
    assert capsys.readouterr().out.rstrip().endswith("0 invalid histories")


def test_a_checkpointed_run_cancels_its_batch_through_the_durable_executor(tmp_path):
    """The durable wrapper passes the cancel on: the async tool is really cancelled (not left
    running on its loop), and the fast call that completed is in the durable log at once."""
    state: dict = {}
    cm = CheckpointManager(tmp_path / "ck")
    rt, _ = runtime(tools_then_text(("fast", "x"), ("aslow", "b")), reg=registry(state),
                    checkpoints=cm)
    r = run_cancelled_after(rt, 0.3)
    assert [(c["name"], c["error_code"]) for c in r.tool_calls_made] == [
        ("fast", None), ("aslow", "cancelled")]
    time.sleep(0.1)
    assert state.get("async_cancelled") and rt.executor.running_tasks == 0
    logged = {rec["name"]: rec["success"] for rec in cm.completed_tool_calls(r.run_id).values()}
    assert logged.get("fast") is True

"""AgentRuntime: terminal states, budgets inside a turn, loop guard, hooks, cancel, errors."""
from __future__ import annotations

import itertools
import threading
import time

import pytest

from agentlab import sim
from agentlab.errors import CheckpointError, ConfigError
from agentlab.executor import ToolExecutor
from agentlab.runtime.loop_guard import LoopDetector
from agentlab.messages import MessageManager
from agentlab.runtime import AgentRuntime, RunContext, RunState, RuntimeConfig
from agentlab.tools import ToolRegistry


def registry(delay: float = 0.0) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: what to look up.
        """
        time.sleep(delay)
        return f"value of {key}"

    @reg.tool()
    def other(key: str) -> str:
        """Another lookup.

        Args:
            key: what to look up.
        """
        return f"other {key}"
    return reg


def runtime(policy, config=None, reg=None, **llm_kw) -> tuple[AgentRuntime, sim.Simulator]:
    s = sim.Simulator(policy)
    llm_kw.setdefault("retry_base_delay", 0.001)
    return AgentRuntime(s.llm(**llm_kw), reg or registry(), config=config), s


def statuses(s: sim.Simulator) -> list:
    return [r["status"] for r in s.requests]


def test_tool_call_then_answer_finishes():
    rt, s = runtime([sim.call("lookup", {"key": "a"}), sim.text("a is known")])
    r = rt.run("what is a?")
    assert (r.state, r.stopped_reason, r.content, r.turns) == (RunState.FINISHED, "completed", "a is known", 2)
    assert [t["name"] for t in r.tool_calls_made] == ["lookup"] and r.tool_calls_made[0]["success"]
    assert r.total_tokens == sum(x["response"]["usage"]["total_tokens"] for x in s.requests)
    assert r.ok and r.errors == [] and r.run_id


def test_max_turns_is_exhausted_with_partial_result():
    keys = [sim.call("lookup", {"key": str(i)}) for i in range(10)]
    rt, _ = runtime(keys, RuntimeConfig(max_turns=3))
    r = rt.run("go")
    assert (r.state, r.stopped_reason, r.turns) == (RunState.EXHAUSTED, "max_turns (3)", 3)
    assert len(r.tool_calls_made) == 3 and not r.ok
    assert [e["code"] for e in r.errors] == ["max_turns"]


def test_repeated_calls_are_a_loop_and_history_stays_valid():
    rt, s = runtime(sim.Function(lambda m, t: sim.call("lookup", {"key": "same"})))
    r = rt.run("go")
    assert (r.state, r.stopped_reason, r.turns) == (RunState.ERROR, "loop_detected", 3)
    assert len(r.tool_calls_made) == 2  # the third, looping call was not executed
    last = rt.messages.get_messages()[-1]
    assert last["role"] == "tool" and "not executed" in last["content"].lower()
    rt.llm = sim.Simulator(["fine"]).llm()  # a follow-up run on the same history is accepted
    assert rt.run("summarise please").state is RunState.FINISHED


def test_alternating_calls_and_parallel_order_are_caught():
    a, b = sim.call("lookup", {"key": "x"}), sim.call("other", {"key": "y"})
    rt, _ = runtime([a, b, a, b, sim.text("never")])
    assert rt.run("go").stopped_reason == "loop_detected"
    d = LoopDetector(window=4, threshold=3)
    pairs = [[("r", {"u": 1}), ("r", {"u": 2})], [("r", {"u": 2}), ("r", {"u": 1})]]
    assert d.observe(pairs[0]) is None and d.observe(pairs[1]) is None
    assert d.observe(pairs[0]) is not None  # same parallel pair 3 times, order ignored


def test_distinct_calls_are_not_a_loop():
    rt, _ = runtime([sim.call("lookup", {"key": str(i)}) for i in range(6)] + [sim.text("ok")])
    assert rt.run("go").state is RunState.FINISHED


def test_total_budget_holds_inside_a_turn():
    slow = sim.Function(lambda m, t: [sim.call("lookup", {"key": str(len(m))})])
    rt, _ = runtime(slow, RuntimeConfig(max_total_time=1.0), reg=registry(delay=0.4))
    t0 = time.monotonic()
    r = rt.run("go")
    assert time.monotonic() - t0 < 2.0
    assert (r.state, r.stopped_reason) == (RunState.EXHAUSTED, "timeout (1.0s)")
    assert any(e["code"] == "deadline_exceeded" for e in r.errors)


def test_cancel_from_another_thread():
    rt, _ = runtime(sim.Function(lambda m, t: sim.call("lookup", {"key": str(len(m))})),
                    RuntimeConfig(max_turns=100, loop_detection_window=50), reg=registry(0.05))
    threading.Timer(0.3, rt.cancel).start()
    r = rt.run("go")
    assert (r.state, r.stopped_reason) == (RunState.CANCELLED, "cancelled")
    assert 2 <= r.turns < 100


def test_persistent_5xx_is_an_error_not_an_exception():
    s = sim.Simulator(["never"], faults=sim.Faults(server_error=1.0))
    rt = AgentRuntime(s.llm(retry_base_delay=0.001, max_retries=2), registry())
    r = rt.run("go")
    assert (r.state, r.stopped_reason) == (RunState.ERROR, "exception: ProviderError")
    assert r.errors[0]["code"] == "provider_unavailable" and r.errors[0]["retryable"] is True
    assert statuses(s) == [500, 500, 500]


def test_length_is_not_a_clean_finish():
    s = sim.Simulator(sim.Function(lambda m, t: sim.text("word " * 50)))
    rt = AgentRuntime(s.llm(), registry())
    rt.llm.chat = lambda *a, _chat=rt.llm.chat, **k: _chat(*a, max_tokens=5, **k)
    r = rt.run("go")
    assert (r.state, r.stopped_reason) == (RunState.EXHAUSTED, "length")
    assert r.errors[0]["code"] == "output_truncated" and r.content


def test_hooks_fire_in_order_and_a_raising_hook_does_not_abort():
    rt, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")])
    seen = []
    rt.on("*", lambda ev: seen.append(ev["type"]))
    rt.on("tool_start", lambda ev: 1 / 0)
    r = rt.run("go")
    assert r.state is RunState.FINISHED
    assert [e["code"] for e in r.errors] == ["hook_failed"]
    assert seen == ["run_start", "turn_start", "llm_start", "llm_end", "tool_start", "tool_end",
                    "turn_end", "turn_start", "llm_start", "llm_end", "turn_end", "run_end"]


def test_long_compressed_run_keeps_the_strict_simulator_happy():
    big = "x " * 400
    reg = ToolRegistry()
    reg.register(lambda key: big + key, name="lookup", description="Big output.")
    n = itertools.count()  # a Script would restart its count when compression drops turns
    s = sim.Simulator(sim.Function(lambda m, t: sim.call("lookup", {"key": str(i)})
                                   if (i := next(n)) < 30 else sim.text("done")), strict=True)
    mm = MessageManager("You are terse.", max_tokens=3000)
    rt = AgentRuntime(s.llm(), reg, config=RuntimeConfig(max_turns=40), messages=mm)
    r = rt.run("go")
    assert r.state is RunState.FINISHED and mm.compressions
    assert set(statuses(s)) == {200}


def test_constructing_a_runtime_creates_no_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    AgentRuntime(sim.Simulator().llm(), registry())
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ the seam (issue #10)
def test_loop_detector_misuse_is_a_config_error():
    with pytest.raises(ConfigError, match="window >= 2"):
        LoopDetector(window=1)
    with pytest.raises(ValueError):  # still a ValueError for old callers
        LoopDetector(threshold=0)


def test_hooks_read_the_public_run_context():
    rt, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")])
    seen = []
    rt.on("turn_start", lambda ev: seen.append((rt.context.run_id, rt.context.turns)))
    r = rt.run("go")
    assert isinstance(rt.context, RunContext) and rt.context.run_id == r.run_id
    assert seen == [(r.run_id, 1), (r.run_id, 2)]
    assert rt.context.tool_calls_made is r.tool_calls_made and rt.context.task == "go"


def test_star_and_named_hooks_run_in_the_order_they_were_added():
    rt, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")])
    order = []
    rt.on("tool_end", lambda ev: order.append("named, added first"))
    rt.on("*", lambda ev: ev["type"] == "tool_end" and order.append("star, added second"))
    rt.on("tool_end", lambda ev: order.append("named, added third"))
    rt.run("go")
    assert order == ["named, added first", "star, added second", "named, added third"]


def test_extension_events_are_declared_then_emitted_to_their_hooks_and_star():
    rt, _ = runtime([sim.text("done")])
    got, every = [], []
    rt.on("*", lambda ev: every.append(ev["type"]))
    with pytest.raises(ConfigError):
        rt.on("saved", got.append)
    rt.declare_events("saved")
    rt.on("saved", got.append)
    rt.emit("saved", n=1)
    assert got == [{"type": "saved", "n": 1}] and every == ["saved"]
    for bad in (lambda: rt.emit("turn_start"), lambda: rt.emit("never_declared"),
                lambda: rt.declare_events("not an identifier")):
        with pytest.raises(ConfigError):
            bad()


def test_the_resume_phase_restores_context_and_messages_with_no_checkpoint_code():
    first, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")],
                       RuntimeConfig(max_turns=1))
    saved = first.run("look a up")
    history = first.messages.get_messages()[1:]  # the task, the call and its result
    rt, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")])
    starts = []
    rt.on("run_start", starts.append)

    @rt.on_resume
    def restore(ctx: RunContext, ref: str) -> None:
        ctx.restore(run_id=saved.run_id, turns=saved.turns, usage=saved.usage, elapsed_s=2.0,
                    tool_calls_made=saved.tool_calls_made, resumed_from=ref)
        rt.messages.restore(history)
    r = rt.run("look a up", resume_from="memo")
    assert (r.state, r.run_id, r.turns) == (RunState.FINISHED, saved.run_id, 2)
    assert r.total_tokens > saved.total_tokens and r.duration_ms >= 2000  # budget continued
    assert [m["role"] for m in rt.messages.get_messages()].count("user") == 1  # not re-appended
    assert (starts[0]["resumed_from"], starts[0]["turn"]) == ("memo", 1)
    with pytest.raises(ConfigError):
        rt.on_resume(restore)  # one resume phase per runtime


def test_a_refused_resume_raises_and_does_not_start_the_run():
    rt, s = runtime([sim.text("done")])
    with pytest.raises(ConfigError, match="resume_from needs"):
        rt.run("go", resume_from="latest")  # nothing attached can resume

    @rt.on_resume
    def refuse(ctx, ref):
        raise CheckpointError("checkpoint_not_found", f"no {ref}")
    with pytest.raises(CheckpointError):
        rt.run("go", resume_from="x")
    assert rt.run_state is RunState.IDLE and s.requests == [] and rt.context is None
    assert rt.run("go").ok  # the runtime was released


def test_tool_calls_made_records_the_timeout_the_executor_enforced():
    class ReportsLimits(ToolExecutor):  # stands in for an executor whose results carry timeout_s
        def execute(self, calls, timeout=None, **kw):
            results = super().execute(calls, timeout=timeout, **kw)
            for r in results:
                r.timeout_s = 7.5
            return results
    reg = registry()
    s = sim.Simulator(sim.Script([sim.call("lookup", {"key": "a"}), sim.text("done")]))
    r = AgentRuntime(s.llm(), reg, executor=ReportsLimits(reg)).run("go")
    assert r.tool_calls_made[0]["timeout_s"] == 7.5 and r.tool_calls_made[0]["success"]


def test_tool_end_events_say_whether_a_result_was_replayed():
    rt, _ = runtime([sim.call("lookup", {"key": "a"}), sim.text("done")])
    ends = []
    rt.on("tool_end", ends.append)
    rt.run("go")
    assert [e["replayed"] for e in ends] == [False]


def test_hook_and_resume_phase_misuse_is_a_config_error():
    rt, _ = runtime([sim.text("done")])
    for bad in (lambda: rt.on("turn_start", None), lambda: rt.on("no_such_event", print),
                lambda: rt.on_resume("not callable")):
        with pytest.raises(ConfigError):
            bad()


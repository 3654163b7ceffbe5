"""ToolExecutor and the tools of issue #12: async tools (run, cancelled on timeout, also from
inside a running event loop), results that cannot become text, arguments a tool mutates, knob
validation, the process-wide cap on abandoned threads, and ``ToolResult.timeout_s``."""
from __future__ import annotations

import asyncio
import gc
import threading
import time
import warnings

import pytest

from agentlab import executor as executor_module
from agentlab import sim
from agentlab.errors import ConfigError
from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.runtime import AgentRuntime, RunState
from agentlab.tools import ToolRegistry


def call(name: str, cid: str = "c1", **args) -> ToolCall:
    return ToolCall(cid, name, args)


@pytest.fixture
def gate():
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def reg(gate):
    reg = ToolRegistry()
    state = reg.state = {"cancelled": 0, "finished": 0, "effects": []}

    @reg.tool
    async def fetch(url: str, delay: float = 0.01) -> dict:
        await asyncio.sleep(delay)
        return {"url": url, "status": 200}

    @reg.tool
    async def stuck(seconds: float = 30.0) -> str:
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            state["cancelled"] += 1
            raise
        state["finished"] += 1
        return "finished"

    @reg.tool
    def hang() -> str:
        gate.wait(30)
        return "released"

    @reg.tool(side_effects=True)
    def write(text: str) -> str:
        state["effects"].append(text)
        return "written"

    @reg.tool
    def huge() -> int:
        return 10 ** 5000

    @reg.tool
    def weird() -> object:
        class Weird:
            def __str__(self):
                raise RuntimeError("no text for you")
        return Weird()

    @reg.tool
    def deep() -> list:
        out: list = []
        for _ in range(100_000):
            out = [out]
        return out

    @reg.tool
    def bad_error() -> None:
        class Nasty(Exception):
            def __str__(self):
                raise RuntimeError("cannot describe myself")
        raise Nasty()

    @reg.tool
    def mutate(payload: dict) -> str:
        payload["items"].append("added by the tool")
        return "ok"

    def plain_wrapper(url: str) -> str:
        return fetch(url)  # forgot the await: returns a coroutine
    reg.register(plain_wrapper)
    return reg


# -- async tools -------------------------------------------------------------------------------
def test_async_tool_runs_to_completion_in_both_modes(reg):
    ex = ToolExecutor(reg)
    for run in (ex.execute, ex.execute_parallel):
        results = run([call("fetch", "a", url="u1"), call("fetch", "b", url="u2")])
        assert [r.result for r in results] == ['{"url": "u1", "status": 200}',
                                               '{"url": "u2", "status": 200}']  # was "<coroutine"
        assert all(r.success for r in results)


def test_async_tool_from_inside_a_running_event_loop(reg):
    """Jupyter runs cells inside its own loop; the executor's loop is its own."""
    async def cell() -> list:
        return ToolExecutor(reg).execute([call("fetch", url="from jupyter")])
    [r] = asyncio.run(cell())
    assert r.success and "from jupyter" in r.result


def test_async_timeout_cancels_the_task_for_real(reg):
    ex = ToolExecutor(reg, default_timeout=0.2)
    t0 = time.perf_counter()
    [r] = ex.execute_parallel([call("stuck")])
    wall = time.perf_counter() - t0
    assert r.error_code == "tool_timeout" and "cancelled" in r.result
    assert 0.2 <= wall < 0.2 + 0.5
    deadline = time.monotonic() + 2
    while ex.running_tasks and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ex.running_tasks == 0 and reg.state["cancelled"] == 1
    assert reg.state["finished"] == 0 and ex.abandoned_threads == 0  # no thread was left


def test_a_plain_function_returning_a_coroutine_fails_clearly(reg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would be an error
        [r] = ToolExecutor(reg).execute([call("plain_wrapper", url="x")])
        gc.collect()
    assert r.error_code == "unsupported_type" and "async def" in r.result


# -- results that cannot become text --------------------------------------------------------------
@pytest.mark.parametrize("tool", ["huge", "weird", "deep"])
def test_an_unrenderable_result_fails_only_its_own_call(reg, tool):
    ex = ToolExecutor(reg)
    results = ex.execute_parallel([call("write", "w", text="hello"), call(tool, "x"),
                                   call("fetch", "f", url="u")])  # was: raised out of execute
    assert [r.success for r in results] == [True, False, True]
    assert results[0].result == "written" and reg.state["effects"] == ["hello"]
    assert results[1].error_code == "tool_result_unrenderable"
    assert "ran and finished" in results[1].result and "do not call it again" in results[1].result


def test_an_exception_whose_str_raises_is_still_reported(reg):
    [r, ok] = ToolExecutor(reg).execute([call("bad_error"), call("fetch", "f", url="u")])
    assert r.error_code == "tool_failed" and "Nasty" in r.result and ok.success


def test_execute_never_raises_even_on_an_internal_failure(reg, monkeypatch):
    ex = ToolExecutor(reg)
    monkeypatch.setattr(ex, "_finish", lambda state: 1 / 0)
    results = ex.execute([call("write", "w", text="once"), call("fetch", "f", url="u")])
    assert [r.error_code for r in results] == ["executor_error", "executor_error"]
    assert "had started" in results[0].result and reg.state["effects"] == ["once"]
    assert "was not run" in results[1].result


# -- arguments are the tool's own copy ---------------------------------------------------------------
def test_a_tool_mutating_its_argument_does_not_change_the_record(reg):
    c = call("mutate", payload={"items": ["a"]})
    [r] = ToolExecutor(reg).execute([c])
    assert r.success and c.arguments == {"payload": {"items": ["a"]}}


# -- timeouts enforced, reported and validated ----------------------------------------------------
def test_timeout_s_is_the_limit_enforced(reg):
    ex = ToolExecutor(reg, default_timeout=5.0)
    [r] = ex.execute([call("fetch", url="u")])
    assert r.timeout_s == pytest.approx(5.0, abs=0.01)
    [r] = ex.execute([call("fetch", url="u")], timeout=0.5)
    assert r.timeout_s == pytest.approx(0.5, abs=0.05)
    [r] = ex.execute([call("nope")])
    assert r.timeout_s is None


@pytest.mark.parametrize("bad", [0, -1, float("inf"), float("nan"), None, True, "30"])
def test_knobs_are_validated_at_construction(reg, bad):
    for kwargs in ({"default_timeout": bad}, {"max_workers": bad}, {"max_output_chars": bad},
                   {"max_abandoned": bad if bad is not None else 0}):
        with pytest.raises(ConfigError) as info:  # was: tool_timeout at run time, or a crash
            ToolExecutor(reg, **kwargs)
        assert info.value.code == "invalid_config"


# -- abandoned threads: one cap for the whole process -------------------------------------------
def test_abandoned_threads_are_capped_per_process_not_per_executor(reg, gate):
    previous = executor_module.set_abandoned_limit(3)
    try:
        base = executor_module.abandoned_threads()
        codes = []
        for i in range(6):  # one executor per request, as one runtime per request does
            [r] = ToolExecutor(reg, default_timeout=0.05).execute([call("hang", f"h{i}")])
            codes.append(r.error_code)
        assert codes.count("tool_timeout") == 3 - base and codes[-1] == "executor_saturated"
        assert executor_module.abandoned_threads() == 3  # was: one more per executor
        assert ToolExecutor.process_abandoned_threads() == 3
        assert "in this process" in r.result if (r := ToolExecutor(reg).execute(
            [call("hang", "hx")])[0]).error_code else False
        # an async tool holds no thread, so it still runs
        [r] = ToolExecutor(reg).execute([call("fetch", url="u")])
        assert r.success
    finally:
        gate.set()
        executor_module.set_abandoned_limit(previous)
    mine = lambda: [c for _, c in executor_module.abandoned_calls() if c.startswith("h")]
    deadline = time.monotonic() + 2
    while mine() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert mine() == []  # released threads leave the count


# -- through the runtime: the history says exactly which calls ran --------------------------------
def test_runtime_history_keeps_the_real_result_of_a_call_next_to_an_unrenderable_one(reg):
    s = sim.Simulator(sim.Script([[sim.call("write", {"text": "once"}), sim.call("huge", {})],
                                  sim.text("done")]))
    rt = AgentRuntime(s.llm(), reg)
    result = rt.run("write it")
    assert result.state is RunState.FINISHED and reg.state["effects"] == ["once"]
    tool_msgs = [m for m in rt.messages.get_messages() if m["role"] == "tool"]
    assert tool_msgs[0]["content"] == "written"  # was: "not executed" for both calls
    assert "ran and finished" in tool_msgs[1]["content"]
    assert "not executed" not in " ".join(m["content"] for m in tool_msgs)

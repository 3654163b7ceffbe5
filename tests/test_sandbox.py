"""agentlab.sandbox (chapter 15): a hung tool is killed at its timeout and its side effect never
lands; memory bomb, fork bomb and endless output end in typed errors; nothing is left running;
results cross as JSON; the environment is an allow-list; a killed call's outcome is unknown and
a durable run records it (so it is never run again)."""
from __future__ import annotations

import os
import sys
import time

import psutil
import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.errors import ConfigError, ToolError
from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.runtime import AgentRuntime
from agentlab.sandbox import SandboxPolicy, capabilities, close_pools, demo, pool_for
from agentlab.tools import ToolRegistry

POLICY = SandboxPolicy(memory_mb=256, max_procs=16, cpu_s=5, file_mb=4, workers=1)


def descendants() -> set[int]:
    alive = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                alive.add(p.pid)
        except psutil.NoSuchProcess:  # ended between the listing and the look
            continue
    return alive


@pytest.fixture
def clean():
    """Fresh pools; afterwards no process of ours may be left running."""
    close_pools()
    before = descendants()
    yield
    close_pools()
    deadline = time.monotonic() + 5
    while descendants() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert descendants() - before == set()


def executor_for(func, **options) -> ToolExecutor:
    reg = ToolRegistry()
    reg.register(func, sandbox=POLICY, **options)
    return ToolExecutor(reg)


def test_a_hung_tool_is_killed_at_its_timeout_and_never_writes(clean, tmp_path):
    target = tmp_path / "late.txt"
    ex = executor_for(demo.hang_then_write, timeout=1.0, side_effects=True)
    t0 = time.monotonic()
    [r] = ex.execute([ToolCall("c1", "hang_then_write", {"path": str(target), "seconds": 2.5})])
    took = time.monotonic() - t0
    assert r.error_code == "tool_timeout" and 0.9 < took < 1.8, (r, took)
    assert "killed with every process it started" in r.result
    assert "outcome is unknown" in r.result and "not retried automatically" in r.result
    time.sleep(max(0.0, 3.5 - (time.monotonic() - t0)))  # past the tool's own 2.5 s
    assert not target.exists()


@pytest.mark.parametrize("func, kwargs, limit", [
    (demo.memory_bomb, {"mb": 4096}, "memory"),
    (demo.fork_bomb, {"children": 200}, "processes"),
    (demo.infinite_output, {}, "file_size"),
])
def test_a_bomb_ends_in_a_typed_error_and_the_pool_goes_on(clean, func, kwargs, limit):
    pool = pool_for(POLICY)
    with pytest.raises(ToolError) as err:
        pool.call(func, kwargs, timeout_s=20)
    assert (err.value.code, err.value.details["limit"]) == ("sandbox_limit", limit)
    assert pool.call(demo.noop, {}, timeout_s=20) == "ok"  # the runtime and the pool survive


def test_through_the_executor_a_bomb_is_a_failed_result(clean):
    [r] = executor_for(demo.memory_bomb).execute([ToolCall("m", "memory_bomb", {"mb": 4096})])
    assert (r.success, r.error_code) == (False, "sandbox_limit")
    assert "256 MB of memory" in r.result


def test_results_cross_as_json_only(clean):
    pool = pool_for(POLICY)
    assert pool.call(demo.read_secret, {"path": "/nonexistent"})["file"].startswith("refused")
    with pytest.raises(ToolError) as err:
        pool.call(demo.not_json, {})
    assert err.value.code == "result_not_json"


def test_the_environment_is_an_allow_list(clean, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    assert pool_for(POLICY).call(demo.read_secret, {})["env"] == "not set"
    allowed = SandboxPolicy(env=("OPENAI_API_KEY",), workers=1)
    assert pool_for(allowed).call(demo.read_secret, {})["env"] == "found"


def test_a_detached_grandchild_is_killed_when_the_call_ends(clean, tmp_path):
    target = tmp_path / "detached.txt"
    pool_for(POLICY).call(demo.spawn_detached, {"path": str(target), "seconds": 1.0})
    time.sleep(1.5)
    assert not target.exists()


def test_capabilities_say_plainly_what_isolation_this_machine_gives():
    caps = capabilities()
    assert {"platform", "processes", "network", "limits", "files", "environment"} <= set(caps)
    assert caps["network"].startswith(("isolated", "not isolated ("))


def test_a_sandbox_option_must_be_a_policy():
    async def later() -> str:
        """Wait."""
        return "x"
    with pytest.raises(ConfigError):
        ToolRegistry().register(demo.noop, sandbox="yes")
    with pytest.raises(ConfigError):
        ToolRegistry().register(later, sandbox=POLICY)
    reg = ToolRegistry()
    reg.register(demo.noop, sandbox=POLICY)
    assert reg.get_options("noop")["sandbox"] is POLICY
    assert reg.get_schema("noop")["function"]["name"] == "noop"


def test_a_killed_call_is_recorded_by_a_durable_run_so_it_is_never_rerun(clean, tmp_path):
    """Chapter 11: the outcome of a killed call is unknown; the log answers it on resume."""
    reg = ToolRegistry()
    reg.register(demo.hang_then_write, sandbox=POLICY, timeout=0.5, side_effects=True)
    script = sim.Script([sim.call("hang_then_write", {"path": str(tmp_path / "x"),
                                                       "seconds": 5}), sim.text("done")])
    cm = CheckpointManager(tmp_path / "cp")
    r = AgentRuntime(sim.Simulator(script).llm(), reg, checkpoints=cm).run("write it")
    call_id = r.tool_calls_made[0]["id"]
    logged = cm.get_tool_result(r.run_id, call_id)
    assert logged["error_code"] == "tool_timeout" and "outcome is unknown" in logged["result"]


def test_a_worker_started_by_a_thread_that_ended_still_serves_calls(clean):
    """PR_SET_PDEATHSIG follows the parent *thread*: pool workers must not use it."""
    import threading
    pool = pool_for(POLICY)
    t = threading.Thread(target=pool.warm)
    t.start()
    t.join()
    time.sleep(0.2)
    assert pool.call(demo.noop, {}) == "ok" and pool.workers_started == 1


def test_a_cancelled_run_kills_the_sandboxed_call(clean, tmp_path):
    import threading
    target = tmp_path / "late.txt"
    ex = executor_for(demo.hang_then_write, timeout=10.0, side_effects=True)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t0 = time.monotonic()
    [r] = ex.execute([ToolCall("c1", "hang_then_write", {"path": str(target), "seconds": 1.0})],
                     cancel=cancel)
    assert r.error_code == "cancelled" and time.monotonic() - t0 < 0.8
    assert "killed with every process it started" in r.result
    time.sleep(1.2)
    assert not target.exists()


def test_a_refused_namespace_is_reported_never_silently(monkeypatch):
    """Where unshare is refused (macOS has none; a container may forbid it), the report says
    so in words instead of leaving the line out."""
    import ctypes
    from agentlab.sandbox import limits

    class RefusingLibc:
        def unshare(self, flags):
            ctypes.set_errno(1)  # EPERM
            return -1

    report: dict = {}
    limits._namespaces(RefusingLibc(), {"network": False, "pid_ns": True}, report)
    assert report["network"] == "not isolated (unshare refused: Operation not permitted)"
    assert report["processes"] == "shared pid namespace (Operation not permitted)"


def test_the_thread_side_of_a_memory_bomb_counts_its_allocation_even_after_a_higher_peak():
    """Notebook 15 flaked here: the caller's peak resident size did not rise when an earlier
    cell had already peaked higher, so the thread's harm read as 0."""
    from agentlab.sandbox.compare import side_by_side
    earlier = [bytearray(1 << 20) for _ in range(300)]
    del earlier
    res = side_by_side("memory bomb")
    assert res["thread"]["harm"] == 200 and res["sandbox"]["harm"] == 0
    # the bomb holds its memory past the timeout: the same endings on a quiet or busy machine
    # (CI saw the thread's 200 MB take longer than 1 s, and its late allocation counted as
    # the sandbox's 50 MB)
    assert (res["thread"]["ending"], res["sandbox"]["ending"]) == ("tool_timeout", "sandbox_limit")


def test_the_fork_bomb_count_sees_what_a_sandbox_leaves_and_not_the_thread_sides_children(
        clean, monkeypatch):
    """Notebook 15 flaked here: a child of the thread side's bomb, missed by the "before" count,
    was counted as the sandbox's leftover ("1 of 200"). The sandbox side now counts only what a
    sandbox worker forked, machine-wide; with the pool's clean-up switched off it sees them."""
    from agentlab.sandbox import pool
    from agentlab.sandbox.compare import side_by_side
    policy = SandboxPolicy(memory_mb=256, max_procs=8, workers=1)
    res = side_by_side("fork bomb", policy=policy)
    # the thread side is counted once its bomb has forked all 30 (it goes on after the
    # timeout): 30 idle and under load, where counting at the timeout saw 7 to 22
    assert res["thread"]["harm"] == 30 and res["sandbox"]["harm"] == 0
    assert res["thread"]["effect"] == "30 of 30 processes still running after the call"
    assert (res["thread"]["ending"], res["sandbox"]["ending"]) == ("tool_timeout", "sandbox_limit")
    close_pools()
    monkeypatch.setattr(pool._Worker, "leftovers", lambda self: None)
    monkeypatch.setattr(pool, "kill_all", lambda *a, **k: 0)
    res = side_by_side("fork bomb", policy=policy)
    assert res["sandbox"]["harm"] >= 5
    for pid in psutil.pids():  # this test's own clean-up, the pool's being off
        try:
            proc = psutil.Process(pid)
            if proc.cmdline()[:3] == [sys.executable, "-c", pool.WORKER_CODE]:
                proc.kill()
        except psutil.Error:
            continue

"""Gates (issue #19): an extension ends a run or pauses a turn from outside the loop, with state
of its own that checkpoints save and restore; the cost cap is such a gate."""
from __future__ import annotations

import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.errors import AgentError, ConfigError
from agentlab.runtime import AgentRuntime, Gate, Pause, RunState, RuntimeConfig, Stop
from agentlab.runtime.cost import CostCap
from agentlab.tools import ToolRegistry


def registry(ran: list) -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(lambda key: ran.append(key) or f"value of {key}", name="lookup",
                 description="Look a key up.")
    return reg


def llm():
    return sim.Simulator(sim.Script([sim.call("lookup", {"key": "a"}),
                                     sim.call("lookup", {"key": "b"}), sim.text("done")])).llm()


class PauseOnce(Gate):
    """Pauses the first turn that calls 'lookup' with key 'b', counting the pauses it made."""

    name = "pause_once"

    def before_tools(self, ctx, calls):
        state = ctx.extensions.get(self.name) or {"pauses": 0}
        if state["pauses"] == 0 and any(c.arguments.get("key") == "b" for c in calls):
            return Pause("waiting_for_b", pending=[{"key": "b"}], state={"pauses": 1})
        return None


def test_a_gate_pauses_a_turn_and_its_state_comes_back_on_resume(tmp_path):
    ran: list = []
    cm = CheckpointManager(tmp_path / "cp")
    rt = AgentRuntime(llm(), registry(ran), checkpoints=cm)
    rt.add_gate(PauseOnce())
    r = rt.run("task")
    assert (r.state, r.stopped_reason, r.pending_approvals) == (
        RunState.PAUSED, "waiting_for_b", [{"key": "b"}])
    assert ran == ["a"]  # the held turn ran none of its calls
    meta = cm.load(cm.list_checkpoints(r.run_id)[-1]["id"]).metadata
    assert meta["extensions"] == {"pause_once": {"pauses": 1}} and meta["held_turn"]["message"]
    rt2 = AgentRuntime(llm(), registry(ran), checkpoints=CheckpointManager(tmp_path / "cp"))
    rt2.add_gate(PauseOnce())
    done = rt2.run("task", resume_from="latest")
    assert done.ok and done.run_id == r.run_id and ran == ["a", "b"]
    assert rt2.context.extensions == {"pause_once": {"pauses": 1}}


class StopAfter(Gate):
    name = "stop_after"

    def before_model(self, ctx):
        if ctx.turns >= 1:
            return Stop(RunState.EXHAUSTED, "my_budget", AgentError("my_budget", "enough"))
        return None


def test_a_gate_ends_the_run_before_a_model_call():
    ran: list = []
    rt = AgentRuntime(llm(), registry(ran))
    rt.add_gate(StopAfter())
    r = rt.run("task")
    assert (r.state, r.stopped_reason, r.turns, ran) == (RunState.EXHAUSTED, "my_budget", 1, ["a"])
    assert [e["code"] for e in r.errors] == ["my_budget"]


def test_a_gate_that_stops_before_tools_leaves_every_call_answered():
    class NoTools(Gate):
        def before_tools(self, ctx, calls):
            return Stop(RunState.ERROR, "no_tools")
    ran: list = []
    rt = AgentRuntime(llm(), registry(ran))
    rt.add_gate(NoTools())
    r = rt.run("task")
    assert (r.state, r.stopped_reason, ran) == (RunState.ERROR, "no_tools", [])
    last = rt.messages.get_messages()[-1]
    assert last["role"] == "tool" and "has no result: not executed (no_tools)" in last["content"]


def test_the_cost_cap_is_a_gate_the_runtime_adds_itself():
    rt = AgentRuntime(llm(), registry([]), config=RuntimeConfig(max_cost_usd=1.0))
    assert [type(g).__name__ for g in rt.gates] == ["Budgets", "LoopGuard", "CostCap"]
    assert not any(isinstance(g, CostCap) for g in AgentRuntime(llm(), registry([])).gates)
    with pytest.raises(ConfigError):
        rt.add_gate(object())

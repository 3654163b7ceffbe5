"""The cost cap (chapter 13, agentlab.runtime.cost): spend is reported on every result (and
agrees with the observer), and a capped run ends EXHAUSTED (cost_budget) before a model call
whose worst case could take it over the cap: that call is never sent."""
from __future__ import annotations

import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.errors import ConfigError
from agentlab.experiments.ratelimit import LimitedLLM
from agentlab.models import cost_usd, register_model, unregister_model
from agentlab.observe import AgentObserver
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.runtime.cost import worst_case_output_tokens
from agentlab.tools import ToolRegistry

STEPS = 6


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(lambda n: f"step {n} done: " + "data " * 200, name="step", description="A step.")
    return reg


def run(cap=None, output_cap=200, observer=None, checkpoints=None, resume_from=None):
    s = sim.Simulator(sim.Script([sim.call("step", {"n": i}) for i in range(STEPS)]
                                 + [sim.text("all done")]))
    llm = LimitedLLM(s.llm(), max_output_tokens=output_cap)  # sends max_completion_tokens
    rt = AgentRuntime(llm, registry(), config=RuntimeConfig(max_cost_usd=cap), observer=observer,
                      checkpoints=checkpoints)
    return s, rt, rt.run("do the steps", resume_from=resume_from)


def test_every_result_reports_its_spend_like_the_observer():
    s, rt, r = run(observer=AgentObserver("x"))
    assert r.ok and r.turns == STEPS + 1
    assert r.cost_usd == pytest.approx(cost_usd("gpt-4o", r.usage["prompt_tokens"],
                                                r.usage["completion_tokens"])) and r.cost_usd > 0
    assert rt.observer.generate_report().cost_usd == pytest.approx(r.cost_usd)
    assert r.to_dict()["cost_usd"] == r.cost_usd


def test_a_capped_run_stops_before_the_call_that_could_pass_the_cap():
    full = run()[2].cost_usd
    cap = round(full * 0.6, 6)
    s, rt, r = run(cap)
    assert (r.state, r.stopped_reason) == (RunState.EXHAUSTED, f"cost_budget (${cap:g})")
    assert 2 <= r.turns < STEPS + 1 and len(s.requests) == r.turns  # the refused call: not sent
    assert r.cost_usd <= cap
    [err] = r.errors
    d = err["details"]
    assert err["code"] == "cost_budget" and d["spent_usd"] == pytest.approx(r.cost_usd)
    assert d["spent_usd"] + d["call_worst_case_usd"] > cap  # refused only when it could pass
    # the worst case priced the whole output cap: 200 completion tokens at the output price
    assert d["call_worst_case_usd"] == pytest.approx(cost_usd("gpt-4o", d["prompt_tokens"], 200))


def test_without_an_output_cap_the_worst_case_is_the_models_longest_answer():
    s = sim.Simulator(sim.Script([sim.text("hi")]))
    assert worst_case_output_tokens(s.llm()) == 16384  # gpt-4o's max_output_tokens in the table
    worst = cost_usd("gpt-4o", 0, 16384)
    r = AgentRuntime(s.llm(), ToolRegistry(), config=RuntimeConfig(max_cost_usd=worst * 0.9)).run("x")
    assert r.state is RunState.EXHAUSTED and r.turns == 0 and s.requests == []
    assert r.cost_usd == 0.0


def test_a_cap_set_or_changed_after_construction_holds():
    worst = cost_usd("gpt-4o", 0, 16384)
    s = sim.Simulator(sim.Script([sim.text("hi")]))
    rt = AgentRuntime(s.llm(), ToolRegistry())
    rt.config.max_cost_usd = worst * 0.9  # set after construction, as a notebook cell would
    r = rt.run("x")
    assert (r.state, r.turns, s.requests) == (RunState.EXHAUSTED, 0, [])
    rt.config.max_cost_usd = worst * 10  # raised: the same gate follows the config
    assert rt.run("y").state is RunState.FINISHED
    assert sum(type(g).__name__ == "CostCap" for g in rt.gates) == 1


def test_a_cap_needs_a_priced_model_and_a_positive_budget():
    register_model("my-local-model", context_window=8192, max_output_tokens=1024)
    try:
        llm = sim.Simulator(sim.Script([sim.text("hi")])).llm(model="my-local-model")
        with pytest.raises(ConfigError) as info:
            AgentRuntime(llm, ToolRegistry(), config=RuntimeConfig(max_cost_usd=1.0))
        assert info.value.code == "unpriced_model"
        assert AgentRuntime(llm, ToolRegistry()).run("x").cost_usd is None  # no cap: fine
    finally:
        unregister_model("my-local-model")
    for bad in (0, -1.0, float("inf"), True):
        with pytest.raises(ConfigError):
            RuntimeConfig(max_cost_usd=bad)


def test_the_spend_carries_over_a_resume(tmp_path):
    full = run()[2]
    stopped = run(round(full.cost_usd * 0.5, 6), checkpoints=CheckpointManager(tmp_path))[2]
    assert stopped.state is RunState.EXHAUSTED and 0 < stopped.cost_usd < full.cost_usd
    s, rt, resumed = run(1.0, checkpoints=CheckpointManager(tmp_path), resume_from="latest")
    assert resumed.ok and resumed.run_id == stopped.run_id
    assert resumed.cost_usd == pytest.approx(full.cost_usd, rel=0.05)  # the whole run's spend

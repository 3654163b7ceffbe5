"""Chapter 16: counterfactual sweeps (agentlab.timetravel.sweep)."""
import numpy as np
import pytest
from scipy import stats

from agentlab import AgentRuntime, CheckpointManager, sim
from agentlab.experiments.stats import FewSamplesWarning
from agentlab.research import SYSTEM_PROMPT, research_tools
from agentlab.runtime import RuntimeConfig
from agentlab.timetravel import CapabilitySnapshot, ReplaceToolResult, SetConfig, history
from agentlab.timetravel.sweep import counterfactual_sweep

TOPICS = ["cancellation", "timeouts", "queues", "locks"]
GRID = {"as run": None,
        "page 2 lost": ReplaceToolResult("Error: page not found", tool="read_url", nth=1),
        "max_turns 4": SetConfig(max_turns=4)}


@pytest.fixture
def runs(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None)

    def make(overrides):
        return AgentRuntime(sim.Simulator(sim.Researcher()).llm(), research_tools(tmp_path / "out"),
                            system_prompt=SYSTEM_PROMPT, checkpoints=cm,
                            extensions=[CapabilitySnapshot()],
                            config=RuntimeConfig(**overrides.get("config", {})))

    ids = [make({}).run(f"Write a short report on asyncio {t}").run_id for t in TOPICS]
    return cm, ids, make


def test_the_same_sweep_twice_gives_the_same_table(runs):
    cm, ids, make = runs
    with pytest.warns(FewSamplesWarning):
        first = counterfactual_sweep(cm, ids, 3, GRID, make)
    with pytest.warns(FewSamplesWarning):
        second = counterfactual_sweep(cm, ids, 3, GRID, make)
    assert first.table() == second.table() and len(first.table()) == 2 + 3 * 2
    assert {r["fork_run_id"] for r in first.rows}.isdisjoint(r["fork_run_id"] for r in second.rows)
    assert [r["state"] for r in first.rows[:3]] == ["finished", "finished", "exhausted"]
    assert all(history(cm, r["fork_run_id"])[0].parent["revision"] == 3 for r in first.rows)


def test_the_paired_differences_match_a_reference(runs):
    cm, ids, make = runs
    with pytest.warns(FewSamplesWarning):
        out = counterfactual_sweep(cm, ids, 3, GRID, make, metrics=("tokens",))
    base, lost = np.array(out.values("as run", "tokens")), np.array(out.values("page 2 lost", "tokens"))
    c = out.comparisons[0]
    diffs = lost - base
    half = stats.t.ppf(0.975, len(diffs) - 1) * diffs.std(ddof=1) / np.sqrt(len(diffs))
    assert c.estimate == pytest.approx(diffs.mean()) and c.estimate < 0
    assert (c.low, c.high) == pytest.approx((diffs.mean() - half, diffs.mean() + half))
    assert c.p_value == pytest.approx(stats.ttest_rel(lost, base).pvalue)
    small, large = sorted(x.p_value for x in out.comparisons)  # Holm by hand, 2 comparisons
    assert sorted(out.p_holm) == pytest.approx([min(1, 2 * small), max(min(1, 2 * small), large)])
    assert out.comparisons[1].b == "max_turns 4" and out.values("max_turns 4", "turns") == [4] * 4

"""Chapter 14: experiments — specs, cells, the runner (pool, resume, cost cap, fleet hook)."""
from __future__ import annotations

import json
import re
import math

import pandas as pd
import pytest

from agentlab.errors import ConfigError
from agentlab.experiments import (MEASURED, SCENARIOS, WORKLOADS, CellOutput, Experiment,
                                  InProcessCells, Results, register_fleet, register_scenario)
from agentlab.experiments import runner as runner_mod
from agentlab.experiments.store import SweepStore
from agentlab.sim.tool_latency import Constant, Hanging

SPEC = """
name = "demo"
seeds = 3
tasks = ["tools"]

[settings]
time_scale = 0.01

[grid]
timeouts = ["fixed", "adaptive"]

[run]
workers = 2

[[compare]]
metric = "wasted_s"
a = "timeouts=fixed"
b = "timeouts=adaptive"
"""


def test_toml_and_python_describe_the_same_experiment():
    from_toml = Experiment.from_toml(SPEC)
    in_python = Experiment(grid={"timeouts": ["fixed", "adaptive"]}, seeds=3, tasks=["tools"],
                           settings={"time_scale": 0.01}, name="demo", run_options={"workers": 2},
                           compare=[{"metric": "wasted_s", "a": "timeouts=fixed",
                                     "b": "timeouts=adaptive"}])
    assert from_toml.to_dict() == in_python.to_dict()
    assert [c.cell_id for c in from_toml.cells()] == [c.cell_id for c in in_python.cells()]
    assert Experiment.from_dict(in_python.to_dict()).spec_hash == in_python.spec_hash


def test_cells_are_configs_x_tasks_x_seeds_with_stable_ids():
    exp = Experiment(grid={"timeouts": ["fixed", "adaptive"], "multiplier": [1.5, 3.0]},
                     seeds=[4, 5, 6], tasks=["tools", "dag"])
    cells = exp.cells()
    assert len(cells) == 4 * 2 * 3 and [c.index for c in cells] == list(range(24))
    assert cells[0].config == "timeouts=fixed, multiplier=1.5"
    assert [(c.task["name"], c.seed) for c in cells[:6]] == [
        ("tools", 4), ("tools", 5), ("tools", 6), ("dag", 4), ("dag", 5), ("dag", 6)]
    assert "multiplier" not in cells[3].settings  # dag does not read it
    more = Experiment(grid=exp.grid, seeds=[4, 5, 6, 7], tasks=["tools", "dag"]).cells()
    assert {c.cell_id for c in cells} < {c.cell_id for c in more}  # adding a seed reuses cells
    assert len({c.cell_id for c in cells}) == 4 * 3 + 3  # dag reads neither grid key


@pytest.mark.parametrize("kw, text", [
    ({"grid": {"timeout": ["fixed"]}}, "unknown grid key 'timeout'"),
    ({"settings": {"turns": "six"}}, "settings 'turns': 'six' is not a int"),
    ({"seeds": [1, 1]}, "seeds must be non-empty and distinct"),
    ({"tasks": ["nope"]}, "unknown scenario 'nope'"),
    ({"run_options": {"wokers": 2}}, "unknown [run] option(s) ['wokers']"),
])
def test_bad_specs_are_refused_before_anything_runs(kw, text):
    with pytest.raises(ConfigError) as info:
        Experiment(**kw)
    assert info.value.code == "invalid_spec" and text in info.value.message
    assert isinstance(info.value, ValueError)


def test_bad_toml_is_a_config_error():
    with pytest.raises(ConfigError, match="not valid TOML"):
        Experiment.from_toml("name = [unclosed\n")
    with pytest.raises(ConfigError, match="unknown top-level key"):
        Experiment.from_toml('nme = "x"\n')


def _stable(df: pd.DataFrame, table: str) -> pd.DataFrame:
    return df.drop(columns=[c for c in MEASURED[table] if c in df.columns])


def test_same_spec_and_seeds_give_the_same_tables_pool_and_single_process(tmp_path):
    exp = Experiment(grid={"timeouts": ["fixed", "adaptive"]}, seeds=2,
                     tasks=["tools", "research", "dag"],
                     settings={"workload": "steady", "time_scale": 0.05, "turns": 3})
    pool = exp.run(workers=2, progress=False, out=tmp_path / "a")
    single = exp.run(workers=1, progress=False)
    assert (pool.runs["status"] == "ok").all() and len(pool.runs) == 12
    # research and dag ignore `timeouts`: their cells are one computation, shown twice
    assert pool.runs["cell_id"].nunique() == 8 and pool.manifest["sessions"][0]["ran"] == 8
    for name in ("runs", "tool_calls"):
        pd.testing.assert_frame_equal(_stable(getattr(pool, name), name),
                                      _stable(getattr(single, name), name))
    assert pool.manifest["executor"] == "process_pool"
    assert single.manifest["executor"] == "in_process"
    assert pool.tool_calls["timeout_s"].notna().all()  # every call has its enforced timeout


def test_tool_rows_carry_the_enforced_timeout_false_kills_and_waste(monkeypatch):
    monkeypatch.setitem(WORKLOADS, "test_kills", lambda seed, warmup: {
        "slow": Constant(2000), "hang": Hanging(Constant(10), hang_rate=1.0)})
    exp = Experiment(grid={"timeouts": ["fixed"]}, seeds=1, tasks=["tools"],
                     settings={"workload": "test_kills", "turns": 2, "time_scale": 0.01,
                               "fixed_timeout_s": 1.0})
    res = exp.run(workers=1, progress=False)
    calls = res.tool_calls.set_index(["tool", "turn"])
    assert (res.tool_calls["timeout_s"] == 1.0).all()
    assert calls.loc[("slow", 1), "outcome"] == "tool_timeout"
    assert bool(calls.loc[("slow", 1), "false_kill"])        # 2 s would have finished
    assert not calls.loc[("hang", 1), "false_kill"]          # a hang: a good kill
    assert math.isinf(calls.loc[("hang", 1), "true_ms"])
    run = res.runs.iloc[0]
    assert run["false_kills"] == 2 and run["tool_timeouts"] == 4
    # four calls, each cut at about 1 s of wall time: a loaded machine only adds (7.5 s was seen
    # beside two CPU burners and four test workers); the exact check is the simulated clock's
    assert 3.5 <= run["wasted_s"] <= 15.0
    # the same, decided and replayed on the simulated clock (issue 20: load cannot change it)
    slow, hang = calls.loc[("slow", 1)], calls.loc[("hang", 1)]
    assert slow["sim_duration_ms"] == 1000.0 and hang["sim_wasted_ms"] == 1000.0
    assert bool(slow["sim_false_kill"]) and not hang["sim_false_kill"]
    assert (run["sim_timeouts"], run["sim_false_kills"], run["sim_wasted_s"]) == (4, 2, 4.0)
    assert run["clock_overrides"] == 0


@pytest.fixture
def count(monkeypatch):
    """Register a scenario "count" for this test (monkeypatch removes it afterwards)."""
    monkeypatch.setitem(SCENARIOS, "count", None)
    return lambda *a, **kw: register_scenario("count", _counting_scenario(*a, **kw))


def _counting_scenario(calls: list, fail_at: int | None = None, exc: type = KeyboardInterrupt):
    def scenario(settings, seed, task, **_):
        calls.append(seed)
        if fail_at is not None and len(calls) == fail_at:
            raise exc("stop here")
        return CellOutput({"state": "finished", "success": True, "cost_usd": 0.0,
                           "value": float(seed)})
    return scenario


def test_interrupted_sweep_resumes_without_rerunning_finished_cells(tmp_path, count):
    calls: list = []
    count(calls, fail_at=5)
    exp = Experiment(seeds=10, tasks=["count"], name="resume")
    with pytest.raises(KeyboardInterrupt):
        exp.run(workers=1, progress=False, out=tmp_path)
    assert calls == [0, 1, 2, 3, 4]  # the fifth raised
    store = SweepStore(tmp_path)
    assert sorted(r["cell"]["seed"] for r in store.records().values()) == [0, 1, 2, 3]
    assert store.manifest()["status"] == "interrupted"
    partial = Results.load(tmp_path)  # the journal and the manifest's plan: a partial table
    assert partial.partial and partial.runs["status"].value_counts().to_dict() == {
        "not_run": 6, "ok": 4}
    count(calls)
    res = exp.run(workers=1, progress=False, out=tmp_path)
    assert calls[5:] == [4, 5, 6, 7, 8, 9]  # only the cells that had not finished
    assert res.runs["value"].tolist() == [float(s) for s in range(10)]
    sessions = res.manifest["sessions"]
    assert [(s["status"], s["reused"], s["ran"]) for s in sessions] == [
        ("interrupted", 0, 4), ("complete", 4, 6)]
    lines = (tmp_path / "cells.jsonl").read_text().splitlines()
    assert len(lines) == 10 and len({json.loads(x)["cell_id"] for x in lines}) == 10
    fresh = exp.run(workers=1, progress=False)  # the journal's records make the same table
    pd.testing.assert_frame_equal(_stable(res.runs, "runs"), _stable(fresh.runs, "runs"))


def test_a_torn_last_journal_line_is_ignored_and_trimmed(tmp_path, count):
    calls: list = []
    count(calls)
    exp = Experiment(seeds=3, tasks=["count"])
    exp.run(workers=1, progress=False, out=tmp_path)
    journal = tmp_path / "cells.jsonl"
    lines = journal.read_text().splitlines()
    torn = lines[2][: len(lines[2]) // 2]  # as if killed in the middle of writing line 3
    journal.write_text("\n".join(lines[:2]) + "\n" + torn)
    (tmp_path / "runs.parquet").unlink()
    res = exp.run(workers=1, progress=False, out=tmp_path)
    assert calls == [0, 1, 2, 2] and len(res.runs) == 3
    assert all(json.loads(x) for x in journal.read_text().splitlines())


def test_a_failing_scenario_is_recorded_and_the_sweep_goes_on(count):
    calls: list = []
    count(calls, fail_at=2, exc=ValueError)
    res = Experiment(seeds=3, tasks=["count"]).run(workers=1, progress=False)
    assert res.runs["status"].tolist() == ["ok", "error", "ok"]
    assert res.manifest["counts"] == {"ok": 2, "error": 1}


def test_the_progress_bar_off_a_terminal_counts_runs_without_times(count, capsys):
    """What a notebook or a log keeps must not depend on how busy the machine was."""
    count([])
    Experiment(seeds=3, tasks=["count"], name="counted").run(workers=1)
    bar = capsys.readouterr().err
    assert "counted: 100%" in bar and "3/3 runs" in bar
    assert not re.search(r"\d\d:\d\d|/s\b|s/run", bar)  # no elapsed time, ETA or rate


def test_another_experiment_in_the_same_directory_needs_force(tmp_path):
    Experiment(seeds=1, tasks=["dag"], settings={"dag_calls": 3}).run(
        workers=1, progress=False, out=tmp_path)
    other = Experiment(seeds=2, tasks=["dag"], settings={"dag_calls": 3})
    with pytest.raises(ConfigError) as info:
        other.run(workers=1, progress=False, out=tmp_path)
    assert info.value.code == "sweep_mismatch" and "force=True" in info.value.message
    res = other.run(workers=1, progress=False, out=tmp_path, force=True)
    assert res.manifest["sessions"][-1]["reused"] == 1  # the shared cell was not re-run


def test_saved_tables_and_manifest_round_trip(tmp_path):
    exp = Experiment(grid={"strategy": ["levels", "ready"]}, seeds=2, tasks=["dag"],
                     settings={"dag_calls": 6}, name="dagtest")
    res = exp.run(workers=1, progress=False, out=tmp_path)
    for name in ("runs.parquet", "tool_calls.parquet", "runs.csv", "tool_calls.csv",
                 "manifest.json", "cells.jsonl"):
        assert (tmp_path / name).exists(), name
    back = Results.load(tmp_path)
    pd.testing.assert_frame_equal(back.runs, res.runs)
    pd.testing.assert_frame_equal(back.tool_calls, res.tool_calls)
    m = back.manifest
    assert m["status"] == "complete" and m["seeds"] == [0, 1] and m["cells"] == 4
    assert m["versions"]["pandas"] == pd.__version__ and m["started_at"] <= m["ended_at"]
    assert m["experiment"] == exp.to_dict()
    with pytest.raises(ConfigError, match="not a sweep directory"):
        Results.load(tmp_path / "nothing")


def test_fleet_true_without_a_fleet_names_redis_and_chapter_13(monkeypatch):
    monkeypatch.delenv("AGENTLAB_REDIS_URL", raising=False)
    monkeypatch.setattr(runner_mod, "_FLEET", {})
    exp = Experiment(seeds=1, tasks=["dag"])
    with pytest.raises(ConfigError) as info:
        exp.run(fleet=True, progress=False)
    assert info.value.code == "fleet_not_configured"
    assert "AGENTLAB_REDIS_URL" in info.value.message and "chapter 13" in info.value.message


def test_a_registered_fleet_executor_runs_the_cells(monkeypatch):
    monkeypatch.setattr(runner_mod, "_FLEET", {})
    submitted = []

    class FakeFleet(InProcessCells):
        kind = "fake_fleet"

        def submit(self, cell):
            submitted.append(json.loads(json.dumps(cell.to_dict())))  # what a queue would carry
            return super().submit(cell)

    register_fleet(FakeFleet)
    res = Experiment(seeds=2, tasks=["dag"], settings={"dag_calls": 4}).run(
        fleet=True, progress=False)
    assert len(submitted) == 2 and res.manifest["executor"] == "fake_fleet"
    assert (res.runs["status"] == "ok").all()


def test_cost_cap_stops_scheduling_and_marks_the_rest_skipped(tmp_path):
    exp = Experiment(seeds=8, tasks=["research"], name="capped")
    worst = exp.cells(cost_cap_usd=1.0)[0].budget_usd  # the worst case of one cell
    cap = 1.5 * worst  # a cell spends about a seventh of its worst case here
    res = exp.run(workers=1, progress=False, out=tmp_path, cost_cap_usd=cap)
    status = res.runs["status"].tolist()
    ran = status.count("ok")
    assert 2 <= ran < 8 and status == ["ok"] * ran + ["skipped_cost_cap"] * (8 - ran)
    spent = res.runs["cost_usd"].sum()
    assert spent <= cap and spent + worst > cap  # stopped only when the next could pass it
    assert res.manifest["cost"]["spent_usd"] == pytest.approx(spent)
    more = exp.run(workers=1, progress=False, out=tmp_path, cost_cap_usd=100.0)
    assert (more.runs["status"] == "ok").all()  # skipped cells run once the cap allows
    assert more.manifest["sessions"][-1]["reused"] == ran


def test_a_cells_budget_refuses_the_call_that_could_pass_it():
    exp = Experiment(seeds=1, tasks=["research"], settings={"max_turns": 3})
    cell = exp.cells(cost_cap_usd=1.0)[0]
    tight = type(cell)(**{**cell.to_dict(), "budget_usd": 0.013})  # about one call's worst case
    run = runner_mod.run_cell(tight)["run"]
    # The runtime's own cap (RuntimeConfig.max_cost_usd, chapter 13) stops the run first: a
    # budget that ran out is EXHAUSTED, not an error (the client's check stays as a backstop).
    assert run["state"] == "exhausted" and run["error_codes"] == {"cost_budget": 1}
    assert run["stopped_reason"] == "cost_budget ($0.013)"
    assert 0 < run["cost_usd"] <= tight.budget_usd and run["turns"] >= 2  # refused mid-run


def test_a_cost_cap_needs_prices(monkeypatch):
    exp = Experiment(seeds=1, tasks=["research"], settings={"model": "my-local-model"})
    with pytest.raises(ConfigError) as info:
        exp.run(workers=1, progress=False, cost_cap_usd=1.0)
    assert info.value.code == "unpriced_model" and "register_model" in info.value.message


def test_rate_limits_are_split_across_workers():
    exp = Experiment(seeds=1, tasks=["dag"], run_options={"requests_per_minute": 600})
    seen = []

    class Spy(InProcessCells):
        workers = 3

        def submit(self, cell):
            seen.append(cell.limits)
            return super().submit(cell)

    exp.run(executor=Spy(), progress=False, tokens_per_minute=90_000)
    assert seen == [{"requests_per_minute": 200.0, "tokens_per_minute": 30_000.0}]


def test_progress_callback_sees_every_cell():
    ticks = []
    Experiment(seeds=3, tasks=["dag"], settings={"dag_calls": 3}).run(
        workers=1, progress=lambda done, total: ticks.append((done, total)))
    assert ticks == [(0, 3), (1, 3), (2, 3), (3, 3)]


def test_plan_shows_configs_cells_and_the_cost_estimate():
    exp = Experiment.from_toml(SPEC)
    text = exp.plan(cost_cap_usd=0.5)
    assert "2 configuration(s) x 1 task(s) x 3 seed(s) = 6 cells" in text
    assert "config timeouts=adaptive" in text and "worst case $" in text
    assert "cost cap $0.5000: the worst case does NOT fit" in text
    est = exp.estimate_cost()
    assert est.to_run == 6 and est.worst_case_usd == pytest.approx(6 * est.per_cell_max_usd)

"""``agentlab sweep`` and ``agentlab report``: dry run, a sweep killed half-way, the report."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from agentlab import cli
from agentlab.experiments import Results

ROOT = Path(__file__).resolve().parents[1]

DAG_SPEC = """
name = "dagcli"
seeds = {seeds}
tasks = ["dag"]

[settings]
dag_calls = 12
time_scale = {scale}

[grid]
strategy = ["levels", "ready"]

[[compare]]
metric = "sim_makespan_ms"
a = "strategy=levels"
b = "strategy=ready"
"""


def _spec(tmp_path: Path, seeds: int = 3, scale: float = 0.01) -> Path:
    path = tmp_path / "dag.toml"
    path.write_text(DAG_SPEC.format(seeds=seeds, scale=scale))
    return path


def test_dry_run_prints_the_plan_and_estimate_and_writes_nothing(tmp_path, capsys):
    out = tmp_path / "out"
    spec = ROOT / "data" / "sweeps" / "timeouts.toml"
    assert cli.main(["sweep", str(spec), "--dry-run", "--out", str(out), "--cost-cap", "5"]) == 0
    text = capsys.readouterr().out
    assert "2 configuration(s) x 1 task(s) x 30 seed(s) = 60 cells" in text
    assert "worst case $" in text and "cost cap $5.0000" in text and f"output: {out}" in text
    assert ("on the simulator: that is what a real provider would charge for these tokens; "
            "the simulator itself costs $0") in text
    assert not out.exists()


def test_every_example_spec_is_valid(capsys):
    for spec in sorted((ROOT / "data" / "sweeps").glob("*.toml")):
        assert cli.main(["sweep", str(spec), "--dry-run", "--out", "/nonexistent/x"]) == 0, spec
    assert "1000 cells" in capsys.readouterr().out


def test_sweep_then_report(tmp_path, capsys):
    spec, out = _spec(tmp_path), tmp_path / "sweep"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--workers", "1",
                     "--no-progress"]) == 0
    assert "dagcli: 6 cells, 6 ran, 0 reused" in capsys.readouterr().out
    assert cli.main(["report", str(out)]) == 0
    report = (out / "report.md").read_text()
    for text in ("# Sweep report: dagcli", "## Runs per configuration", "## Tool latency "
                 "percentiles", "## Paired comparisons", "strategy=ready - strategy=levels",
                 "![percentiles](plots/percentiles.png)"):
        assert text in report, text
    pngs = sorted(p.name for p in (out / "plots").glob("*.png"))
    assert pngs == ["compare_0.png", "ecdf_step.png", "percentiles.png"]
    assert all((out / "plots" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)


def test_cli_errors_are_one_line_with_exit_code_2(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('seeds = 2\ntasks = ["dag"]\n[grid]\nstrategy_x = ["ready"]\n')
    assert cli.main(["sweep", str(bad), "--dry-run"]) == 2
    assert "[invalid_spec] unknown grid key 'strategy_x'" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "[not_a_sweep]" in capsys.readouterr().err


def test_a_sweep_killed_half_way_resumes_without_rerunning_finished_cells(tmp_path):
    spec, out = _spec(tmp_path, seeds=12, scale=0.3), tmp_path / "sweep"
    journal = out / "cells.jsonl"
    cmd = [sys.executable, "-m", "agentlab.cli", "sweep", str(spec), "--out", str(out),
           "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal.read_text().splitlines()) >= 6:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the sweep ended before it was killed: {proc.stderr.read()}"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the sweep and its pool workers, mid-run
        proc.wait(timeout=30)
    before = [json.loads(line) for line in journal.read_text().splitlines() if line.endswith("}")]
    assert 6 <= len(before) < 24
    assert json.loads((out / "manifest.json").read_text())["status"] == "running"  # no goodbye
    assert cli.main(["sweep", str(spec), "--out", str(out), "--workers", "1",
                     "--no-progress"]) == 0
    after = [json.loads(line) for line in journal.read_text().splitlines()]
    ids = [r["cell_id"] for r in after]
    assert len(ids) == len(set(ids)) == 24  # every cell exactly once
    for old, new in zip(before, after):  # finished cells kept as they were, not re-run
        assert (old["cell_id"], old["pid"], old["started_at"]) == (
            new["cell_id"], new["pid"], new["started_at"])
    res = Results.load(out)
    assert (res.runs["status"] == "ok").all() and len(res.runs) == 24
    assert res.manifest["sessions"][-1]["reused"] == len(before)
    assert isinstance(pd.read_parquet(out / "tool_calls.parquet"), pd.DataFrame)


def test_ctrl_c_prints_how_to_resume(tmp_path, capsys, monkeypatch):
    from agentlab.experiments import SCENARIOS, CellOutput, register_scenario
    calls = []

    def scenario(settings, seed, task, **_):
        calls.append(seed)
        if seed == 2:
            raise KeyboardInterrupt
        return CellOutput({"state": "finished", "success": True, "cost_usd": 0.0})

    monkeypatch.setitem(SCENARIOS, "ctrl_c", None)  # removed again after the test
    register_scenario("ctrl_c", scenario)
    spec = tmp_path / "s.toml"
    spec.write_text('name = "c"\nseeds = 4\ntasks = ["ctrl_c"]\n')
    out = tmp_path / "out"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--workers", "1",
                     "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; 2 finished cell(s)" in err and "again to resume" in err

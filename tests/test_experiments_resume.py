"""Issue 20, item 5: resume you can trust — errored cells run again, other code is refused,
a partial folder gets a partial report, and ``kill -9`` of a sweep leaves no pool workers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentlab import cli
from agentlab.errors import ConfigError
from agentlab.experiments import SCENARIOS, CellOutput, Experiment, register_scenario
from agentlab.experiments.store import SweepStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def flaky(monkeypatch):
    """A scenario "flaky" (setting ``x``) that raises for the seeds in ``broken``, and a Ctrl+C
    once ``calls`` (the seeds it ran) reaches ``stop[0]`` entries."""
    broken: set = set()
    calls: list = []
    stop: list = [None]

    def scenario(settings, seed, task, **_):
        if len(calls) == stop[0]:
            raise KeyboardInterrupt
        calls.append(seed)
        if seed in broken:
            raise ValueError(f"bug for seed {seed}")
        return CellOutput({"state": "finished", "success": True, "cost_usd": 0.0,
                           "value": float(seed)})

    monkeypatch.setitem(SCENARIOS, "flaky", None)  # removed again after the test
    register_scenario("flaky", scenario, {"x": 0})
    return SimpleNamespace(broken=broken, calls=calls, stop=stop)


def test_errored_cells_run_again_once_the_scenario_is_fixed(tmp_path, flaky, capsys):
    broken, calls = flaky.broken, flaky.calls
    broken.add(1)
    exp = Experiment(seeds=3, tasks=["flaky"], name="flaky")
    first = exp.run(workers=1, progress=False, out=tmp_path)
    assert first.runs["status"].tolist() == ["ok", "error", "ok"]
    spec = tmp_path / "flaky.toml"
    spec.write_text('name = "flaky"\nseeds = 3\ntasks = ["flaky"]\n')
    for flag, finished in (("--retry-errors", 2), ("--no-retry-errors", 3)):
        assert cli.main(["sweep", str(spec), "--out", str(tmp_path), "--dry-run", flag]) == 0
        assert f"= 3 cells ({finished} already finished)" in capsys.readouterr().out
    kept = exp.run(workers=1, progress=False, out=tmp_path, retry_errors=False)
    assert calls == [0, 1, 2] and kept.runs["status"].tolist() == ["ok", "error", "ok"]
    broken.clear()  # the bug is fixed
    res = exp.run(workers=1, progress=False, out=tmp_path)
    assert calls == [0, 1, 2, 1]  # only the cell that raised
    assert res.runs["status"].tolist() == ["ok"] * 3 and res.runs["value"].tolist() == [0, 1, 2]
    last = res.manifest["sessions"][-1]
    assert (last["reused"], last["ran"], last["retried"]) == (2, 1, 1)


def test_every_record_carries_the_code_identity(tmp_path, flaky):
    Experiment(seeds=2, tasks=["flaky"]).run(workers=1, progress=False, out=tmp_path)
    for rec in SweepStore(tmp_path).records().values():
        code = rec["code"]
        assert code["scenario"] == "flaky" and len(code["scenario_hash"]) == 16
        assert set(code) >= {"agentlab", "git_commit", "git_dirty", "dirty_hash"}


def _change_recorded_identity(directory: Path) -> None:
    """As if the journal had been written by another commit of the package."""
    journal = directory / "cells.jsonl"
    records = [json.loads(line) for line in journal.read_text().splitlines()]
    for rec in records:
        rec["code"]["git_commit"] = "0" * 40
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_resuming_with_other_code_refuses_without_force(tmp_path, flaky, capsys):
    calls = flaky.calls
    exp = Experiment(seeds=3, tasks=["flaky"], name="flaky")
    exp.run(workers=1, progress=False, out=tmp_path)
    _change_recorded_identity(tmp_path)
    with pytest.raises(ConfigError) as info:
        exp.run(workers=1, progress=False, out=tmp_path)
    err = info.value
    assert err.code == "code_changed" and err.details["cells"] == 3
    assert err.details["differs"]["git_commit"][0] == "0" * 40
    assert "3 finished cell(s)" in err.message and "--force" in err.message
    assert calls == [0, 1, 2]  # refused before anything ran
    spec = tmp_path / "flaky.toml"
    spec.write_text('name = "flaky"\nseeds = 3\ntasks = ["flaky"]\n')
    for extra in ([], ["--dry-run"]):
        assert cli.main(["sweep", str(spec), "--out", str(tmp_path), "--workers", "1",
                         "--no-progress", *extra]) == 2
        assert "[code_changed]" in capsys.readouterr().err
    with pytest.warns(RuntimeWarning, match="reusing 3 cell"):
        res = exp.run(workers=1, progress=False, out=tmp_path, force=True)
    assert calls == [0, 1, 2] and res.manifest["sessions"][-1]["reused_other_code"] == 3


def test_report_on_an_interrupted_folder_is_marked_partial(tmp_path, flaky, capsys):
    flaky.stop[0] = 3  # Ctrl+C as the fourth cell starts
    exp = Experiment(grid={"x": [1, 2]}, seeds=3, tasks=["flaky"], name="half")
    with pytest.raises(KeyboardInterrupt):
        exp.run(workers=1, progress=False, out=tmp_path)
    finished = len(SweepStore(tmp_path).records())
    assert 1 <= finished < 6
    assert cli.main(["report", str(tmp_path)]) == 0
    assert "(a partial report: the sweep is interrupted)" in capsys.readouterr().out
    report = (tmp_path / "report.md").read_text()
    assert "**Partial report**: the sweep is interrupted" in report
    assert f"{finished} of 6 cells are in its journal" in report
    assert "x=2 not_run: 3" in report  # every configuration has its rows
    assert "- machine load (start, end of the last session): load average" in report
    assert "- code (last session): flaky: git " in report


def test_report_on_a_folder_with_no_finished_cell_shows_zero_pairs(tmp_path, flaky):
    flaky.stop[0] = 0  # Ctrl+C before the first cell finishes
    exp = Experiment(grid={"x": [1, 2]}, seeds=2, tasks=["flaky"], name="none",
                     compare=[{"metric": "value", "a": "x=1", "b": "x=2"}])
    with pytest.raises(KeyboardInterrupt):
        exp.run(workers=1, progress=False, out=tmp_path)
    assert cli.main(["report", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "0 of 4 cells are in its journal" in report
    assert "| value | x=2 - x=1 | 0 |" in report  # the planned comparison, with no pairs yet


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_kill_9_of_the_sweep_leaves_no_pool_workers(tmp_path):
    spec, out = tmp_path / "dag.toml", tmp_path / "sweep"
    spec.write_text('name = "slow"\nseeds = 20\ntasks = ["dag"]\n[settings]\ndag_calls = 12\n'
                    'time_scale = 0.3\n')
    cmd = [sys.executable, "-m", "agentlab.cli", "sweep", str(spec), "--out", str(out),
           "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            workers = _children(proc.pid)
            if len(workers) >= 2 and (out / "cells.jsonl").exists():
                break
            time.sleep(0.1)
        assert proc.poll() is None and len(workers) >= 2, "the pool never started"
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does
        proc.wait(timeout=30)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert [p for p in workers if _alive(p)] == []
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left, if the test failed
        except ProcessLookupError:
            pass
    assert cli.main(["report", str(out)]) == 0  # killed: the manifest still says running
    assert "**Partial report**: the sweep is running" in (out / "report.md").read_text()


def test_tables_are_written_through_the_packages_atomic_write(tmp_path, monkeypatch):
    from agentlab import atomic
    from agentlab.errors import StateError
    from agentlab.experiments.store import replace_file

    synced = []
    monkeypatch.setattr(atomic.os, "fsync", lambda fd: synced.append(fd))
    target = tmp_path / "runs.csv"
    replace_file(target, lambda f: f.write(b"a,b\n1,2\n"))
    assert target.read_bytes() == b"a,b\n1,2\n" and len(synced) >= 1  # the file was fsynced

    def half_then_fail(f):
        f.write(b"x,")
        raise OSError("disk full")

    with pytest.raises(OSError):
        replace_file(target, half_then_fail)
    monkeypatch.setattr(atomic.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("ro")))
    with pytest.raises(StateError) as info:
        replace_file(target, lambda f: f.write(b"new"))
    assert info.value.code == "sweep_write_failed"
    assert target.read_bytes() == b"a,b\n1,2\n" and [p.name for p in tmp_path.iterdir()] == [
        "runs.csv"]  # the old content, and no temporary file left behind

"""``agentlab worker | submit | runs`` (chapter 13): Redis from the session fixture; the one
test that needs a worker runs Celery's in-thread test worker on the fleet's own app."""
from __future__ import annotations

import json

import pytest
from celery.contrib.testing.worker import start_worker

from agentlab.cli import main
from agentlab.experiments import MEASURED, Experiment
from agentlab.experiments import runner as runner_mod
from agentlab.cli.submit import tool_limits
from agentlab.fleet import tasks
from agentlab.fleet.app import FleetConfig, celery_settings
from agentlab.fleet.control import Fleet
from agentlab.fleet.server import free_port


@pytest.fixture
def fleet_env(redis_url, monkeypatch, tmp_path):
    monkeypatch.setenv("AGENTLAB_REDIS_URL", redis_url)
    monkeypatch.setenv("AGENTLAB_FLEET_DIR", str(tmp_path))
    return Fleet()


@pytest.mark.parametrize("argv", [["submit", "Research asyncio"], ["runs", "list"],
                                  ["runs", "cancel", "run-x"], ["worker"]])
def test_unreachable_redis_is_one_line_and_exit_code_2(argv, monkeypatch, capsys):
    monkeypatch.setenv("AGENTLAB_REDIS_URL", f"redis://127.0.0.1:{free_port()}/0")
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"agentlab {argv[0]}: cannot reach Redis at redis://127.0.0.1:")
    assert "set AGENTLAB_REDIS_URL" in err


def test_submit_list_show_and_cancel_a_queued_run(fleet_env, capsys):
    assert main(["submit", "Research asyncio", "--tool-limit", "web_search=2"]) == 0
    run_id = capsys.readouterr().out.strip()
    assert fleet_env.show(run_id)["spec"]["tool_limits"] == {"web_search": 2}
    assert main(["runs", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["run_id", "state", "att"]
    assert lines[1].split()[:3] == [run_id, "queued", "0"]
    assert main(["runs", "show", run_id]) == 0
    assert json.loads(capsys.readouterr().out)["task"] == "Research asyncio"
    assert main(["runs", "cancel", run_id]) == 0
    assert capsys.readouterr().out == f"{run_id}: cancelled\n"


def test_runs_show_of_an_unknown_run_says_so(fleet_env, capsys):
    assert main(["runs", "show", "run-nope"]) == 2
    assert capsys.readouterr().err == ("agentlab runs: no fleet run 'run-nope'; `agentlab runs "
                                       "list` shows the runs this Redis knows\n")


def test_runs_list_says_what_a_paused_run_waits_for():
    from agentlab.cli.runs import format_runs
    rec = {"run_id": "run-p", "state": "paused", "attempts": 1, "worker": "w1@h", "task": "t",
           "result": {"turns": 4}, "pending": [{"tool": "write_file", "call_id": "call_9"}]}
    line = format_runs([rec])[1]
    assert line.split()[:5] == ["run-p", "paused", "1", "w1@h", "4"]
    assert line.endswith("waits for approval of write_file (call_9): agentlab runs "
                         "approve|reject run-p")


def test_bad_tool_limit_is_refused():
    with pytest.raises(ValueError, match="use TOOL=N with N >= 1"):
        tool_limits(["web_search=0"])


@pytest.fixture
def thread_worker(fleet_env):
    """Celery's in-thread worker on the fleet's app, pointed at this test's Redis."""
    settings = celery_settings(FleetConfig.from_env())
    saved = {k: tasks.app.conf[k] for k in settings}
    tasks.app.conf.update(settings)
    try:
        with start_worker(tasks.app, pool="solo", perform_ping_check=False, queues=["agentlab"]):
            yield
    finally:
        tasks.app.conf.update(saved)


def test_submit_wait_runs_on_a_worker_and_prints_the_answer(fleet_env, thread_worker, capsys,
                                                            tmp_path):
    code = main(["submit", "Research Python asyncio best practices", "--wait",
                 "--time-scale", "0", "--timeout", "30"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, out
    assert out[1].startswith("finished: 6 turns, attempts 1, worker ")
    assert fleet_env.show(out[0])["state"] == "finished"
    folder = tmp_path / "output" / out[0]  # AGENTLAB_FLEET_DIR is tmp_path
    written = sorted(p.name for p in folder.iterdir())
    assert written  # the researcher writes its report
    assert out[-2:] == [f"files of the run: {folder.resolve()}: {', '.join(written)}",
                        f"the run's record: agentlab runs show {out[0]}"]


def test_runs_reject_resumes_the_run_and_the_rejected_call_never_runs(fleet_env, thread_worker,
                                                                      capsys, tmp_path):
    run_id = fleet_env.submit("Research Python asyncio best practices",
                              approve_tools=["write_file"])
    rejected = []
    for _ in range(3):  # the simulated researcher asks once more after a refusal
        rec = fleet_env.wait(run_id, timeout_s=30)[0]
        if rec["state"] != "paused":
            break
        rejected.append(rec["pending"][0]["call_id"])
        assert main(["runs", "reject", run_id, rejected[-1], "--reason", "not today"]) == 0
        # the state as the command read it back: queued, or already taken by the worker (CI
        # saw "running"); what counts is checked below, that the rejected call never ran
        said = capsys.readouterr().out
        assert said in {f"{run_id}: {state}\n" for state in ("queued", "running", "paused",
                                                               "finished")}, said
    assert rec["state"] == "finished" and rejected
    runs = fleet_env.ledger.executions(run_id)
    assert not [c for c in rejected if f"{run_id}:{c}" in runs]   # never ran
    assert not (tmp_path / "output" / run_id / "asyncio-report.md").exists()
    assert main(["runs", "approve", run_id]) == 2                   # nothing is waiting now
    assert "is finished, not paused" in capsys.readouterr().err


def test_an_experiment_runs_its_cells_on_the_fleet(fleet_env, thread_worker, monkeypatch):
    monkeypatch.setattr(runner_mod, "_FLEET", {})  # found through the entry point, not imported
    exp = Experiment(seeds=2, tasks=["dag"], settings={"dag_calls": 4})
    res = exp.run(fleet=True, progress=False)
    assert res.manifest["executor"] == "fleet" and len(res.runs) == 2
    assert (res.runs["status"] == "ok").all()
    # the same spec and seeds give the same tables on the fleet as in this process (wall times
    # and other measured columns aside)
    local = exp.run(workers=1, progress=False)
    for table in ("runs", "tool_calls"):
        drop = [c for c in MEASURED[table] if c in getattr(res, table)]
        assert getattr(res, table).drop(columns=drop).equals(getattr(local, table).drop(columns=drop))


def test_a_delivery_for_an_unknown_run_is_kept_and_rejected_not_acked_silently(fleet_env,
                                                                                 thread_worker):
    import json as _json
    import time as _time

    from agentlab.fleet.app import TASK_NAME
    task_id = fleet_env.app.send_task(TASK_NAME, args=["run-from-elsewhere"]).id
    key = f"{fleet_env.cfg.prefix}unknown"
    deadline = _time.monotonic() + 20
    while not fleet_env.client.llen(key):
        assert _time.monotonic() < deadline, "the delivery was not put on record"
        _time.sleep(0.05)
    kept = _json.loads(fleet_env.client.lindex(key, 0))
    assert kept["run_id"] == "run-from-elsewhere" and kept["task_id"] == task_id


def test_a_worker_that_dies_at_start_up_exits_non_zero(redis_url, tmp_path):
    """Tools that import in the shell but cannot be built in the worker (here: they refuse to
    run inside a worker process): the worker dies at start-up and says so with its status."""
    import os as _os
    import subprocess as _sp
    import sys as _sys

    (tmp_path / "badtools.py").write_text(
        "import os\n"
        "from agentlab.tools import ToolRegistry\n"
        "def make_registry():\n"
        "    if os.environ.get('AGENTLAB_WORKER_INSTANCE'):\n"
        "        raise RuntimeError('no database inside the worker')\n"
        "    return ToolRegistry()\n")
    env = {**_os.environ, "AGENTLAB_REDIS_URL": redis_url,
           "PYTHONPATH": _os.pathsep.join([str(tmp_path), *_sys.path])}
    done = _sp.run([_sys.executable, "-m", "agentlab.cli", "worker", "--tools",
                    "badtools:make_registry"], env=env, capture_output=True, text=True,
                   timeout=120)
    assert done.returncode != 0, (done.stdout + done.stderr)[-800:]
    assert "no database inside the worker" in done.stdout + done.stderr

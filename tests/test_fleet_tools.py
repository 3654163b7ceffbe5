"""Your own tools on the fleet (chapter 13): a module outside the package, on the workers'
PYTHONPATH, whose ``write_file`` appends one line per execution to a file of its own: the
side effect is counted outside agentlab's ledger, by the tool itself."""
from __future__ import annotations

import os
import sys
import textwrap
import time

import pytest

from agentlab.cli import main
from agentlab.fleet.local import LocalFleet
from agentlab.fleet.server import find_redis_server

TASK = "Research Python asyncio best practices"
TOOLS = "mytools:make_registry"
MODULE = '''
    import os
    from pathlib import Path

    from agentlab.research import research_tools


    def make_registry(output_dir):
        """The research tools, with a write_file whose every execution leaves a line."""
        registry = research_tools(output_dir, answers={"*": "Use your judgement."})
        effects = Path(os.environ["MYTOOLS_EFFECTS"])

        def write_file(filename: str, content: str, idempotency_key: str = "") -> str:
            """Write a text file into the output folder.

            Args:
                filename: File name inside the output folder, e.g. 'report.md'.
                content: The text to write.
            """
            with open(effects, "a") as fh:
                fh.write(f"{idempotency_key} {filename}\\n")
            return f"Wrote {len(content)} chars to {filename}"

        registry.register(write_file, name="write_file", replace=True, side_effects=True)
        return registry
'''

if find_redis_server() is None:  # pragma: no cover - the CI image installs redis-server
    pytest.skip("redis-server is not installed", allow_module_level=True)


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    folder = tmp_path / "userpkg"
    folder.mkdir()
    (folder / "mytools.py").write_text(textwrap.dedent(MODULE))
    effects = tmp_path / "effects.txt"
    monkeypatch.setenv("MYTOOLS_EFFECTS", str(effects))
    monkeypatch.syspath_prepend(str(folder))
    return {"PYTHONPATH": os.pathsep.join([str(folder), *sys.path]),
            "MYTOOLS_EFFECTS": str(effects)}, effects


def turn_started(f, run_id, turn):
    return next((s for s in f.ledger.steps(run_id)
                 if s["turn"] == turn and s["event"] == "turn_start"), None)


def wait_for(pred, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_user_tool_runs_exactly_once_through_two_worker_kills(user_module, tmp_path):
    env, effects = user_module
    with LocalFleet(workers=2, lease_ttl_s=2, tools=TOOLS, extra_env=env,
                    fleet_dir=str(tmp_path / "fleet")) as lf:
        f = lf.fleet
        run_id = f.submit(TASK, tools=TOOLS, tool_latency_s=0.5, time_scale=1.0)
        for turn in (4, 6):  # before write_file (turn 5) runs, and after it was recorded
            wait_for(lambda: turn_started(f, run_id, turn))
            victim = next(w for w in lf.workers
                          if turn_started(f, run_id, turn)["worker"].startswith(f"{w.name}@"))
            victim.kill()
            victim.start()
        rec = f.wait(run_id, timeout_s=60)[0]
    assert rec["state"] == "finished" and rec["spec"]["tools"] == TOOLS
    assert rec["result"]["turns"] == 6 and "Report: wrote" in rec["result"]["content"]
    assert rec["attempts"] == 3 and rec["infra_losses"] == 2
    lines = effects.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{run_id}:")   # once, with its key


def test_a_worker_without_the_runs_tools_refuses_it_clearly(user_module, tmp_path):
    with LocalFleet(workers=1, fleet_dir=str(tmp_path)) as lf:   # no --tools
        rec = lf.fleet.wait(lf.fleet.submit(TASK, tools=TOOLS), timeout_s=30)[0]
    assert rec["state"] == "error" and rec["error"]["code"] == "tools_missing"
    assert f"agentlab worker --tools {TOOLS}" in rec["error"]["message"]


def test_agentlab_worker_refuses_tools_it_cannot_import(redis_url, monkeypatch, capsys):
    monkeypatch.setenv("AGENTLAB_REDIS_URL", redis_url)
    assert main(["worker", "--tools", "no_such_module:make_registry"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot import 'no_such_module'" in err

"""Issue 20, item 4: a sweep's tables are the same at any machine load, outside ``MEASURED``.

The tools scenario decides its timeouts on the simulated clock (``SimulatedTimeouts``), so a
second run of the same spec while two CPU burners keep both cores busy gives the same runs
and tool calls: outcomes, false kills, tokens and cost included.
"""
from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest

from agentlab.experiments import (LOAD_SENSITIVE, MEASURED, Experiment,
                                  comparison_metrics)
from agentlab.experiments.workloads import SimulatedTimeouts
from agentlab.sim.tool_latency import Constant, Hanging, replay
from agentlab.timeouts import AdaptiveTimeoutManager

# a 1 s timeout is 2 ms of real time here: a real-clock timer would be decided by the load
SMALL = dict(grid={"timeouts": ["fixed", "adaptive"]}, seeds=3, tasks=["tools"], name="small",
             settings={"workload": "heavy_tail", "turns": 3, "time_scale": 0.002})
BURN = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


def test_same_tables_outside_measured_while_two_burners_keep_the_cores_busy(tmp_path):
    exp = Experiment(**SMALL)
    quiet = exp.run(workers=2, progress=False, out=tmp_path / "quiet")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(2)]
    try:
        loaded = exp.run(workers=2, progress=False, out=tmp_path / "loaded")
    finally:
        for p in burners:
            p.kill()
            p.wait(timeout=10)
    for table in ("runs", "tool_calls"):
        assert not set(MEASURED[table]) & set(quiet.without_measured(table).columns)
        pd.testing.assert_frame_equal(quiet.without_measured(table),
                                      loaded.without_measured(table))
    runs = loaded.runs
    assert (runs["status"] == "ok").all() and (runs["clock_overrides"] == 0).all()
    assert runs["tool_timeouts"].sum() > 0  # calls were killed: the comparison is not empty
    assert (runs["tool_timeouts"] == runs["sim_timeouts"]).all()
    assert math.isfinite(loaded.manifest["load"]["start"]["sleep_overshoot_ms_median"])
    assert loaded.manifest["sessions"][-1]["load"]["end"]["cpus"] >= 1


def test_simulated_timeouts_decide_as_replay_does():
    durations = Hanging(Constant(3000), hang_rate=0.3, seed=4).samples(40)
    mine, ref = (AdaptiveTimeoutManager(initial_timeout=5.0, min_timeout=1.0) for _ in "ab")
    policy = SimulatedTimeouts(mine)
    got = [policy.decide("api", n, d) for n, d in enumerate(durations)]
    expected = replay(ref, durations, "api")
    assert [k for _, k in got] == expected.killed
    assert [t for t, _ in got] == expected.timeouts_s
    assert policy.decision("api", 3) == got[3] and policy.decision("api", 99) is None


def test_comparison_metrics_leave_out_keys_settings_measured_and_load_sensitive():
    res = Experiment(grid={"timeouts": ["fixed", "adaptive"]}, seeds=1, tasks=["tools"],
                     settings={"workload": "steady", "turns": 1, "time_scale": 0.01}
                     ).run(workers=1, progress=False)
    runs = comparison_metrics(res)
    assert {"success", "total_tokens", "cost_usd", "sim_wasted_s", "sim_false_kills"} <= set(runs)
    banned = {*MEASURED["runs"], *LOAD_SENSITIVE["runs"], "seed", "index", "timeouts", "config"}
    assert not banned & set(runs)
    calls = comparison_metrics(res, "tool_calls")
    assert "sim_duration_ms" in calls and "duration_ms" not in calls and "turn" not in calls
    assert "timeouts" in comparison_metrics(res.runs.assign(timeouts=1.0))  # a bare table
    with pytest.raises(ValueError, match="table must be"):
        comparison_metrics(res, "run")

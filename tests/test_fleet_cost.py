"""The fleet's bill (chapter 13): every model call of every attempt is charged to the run's
record, and ``max_cost_usd`` is kept on that bill, a killed attempt's calls included."""
from __future__ import annotations

import time

import pytest

from agentlab.fleet.local import LocalFleet
from agentlab.fleet.runs import RunSpec
from agentlab.fleet.server import find_redis_server
from agentlab.models import cost_usd
from agentlab.runtime.cost import worst_case_output_tokens
from agentlab.fleet.agent import fleet_llm

TASK = "Research Python asyncio best practices"

if find_redis_server() is None:  # pragma: no cover - the CI image installs redis-server
    pytest.skip("redis-server is not installed", allow_module_level=True)


def wait_for(pred, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def calls(f, run_id):
    """Each answered model call of the run: (usd, prompt tokens, completion tokens)."""
    rows = [x.decode().split() for x in
            f.client.lrange(f"{f.cfg.prefix}ledger:model:{run_id}", 0, -1)]
    return [(float(usd), int(p), int(c)) for _, usd, p, c in rows]


def test_a_cap_counts_the_model_calls_of_a_killed_attempt(tmp_path):
    llm = fleet_llm(RunSpec(TASK))
    worst = cost_usd(llm.model, 0, worst_case_output_tokens(llm))   # a call's possible answer
    with LocalFleet(workers=2, lease_ttl_s=2, fleet_dir=str(tmp_path)) as lf:
        f = lf.fleet
        plain = f.wait(f.submit(TASK, time_scale=0.5), timeout_s=30)[0]   # no kill, no cap
        made = calls(f, plain["run_id"])
        assert plain["model_calls"] == plain["result"]["turns"] == len(made) == 6
        assert plain["spent_usd"] == pytest.approx(sum(u for u, _, _ in made), abs=1e-5)
        assert plain["spent_usd"] == pytest.approx(plain["result"]["cost_usd"], abs=1e-5)
        # A cap the same run, unkilled, stays within: before its last call it has spent the
        # first five calls, and that call's worst case is its prompt + the longest answer.
        # Killed while its fifth call is out, it pays for that call twice (about its prompt
        # again): more than the half of it the cap leaves over.
        price = lambda p: cost_usd(llm.model, p, 0)
        cap = sum(u for u, _, _ in made[:5]) + price(made[5][1]) + worst + price(made[4][1]) / 2
        calm = f.wait(f.submit(TASK, time_scale=0.5, max_cost_usd=cap), timeout_s=30)[0]
        assert calm["state"] == "finished"
        run_id = f.submit(TASK, time_scale=0.5, max_cost_usd=cap)
        wait_for(lambda: f.show(run_id)["model_calls"] >= 5)  # turn 5's call sent, then kill
        holder = f.show(run_id)["worker"]
        victim = next(w for w in lf.workers if holder.startswith(f"{w.name}@"))
        victim.kill()
        rec = f.wait(run_id, timeout_s=40)[0]
    assert rec["attempts"] == 2 and rec["model_calls"] > rec["result"]["turns"]
    assert rec["state"] == "exhausted" and rec["result"]["stopped_reason"] == f"cost_budget (${cap:g})"
    assert rec["spent_usd"] <= cap and rec["result"]["turns"] == 5   # stopped before call 6

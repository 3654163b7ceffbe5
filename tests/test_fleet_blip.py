"""The fleet through a Redis outage: Redis (with an append-only file) killed with -9 in the
middle of runs and restarted; every run finishes, and no call whose result was recorded runs
again. The visibility timeout is 30 s, so a run back within seconds was handed on by the
reaper, not by the broker's backstop."""
from __future__ import annotations

import time

import pytest

from agentlab.fleet.local import LocalFleet
from agentlab.fleet.server import find_redis_server

TASK = "Research Python asyncio best practices"

if find_redis_server() is None:  # pragma: no cover - the CI image installs redis-server
    pytest.skip("redis-server is not installed", allow_module_level=True)


@pytest.fixture
def lf(tmp_path):
    fleet = LocalFleet(workers=2, visibility_timeout_s=30, lease_ttl_s=2, appendonly=True,
                       fleet_dir=str(tmp_path))
    yield fleet
    fleet.close()


def wait_for(pred, timeout_s=30.0, poll_s=0.05):
    deadline = time.monotonic() + timeout_s
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(poll_s)


def running_at_turn(f, run_id, turn):
    return any(s["turn"] >= turn for s in f.ledger.steps(run_id))


def test_a_redis_outage_mid_run_strands_no_run_and_reruns_no_recorded_call(lf):
    f = lf.fleet
    ids = [f.submit(TASK, tool_latency_s=0.5) for _ in range(3)]
    wait_for(lambda: sum(running_at_turn(f, i, 2) for i in ids) >= 2)  # two runs in flight
    lf.redis.kill()          # kill -9: every worker's lease check and ledger write now fails
    time.sleep(2.0)
    lf.redis.restart()       # same port, same append-only file
    back = time.monotonic()
    recs = f.wait(ids, timeout_s=60)
    assert [r["state"] for r in recs] == ["finished"] * 3
    assert time.monotonic() - back < 25      # well before the 30 s visibility timeout
    assert f.ledger.reexecuted() == 0        # no call that completed ran again
    assert all(f.ledger.steps_twice(i) == [] for i in ids)
    assert sum(r["infra_losses"] for r in recs) >= 2   # the runs in flight lost an attempt...
    assert all(r["attempts"] - 1 == r["infra_losses"] for r in recs)  # ...none crashed

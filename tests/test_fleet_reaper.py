"""The reaper, atomic submit and a Redis that goes away under a ``Fleet`` (chapter 13), against
a real redis-server and no worker: the broker's queue is read as the workers would see it."""
from __future__ import annotations

import threading
import time

import pytest
from kombu.exceptions import OperationalError

from agentlab.cli import main
from agentlab.fleet.app import QUEUE, FleetConfig, broker_key, fleet_prefix
from agentlab.fleet.control import Fleet, FleetUnavailableError
from agentlab.fleet.reach import unavailable as fleet_unavailable
from agentlab.fleet.reaper import Reaper, run_of_message
from agentlab.fleet.runs import RunSpec, new_fleet_run_id
from agentlab.fleet.server import RedisServer


@pytest.fixture
def fleet(redis_url, tmp_path):
    cfg = FleetConfig(redis_url=redis_url, prefix=fleet_prefix(redis_url),
                      checkpoints=redis_url, fleet_dir=str(tmp_path))
    f = Fleet(cfg)
    f.client.delete(broker_key(cfg, QUEUE))  # the session server's queue is shared by tests
    return f


def queued_runs(f):
    return [run_of_message(m) for m in f.client.lrange(broker_key(f.cfg, QUEUE), 0, -1)]


def test_a_failed_send_leaves_no_ghost_and_says_redis_unavailable(fleet, monkeypatch):
    def refuse(*a, **k):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(fleet.app, "send_task", refuse)
    before = set(fleet.records.ids())
    with pytest.raises(FleetUnavailableError) as info:
        fleet.submit("Research asyncio")
    assert info.value.code == "redis_unavailable" and info.value.retryable
    [run_id] = set(fleet.records.ids()) - before
    rec = fleet.show(run_id)
    assert rec["state"] == "submit_failed" and rec["error"]["code"] == "submit_failed"


def test_the_reaper_lays_ghosts_resends_lost_messages_and_leaves_the_rest(fleet):
    ghost, lost, orphan = (new_fleet_run_id() for _ in range(3))
    for run_id in (ghost, lost, orphan):
        fleet.records.create(run_id, RunSpec("Research asyncio"))
    fleet.records.update(lost, enqueued=1)               # sent once, message gone since
    fleet.records.update(orphan, state="running", enqueued=1)   # its worker died, no lease
    fine = fleet.submit("Research asyncio")              # queued, its message waiting
    time.sleep(0.05)
    reaper = Reaper(fleet.cfg, fleet.app, grace_s=0.01)
    done = reaper.reap_once()
    assert done == {"restored": [], "resent": [lost, orphan], "ghosts": [ghost], "front": []}
    assert fleet.show(ghost)["state"] == "submit_failed"
    assert sorted(queued_runs(fleet)) == sorted([fine, lost, orphan])
    assert fleet.show(orphan)["infra_losses"] == 1 and fleet.show(lost)["infra_losses"] == 0
    fleet.client.delete(f"{fleet.cfg.prefix}reaper")     # the next interval
    # the started run waits behind two new ones: resumes go first
    assert reaper.reap_once() == {"restored": [], "resent": [], "ghosts": [], "front": [orphan]}
    assert queued_runs(fleet)[-1] == orphan          # consumers pop from the right


def test_a_running_run_with_a_live_lease_is_left_alone(fleet):
    run_id = new_fleet_run_id()
    fleet.records.create(run_id, RunSpec("Research asyncio"))
    fleet.records.update(run_id, state="running", enqueued=1)
    fleet.client.set(f"{fleet.cfg.prefix}lease:{run_id}", "w1", px=5000)
    time.sleep(0.05)
    assert Reaper(fleet.cfg, fleet.app, grace_s=0.01).reap_once()["resent"] == []


@pytest.fixture
def doomed(tmp_path, monkeypatch):
    """A Redis of this test's own, to be stopped under a ``Fleet`` that already connected."""
    server = RedisServer.start()
    monkeypatch.setenv("AGENTLAB_REDIS_URL", server.url)
    monkeypatch.setenv("AGENTLAB_FLEET_DIR", str(tmp_path))
    yield server
    server.stop()


def test_every_fleet_method_says_redis_unavailable_when_redis_goes_away(doomed):
    f = Fleet()
    run_id = f.submit("Research asyncio")
    doomed.kill()
    for call in (lambda: f.show(run_id), f.runs, lambda: f.wait(run_id, timeout_s=1),
                 lambda: f.cancel(run_id), lambda: f.submit("again"), lambda: f.enqueue(run_id),
                 lambda: f.approve(run_id), f.clear):
        with pytest.raises(FleetUnavailableError) as info:
            call()
        assert info.value.code == "redis_unavailable" and "\n" not in info.value.message


def test_a_restarted_redis_is_handed_back_with_its_data_loaded():
    """py3.13 CI: a restart returned while Redis was still loading its append-only file, and
    the next read failed with BusyLoadingError ('Redis is loading the dataset in memory')."""
    import redis
    server = RedisServer.start(appendonly=True)
    try:
        client = redis.Redis.from_url(server.url)
        pipe = client.pipeline(transaction=False)
        for i in range(200_000):  # an append-only file that takes a moment to load
            pipe.set(f"k{i}", "x" * 20)
        pipe.execute()
        server.restart()
        assert client.get("k199999") == b"x" * 20 and client.dbsize() == 200_000
    finally:
        server.stop()


def test_wait_rides_out_a_redis_still_loading_its_data(fleet, monkeypatch):
    import redis
    run_id = fleet.submit("Research asyncio")
    fleet.cancel(run_id)
    show, calls = fleet.show, []

    def loading_twice(rid):
        calls.append(rid)
        if len(calls) <= 2:
            with fleet_unavailable(fleet.cfg.redis_url):
                raise redis.BusyLoadingError("Redis is loading the dataset in memory")
        return show(rid)
    monkeypatch.setattr(fleet, "show", loading_twice)
    [rec] = fleet.wait(run_id, timeout_s=10)
    assert rec["state"] == "cancelled" and len(calls) == 3


def test_submit_wait_when_redis_drops_mid_wait_is_one_line_and_exit_2(doomed, capsys):
    threading.Timer(1.0, doomed.kill).start()  # no worker: the run waits, then Redis goes
    assert main(["submit", "Research asyncio", "--wait", "--timeout", "30"]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("run-") and out.count("\n") == 1          # the run id, as submitted
    assert err.count("\n") == 1 and err.startswith("agentlab submit: cannot reach Redis at ")

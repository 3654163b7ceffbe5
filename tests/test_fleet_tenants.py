"""Two tenants side by side on one Redis (chapter 13): each with its own ACL credentials, its
own worker and its own broker namespace; each sees only its own runs, and B's credentials can
neither list, read, delete nor consume anything of A's, through the API or raw commands."""
from __future__ import annotations

import pytest
import redis

from agentlab.fleet import create_tenant
from agentlab.fleet.app import FleetConfig, fleet_prefix
from agentlab.fleet.control import Fleet
from agentlab.fleet.local import WorkerProcess
from agentlab.fleet.server import RedisServer, find_redis_server

TASK = "Research Python asyncio best practices"

if find_redis_server() is None:  # pragma: no cover - the CI image installs redis-server
    pytest.skip("redis-server is not installed", allow_module_level=True)


@pytest.fixture
def two_tenants(tmp_path):
    server = RedisServer.start()
    workers, fleets = [], {}
    try:
        for name in ("alpha", "beta"):
            url = create_tenant(server.url, name, f"pw-{name}-0123456789")
            cfg = FleetConfig(redis_url=url, prefix=fleet_prefix(url), lease_ttl_s=2,
                              checkpoints=url, fleet_dir=str(tmp_path / name))
            workers.append(WorkerProcess(cfg, f"{name}1", log_dir=tmp_path))
            fleets[name] = Fleet(cfg)
        for w in workers:
            w.wait_ready()
        yield fleets
    finally:
        for w in workers:
            w.stop()
        server.stop()


def test_two_tenants_run_side_by_side_and_b_reaches_nothing_of_a(two_tenants):
    a, b = two_tenants["alpha"], two_tenants["beta"]
    ids = {name: [f.submit(TASK) for _ in range(3)] for name, f in two_tenants.items()}
    for name, f in two_tenants.items():
        recs = f.wait(ids[name], timeout_s=60)
        assert [r["state"] for r in recs] == ["finished"] * 3
        assert all(r["worker"].startswith(f"{name}1@") for r in recs)   # its own worker
        assert [r["run_id"] for r in f.runs()] == ids[name]              # sees only its own
    assert b.records.get(ids["alpha"][0]) is None                       # not in B's namespace
    a_run, a_queue = f"agentlab:alpha:fleet:run:{ids['alpha'][0]}", "agentlab:alpha:broker:agentlab"
    a_list = "agentlab:alpha:notes"
    a.client.lpush(a_list, "a note of A's")
    raw = b.client  # B's own credentials, raw commands
    for cmd in (("HGETALL", a_run), ("DEL", a_run), ("LRANGE", a_queue, 0, -1),
                ("BRPOP", a_queue, 1), ("RPOPLPUSH", a_list, "agentlab:beta:x"), ("DEL", a_queue),
                ("SCAN", 0), ("RANDOMKEY",), ("DBSIZE",), ("SELECT", 1), ("KEYS", "*"),
                ("PUBSUB", "CHANNELS"), ("PUBLISH", "agentlab:alpha:broker:x", "hi"),
                ("FLUSHDB",), ("INFO", "keyspace")):
        with pytest.raises(redis.exceptions.NoPermissionError):
            raw.execute_command(*cmd)
    assert a.client.lrange(a_list, 0, -1) == [b"a note of A's"]         # untouched
    assert a.show(ids["alpha"][0])["state"] == "finished"

"""Chapter 13's Redis stores beyond the shared contract suites (test_state, test_checkpoints and
test_durability run those on Redis too): tenant isolation through ACL users, clear errors when
Redis is unreachable or refuses the credentials, and the backend factory's URL plug-in."""
from __future__ import annotations

import subprocess
import sys
import threading

import pytest
import redis

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.checkpoints.store import make_backend
from agentlab.errors import CheckpointError, ConfigError, StateError
from agentlab.fleet import (RedisCheckpointBackend, RedisStateStore, create_tenant, safe_url,
                            tenant_url)
from agentlab.fleet import server as server_module
from agentlab.fleet.server import free_port
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]


@pytest.fixture
def tenants(redis_server, request):
    """Two tenants with their own ACL users: ``{"a": url, "b": url}``."""
    n = request.node.name.replace("[", "").replace("]", "").lower()[-20:].replace(".", "-")
    return {t: create_tenant(redis_server.url, f"{t}-{n}", f"pw-{t}-0123456789") for t in "ab"}


def test_a_tenant_url_names_its_tenant_and_keeps_to_its_keys(tenants, redis_server):
    a, b = RedisStateStore(tenants["a"]), RedisStateStore(tenants["b"])
    assert a.tenant.startswith("a-") and b.tenant.startswith("b-")
    a.save("plan", {"step": 1})
    assert b.keys() == [] and b.load("plan") is None  # B's own namespace is empty
    admin = redis.Redis.from_url(redis_server.url)
    assert admin.hget(f"agentlab:{a.tenant}:state", "plan") is not None


def test_tenant_b_cannot_read_tenant_a_state(tenants):
    a = RedisStateStore(tenants["a"])
    a.save("secret_plan", {"x": 1})
    intruder = RedisStateStore(tenants["b"], tenant=a.tenant)  # B's credentials, A's keys
    for attempt in (lambda: intruder.load("secret_plan"), intruder.keys,
                    lambda: intruder.save("secret_plan", 2), intruder.clear):
        with pytest.raises(StateError) as info:
            attempt()
        assert info.value.code == "permission_denied" and not info.value.retryable
        assert "pw-b-" not in str(info.value)
    assert a.load("secret_plan") == {"x": 1}


def test_tenant_b_cannot_read_or_resume_tenant_a_run(tenants, tmp_path):
    reg = ToolRegistry()
    reg.register(lambda q: f"hits for {q}", name="search", description="Search.")
    policy = sim.Script([sim.call("search", {"q": "x"}), sim.text("done")])
    cm_a = CheckpointManager(tmp_path, store=tenants["a"])
    AgentRuntime(sim.Simulator(policy).llm(), reg, checkpoints=cm_a).run("task")
    cid = cm_a.list_checkpoints()[0]["id"]
    tenant_a = cm_a.backend.tenant
    cm_b = CheckpointManager(tmp_path, store=tenants["b"])  # B sees nothing of A's
    assert cm_b.list_checkpoints() == [] and cm_b.completed_tool_calls(cm_a.run_id) == {}
    with pytest.raises(CheckpointError) as info:
        AgentRuntime(sim.Simulator(policy).llm(), reg, checkpoints=cm_b).run("task", resume_from=cid)
    assert info.value.code == "checkpoint_not_found"
    forced = CheckpointManager(tmp_path, store=RedisCheckpointBackend(tenants["b"], tenant=tenant_a))
    for attempt in (lambda: forced.load(cid), forced.list_checkpoints,
                    lambda: forced.completed_tool_calls(cm_a.run_id),
                    lambda: forced.record_tool_result(cm_a.run_id, "call_x", "search", "x", True),
                    lambda: forced.save(1, MSGS, {}, [])):
        with pytest.raises(CheckpointError) as info:
            attempt()
        assert info.value.code == "permission_denied", attempt
    assert [c["saved_due_to"] for c in cm_a.list_checkpoints()] == ["start", "completed"]


def test_a_tenant_cannot_run_dangerous_commands(tenants):
    client = redis.Redis.from_url(tenants["a"])
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.flushall()
    with pytest.raises(redis.exceptions.NoPermissionError):
        client.keys("*")


def test_unreachable_redis_is_a_retryable_error_without_the_password():
    url = f"redis://alice:hunter2-password@127.0.0.1:{free_port()}/0"
    with pytest.raises(StateError) as info:
        RedisStateStore(url).load("k")
    err = info.value
    assert err.code == "redis_unavailable" and err.retryable
    assert "hunter2" not in str(err) and "redis://alice:***@127.0.0.1:" in str(err)
    assert err.details["url"] == safe_url(url) and err.details["tenant"] == "alice"
    with pytest.raises(CheckpointError) as info:
        CheckpointManager("unused", store=url).load()
    assert info.value.code == "redis_unavailable" and "hunter2" not in str(info.value)


def test_wrong_password_is_redis_auth_failed(tenants):
    bad = tenants["a"].replace("pw-a-", "wrong-")
    with pytest.raises(StateError) as info:
        RedisStateStore(bad).keys()
    assert info.value.code == "redis_auth_failed" and "wrong-" not in str(info.value)


def test_the_factory_finds_the_redis_backend_by_url(redis_url, tmp_path):
    backend = make_backend(redis_url, tmp_path)
    assert isinstance(backend, RedisCheckpointBackend) and backend.tenant.startswith("t")
    with pytest.raises(ConfigError) as info:
        make_backend("mongodb://127.0.0.1/x", tmp_path)
    assert info.value.code == "invalid_store" and "mongodb://" in str(info.value)


def test_bad_tenant_names_and_passwords_are_refused(redis_server):
    for tenant, password in [("A:*", "long-enough-pw"), ("", "long-enough-pw"),
                             ("default", "long-enough-pw"), ("ok", "short")]:
        with pytest.raises(ConfigError):
            create_tenant(redis_server.url, tenant, password)
    with pytest.raises(ConfigError):
        RedisStateStore(redis_server.url, tenant="../x")
    from agentlab.fleet.connection import validate_tenant
    for name in ("acme\n", "acme\r\n", "\nacme"):  # issue 21: '$' matched before a newline
        with pytest.raises(ConfigError):
            validate_tenant(name)
    assert validate_tenant("acme") == "acme"
    assert tenant_url("redis://127.0.0.1:1/0", "acme", "p@ss/word") == \
        "redis://acme:p%40ss%2Fword@127.0.0.1:1/0"


def _record(call_id: str) -> dict:
    return {"run_id": "r", "tool_call_id": call_id, "name": "f", "result": call_id,
            "success": True, "error_code": None, "arguments": {"q": call_id}, "turn": 1,
            "recorded_at": "2026-12-01T00:00:00+00:00"}


def test_the_tool_log_is_read_incrementally_and_a_replaced_log_is_noticed(redis_url):
    log = RedisCheckpointBackend(redis_url)
    assert log.tool_results_since("r", None) == ([], ("", 0))
    assert log.record_tool_result(_record("c1")) and log.record_tool_result(_record("c2"))
    records, cursor = log.tool_results_since("r", None)
    assert [r["tool_call_id"] for r in records] == ["c1", "c2"]
    other = RedisCheckpointBackend(redis_url)  # another worker appends
    assert other.record_tool_result(_record("c3")) and not other.record_tool_result(_record("c1"))
    records, cursor = log.tool_results_since("r", cursor)
    assert [r["tool_call_id"] for r in records] == ["c3"]  # only what is new
    assert log.tool_results_since("r", cursor) == ([], cursor)
    assert list(log.tool_results("r")) == ["c1", "c2", "c3"] and log.tool_result("r", "c2")["result"] == "c2"
    log.delete_run("r")
    for cid in ("c9", "c10", "c11", "c12"):  # a new, longer log under the same run id
        other.record_tool_result(_record(cid))
    assert log.tool_results_since("r", cursor) == (None, None)  # the reader must start again
    assert len(log.tool_results_since("r", None)[0]) == 4


def test_redis_state_is_shared_by_threads_and_processes(redis_url):
    store, errors = RedisStateStore(redis_url), []

    def work(n):
        try:
            for i in range(25):
                store.save(f"t{n}_{i}", {"n": n, "i": i})
                assert store.load(f"t{n}_{i}") == {"n": n, "i": i}
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(store.keys()) == 150
    code = ("from agentlab.fleet import RedisStateStore; import sys; "
            "s = RedisStateStore(sys.argv[1]); print(s.load('t5_24')['i']); s.save('child', [1])")
    out = subprocess.run([sys.executable, "-c", code, redis_url], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "24", out.stderr
    assert store.load("child") == [1]


def test_a_test_server_never_mistakes_another_server_on_its_port_for_itself(redis_server,
                                                                            monkeypatch):
    ports = iter([redis_server.port, free_port()])  # the first port is already taken
    monkeypatch.setattr(server_module, "free_port", lambda: next(ports))
    with server_module.RedisServer.start() as mine:
        assert mine.port != redis_server.port
        assert redis.Redis(port=mine.port).info("server")["process_id"] == mine.process.pid
    with pytest.raises(ConfigError) as info:
        server_module.RedisServer.start(port=redis_server.port)
    assert info.value.code == "redis_server_failed" and "is taken" in str(info.value)


def test_a_deeply_nested_redis_header_or_log_record_is_a_typed_error(redis_url, tmp_path):
    """Issue 21: 100k-deep JSON is hostile input, never a raw RecursionError."""
    from agentlab.checkpoints import CheckpointManager
    from agentlab.errors import CheckpointError
    deep = "[" * 100_000 + "]" * 100_000
    cm = CheckpointManager(tmp_path, store=redis_url, run_id="r1")
    cid = cm.save(1, [{"role": "user", "content": "x"}], {}, [])
    client = cm.backend.target.client
    client.hset(cm.backend.target.key("ckpt", "doc", cid), "header", deep)
    assert [c.get("error") for c in cm.list_checkpoints()] == ["checkpoint_corrupt"]
    cm.backend.record_tool_result(_record("c1"))
    log = [k for k in client.keys(cm.backend.target.key("*")) if b"log" in k or b"tool" in k]
    assert log, client.keys("*")
    for key in log:
        if client.type(key) == b"hash":
            for field in client.hkeys(key):
                client.hset(key, field, deep)
    with pytest.raises(CheckpointError) as info:
        cm.backend.tool_results("r")
    assert info.value.code == "checkpoint_corrupt"

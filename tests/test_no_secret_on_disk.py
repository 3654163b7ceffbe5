"""Issue 13: a full research run on the simulator, with checkpoints, a state store, observer
exports and logs, on every backend, never writes an API key: not the client's key echoed in a
provider 401 body, not a Groq-style ``gsk_`` key or a registered 40-character key passed to a
tool as an argument. Every byte of every file under the temporary folder is searched."""
from __future__ import annotations

import json
import logging

import pytest

from agentlab import redaction, sim
from agentlab.checkpoints import CheckpointManager
from agentlab.fleet import RedisStateStore, RedisTarget
from agentlab.llm import LLMClient
from agentlab.observe import AgentObserver
from agentlab.redaction import RedactingFilter
from agentlab.research import SYSTEM_PROMPT, research_tools
from agentlab.runtime import AgentRuntime, RunState
from agentlab.state import MemoryStateStore, SQLiteStateStore, StateStore

CLIENT_KEY = "vllm" + "9c1e5b7a" * 4 + "Q2x4"  # 40 characters, no well-known shape
GROQ_KEY = "gsk_" + "Wb8t" * 10
REGISTERED = "tenant-" + "f00dface" * 4  # registered by the application


@pytest.fixture(autouse=True)
def _forget_secrets():
    redaction.forget_secrets()
    yield
    redaction.forget_secrets()


def _state(kind, tmp_path, request):
    return {"memory": MemoryStateStore, "file": lambda: StateStore(tmp_path / "state"),
            "sqlite": lambda: SQLiteStateStore(tmp_path / "state.db"),
            "redis": lambda: RedisStateStore(request.getfixturevalue("redis_url"))}[kind]()


def _dump_redis(url: str, path) -> None:
    """Every value of this test's tenant, as stored, into a file (so the scan below sees it)."""
    target = RedisTarget(url)
    client = target.client
    read = {b"hash": lambda k: client.hgetall(k), b"string": client.get,
            b"list": lambda k: client.lrange(k, 0, -1), b"zset": lambda k: client.zrange(k, 0, -1),
            b"set": client.smembers}
    keys = list(client.scan_iter(target.prefix + "*"))
    assert keys, "nothing was written to Redis"
    path.write_bytes(repr({k: read[client.type(k)](k) for k in keys}).encode())


@pytest.mark.parametrize("checkpoints", ["json", "sqlite", "redis"])
@pytest.mark.parametrize("state_kind", ["memory", "file", "sqlite", "redis"])
def test_no_key_reaches_any_file_a_full_run_writes(request, tmp_path, state_kind, checkpoints):
    uses_redis = "redis" in (checkpoints, state_kind)
    if checkpoints == "redis":
        checkpoints = request.getfixturevalue("redis_url")
    redaction.register_secret(REGISTERED)
    script = sim.Script([
        sim.call("web_search", {"query": f"asyncio pitfalls key={GROQ_KEY}"}),
        sim.call("web_search", {"query": f"tenant {REGISTERED} and {CLIENT_KEY}"}),
        sim.text("unreachable: the next model call is refused")])
    plan = sim.FaultPlan([None, None, (401, {"message": f"Incorrect API key provided: {CLIENT_KEY}."})])
    simulator = sim.Simulator(script, faults=plan)
    llm = LLMClient(client=simulator.client(api_key=CLIENT_KEY), max_retries=0)
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, store=checkpoints)
    state = _state(state_kind, tmp_path, request)
    log = logging.FileHandler(tmp_path / "agentlab.log")
    log.addFilter(RedactingFilter())
    logging.getLogger("agentlab").addHandler(log)
    old_level = logging.getLogger("agentlab").level
    logging.getLogger("agentlab").setLevel(logging.DEBUG)
    try:
        rt = AgentRuntime(llm, research_tools(tmp_path / "out"), system_prompt=SYSTEM_PROMPT,
                          state=state, checkpoints=cm, observer=AgentObserver("leak-check"))
        result = rt.run("Write a short report on asyncio pitfalls")
    finally:
        logging.getLogger("agentlab").removeHandler(log)
        logging.getLogger("agentlab").setLevel(old_level)
        log.close()
    assert result.state is RunState.ERROR and result.errors[-1]["code"] == "auth_failed"
    assert CLIENT_KEY in json.dumps(result.to_dict())  # the key was there to leak
    (tmp_path / "observer.json").write_text(rt.observer.export_json(), encoding="utf-8")
    (tmp_path / "metrics.prom").write_text(rt.observer.export_prometheus_metrics())
    if state_kind == "memory":  # nothing on disk: check what it holds
        (tmp_path / "memory-state.json").write_text(json.dumps(
            {k: state.load(k) for k in state.keys()}, ensure_ascii=False))
    if uses_redis:  # the server's memory is where these wrote
        _dump_redis(request.getfixturevalue("redis_url"), tmp_path / "redis-dump.txt")
    written = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert len(written) >= 4
    for key in (CLIENT_KEY, GROQ_KEY, REGISTERED):
        leaks = [str(p.relative_to(tmp_path)) for p, data in written.items() if key.encode() in data]
        assert leaks == [], f"{key[:8]}... written to {leaks}"
    last_run = state.load("last_run")
    assert last_run["state"] == "error" and "[REDACTED]" in json.dumps(last_run)
    # the redacted run resumes: same task, tools' arguments matched again
    resumed = AgentRuntime(sim.Simulator(sim.Script([sim.text("report done")])).llm(),
                           research_tools(tmp_path / "out"), system_prompt=SYSTEM_PROMPT,
                           checkpoints=cm).run("Write a short report on asyncio pitfalls", "latest")
    assert resumed.state is RunState.FINISHED and resumed.run_id == result.run_id

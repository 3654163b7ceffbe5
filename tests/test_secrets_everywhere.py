"""Issue 21, build item 3: one redaction layer, every writer. Runs that see API keys (given as
``LLMClient(api_key=)`` beside a client, through ``OPENAI_API_KEY``, on the base client object)
and credential-named arguments (``password``, ``api_key``, ``token``, ``secret``) in every way
the issue lists -- tool-call arguments, a held (paused) turn, a model reply repeating a key (and
a password), a tool result echoing credential arguments, a provider's 401 echoing the key, key shapes with inner separators (``gsk_live_...``,
``sk-proj-..._...``) -- on JSON, SQLite and Redis stores. Then every byte written is searched:
the files under the temporary folder (SQLite's WAL included, read while it is open), a private
``redis-server``'s append-only file and RDB snapshot (before and after ``BGREWRITEAOF`` and
``SAVE``, uncompressed so a search can see them), the fleet's run records through
``agentlab runs show``, and the observer's JSON, Prometheus and OpenTelemetry exports."""
from __future__ import annotations

import json
import subprocess
import time
from collections import Counter

import pytest

from agentlab import redaction, sim
from agentlab.approval import Approval
from agentlab.checkpoints import CheckpointManager
from agentlab.checkpoints.credentials import forget_credentials
from agentlab.cli import main
from agentlab.fleet import RedisStateStore
from agentlab.fleet.app import FleetConfig
from agentlab.fleet.connection import RedisTarget
from agentlab.fleet.runs import PAUSED, RunRecords, RunSpec
from agentlab.fleet.server import find_redis_server, free_port
from agentlab.fleet.tasks import result_summary
from agentlab.llm import LLMClient
from agentlab.observe import AgentObserver
from agentlab.runtime import AgentRuntime, RunState
from agentlab.state import SQLiteStateStore, StateStore
from agentlab.tools import ToolRegistry

ARG_KEY = "vllm" + "7a1c" * 9   # LLMClient(client=..., api_key=ARG_KEY): 40 characters, no shape
ENV_KEY = "envk" + "3b9d" * 9   # OPENAI_API_KEY, read by the openai client
BASE_KEY = "base" + "5e2f" * 9  # openai.OpenAI(api_key=BASE_KEY) handed over as client=
GSK = "gsk_live_" + "4f9a" * 8  # key shapes with inner separators
PROJ = "sk-proj-" + "Xy_7" * 6 + "-" + "q1w2" * 3
PASSWORD, TOKEN, SECRET = "correct-horse-battery-42", "tok-" + "8c8c" * 6, "shh-" + "e1e1" * 5
SEEN = (ARG_KEY, ENV_KEY, BASE_KEY, GSK, PROJ, PASSWORD, TOKEN, SECRET)
TASK = "log in and check the status"


@pytest.fixture(autouse=True)
def _forget():
    redaction.forget_secrets()
    forget_credentials()
    yield
    redaction.forget_secrets()
    forget_credentials()


@pytest.fixture(scope="module")
def redis_aof(tmp_path_factory):
    """A private redis-server with the append-only file on, writing plain text a search sees."""
    binary = find_redis_server()
    if binary is None:
        pytest.skip("no redis-server binary")
    folder, port = tmp_path_factory.mktemp("redis"), free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                             str(folder), "--appendonly", "yes", "--appendfsync", "always",
                             "--aof-use-rdb-preamble", "no", "--rdbcompression", "no",
                             "--save", ""], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = RedisTarget(url).client
    for _ in range(200):
        try:
            client.ping()
            break
        except Exception:
            time.sleep(0.05)
    yield url, folder, client
    proc.terminate()
    proc.wait(10)


def tools(ran: list) -> ToolRegistry:
    reg = ToolRegistry()

    def lookup(query: str, token: str) -> str:
        return f"status of {query}: green"

    def login(user: str, password: str, api_key: str, secret: str) -> str:
        ran.append(password)
        return f"logged in as {user} with {password} and {secret}"  # a tool that echoes them

    reg.register(lookup, description="Look a service up.")
    reg.register(login, description="Log in.", requires_approval=True, side_effects=True)
    return reg


def model(key: str) -> sim.Simulator:
    """Four requests: a lookup, a gated login (the run pauses), a reply repeating the keys,
    then (the next run) a 401 whose body echoes the client's key."""
    script = sim.Script([
        sim.call("lookup", {"query": f"service with {GSK}", "token": TOKEN}),
        sim.call("login", {"user": "ann", "password": PASSWORD, "api_key": key, "secret": SECRET}),
        sim.text(f"Logged in with {PASSWORD}. Your keys {key} and {PROJ} work."),
        sim.text("unreachable")])
    plan = sim.FaultPlan([None, None, None, (401, {"message": f"Incorrect API key: {key}."})])
    return sim.Simulator(script, faults=plan)


def clients(monkeypatch) -> list[tuple[str, LLMClient]]:
    """The client's key given each way (each LLMClient built on a simulator of its own)."""
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    return [(ARG_KEY, LLMClient(client=model(ARG_KEY).client(), api_key=ARG_KEY, max_retries=0)),
            (ENV_KEY, LLMClient(client=model(ENV_KEY).client(api_key=None), max_retries=0)),
            (BASE_KEY, LLMClient(client=model(BASE_KEY).client(api_key=BASE_KEY), max_retries=0))]


def stores(kind: str, tmp_path, url: str):
    if kind == "redis":
        return url + "?tenant=leak", RedisStateStore(url + "?tenant=leak")
    state = StateStore(tmp_path / "state") if kind == "json" else SQLiteStateStore(tmp_path / "s.db")
    return kind, state


def otel_text(observer) -> str:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    observer.export_otel(provider)
    return "\n".join(s.to_json() for s in exporter.get_finished_spans())


def leaks(blobs: dict[str, bytes]) -> list[str]:
    return [f"{value[:10]}... in {where}" for value in SEEN for where, data in blobs.items()
            if value.encode() in data]


def redis_files(folder) -> dict[str, bytes]:
    return {f"redis/{p.name}": p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("kind", ["json", "sqlite", "redis"])
def test_no_key_or_credential_argument_reaches_any_store_export_or_cli(kind, tmp_path,
                                                                       monkeypatch, capsys,
                                                                       redis_aof):
    pytest.importorskip("opentelemetry.sdk")
    url, folder, client = redis_aof
    checkpoint_store, state = stores(kind, tmp_path, url)
    fleet_url = f"{url}?tenant=fleet{kind}"
    records = RunRecords(client, FleetConfig.from_env({"AGENTLAB_REDIS_URL": fleet_url}).prefix)
    exports, shown, ran = {}, {}, []
    for n, (key, llm) in enumerate(clients(monkeypatch)):
        cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, store=checkpoint_store)
        obs = AgentObserver(f"leak-{n}")
        rt = AgentRuntime(llm, tools(ran), state=state, checkpoints=cm, observer=obs,
                          extensions=[Approval()])
        paused = rt.run(TASK)  # lookup ran, the login turn is held
        assert paused.state is RunState.PAUSED and key in json.dumps(paused.pending_approvals)
        records.create(paused.run_id, RunSpec(task=TASK))  # what a fleet worker writes
        records.update(paused.run_id, state=PAUSED, result=result_summary(paused),
                       pending=paused.pending_approvals)
        rt.approve(paused.run_id, paused.pending_approvals[0]["call_id"])
        done = rt.run(TASK, resume_from="latest")  # same process: the password is in memory
        assert done.ok and key in done.content and PROJ in done.content
        records.update(done.run_id, state="finished", result=result_summary(done))
        failed = rt.run("another task")  # the 401 echoing the key
        assert failed.state is RunState.ERROR and failed.errors[-1]["code"] == "auth_failed"
        assert "Incorrect API key: [REDACTED]." in failed.errors[-1]["message"]  # masked at once
        records.create(failed.run_id, RunSpec(task="another task"))
        records.update(failed.run_id, state="error", result=result_summary(failed),
                       error=failed.errors[-1])
        exports[f"export_json {n}"] = obs.export_json().encode()
        exports[f"prometheus {n}"] = obs.export_prometheus_metrics().encode()
        exports[f"otel {n}"] = otel_text(obs).encode()
        monkeypatch.setenv("AGENTLAB_REDIS_URL", fleet_url)
        for run_id in (done.run_id, failed.run_id):
            assert main(["runs", "show", run_id]) == 0
            shown[f"runs show {n} {run_id}"] = capsys.readouterr().out.encode()
    assert ran == [PASSWORD] * 3  # each login ran once, with the real password
    files = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*")
             if p.is_file()}
    if kind == "sqlite":
        assert any(name.endswith("-wal") for name in files)  # read while the WAL is there
    before = redis_files(folder)
    client.bgrewriteaof()
    for _ in range(200):
        info = client.info("persistence")
        if not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]:
            break
        time.sleep(0.05)
    client.save()
    after = redis_files(folder)
    assert any(b"hset" in d.lower() for d in before.values()) and any(
        n.endswith(".rdb") for n in after)
    found = leaks({**files, **before, **{k + " (rewritten)": v for k, v in after.items()},
                   **exports, **shown})
    assert found == []


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_a_held_call_whose_credentials_were_not_saved_never_runs_in_another_process(
        tmp_path, decision):
    ran: list = []
    simulator = model(ARG_KEY)
    paused_rt = AgentRuntime(simulator.llm(), tools(ran), extensions=[Approval()],
                             checkpoints=CheckpointManager(tmp_path / "cp"))
    paused = paused_rt.run(TASK)
    call_id = paused.pending_approvals[0]["call_id"]
    getattr(paused_rt, decision)(paused.run_id, call_id)
    forget_credentials()  # another process: the credentials were kept in the first one only
    rt = AgentRuntime(simulator.llm(), tools(ran), extensions=[Approval()],
                      checkpoints=CheckpointManager(tmp_path / "cp"))
    done = rt.run(TASK, resume_from="latest")
    assert done.ok and ran == []  # never run with "[REDACTED]" as its password
    [login] = [c for c in done.tool_calls_made if c["name"] == "login"]
    told = [m["content"] for m in simulator.requests[-1]["body"]["messages"]
            if m.get("tool_call_id") == call_id]
    errors = [e for e in done.errors if e["code"] == "credentials_not_saved"]
    if decision == "reject":  # a rejection is still the answer, and nothing is missing
        assert login["error_code"] == "rejected" and errors == []
        return
    assert login["error_code"] == "invalid_arguments"
    assert "its credential arguments (api_key, password, secret) were masked" in told[0]
    assert [e["details"] for e in errors] == [{"call_id": call_id,
                                               "arguments": ["api_key", "password", "secret"],
                                               "turn": 2}]

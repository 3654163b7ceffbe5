"""AgentRuntime with checkpoints and an observer: a run killed in one process resumes in another
with the same run_id and without running finished steps again; refusals are loud; a research
run with an observer yields nested spans, a cost, Prometheus text and an OpenTelemetry export."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from agentlab import sim
from agentlab.checkpoints import (CheckpointManager, DurableExecutor, durable, idempotency_key,
                                  is_safe_point)
from agentlab.executor import ToolExecutor
from agentlab.errors import CheckpointError, ConfigError
from agentlab.llm import LLMClient
from agentlab.observe import AgentObserver
from agentlab.research import SYSTEM_PROMPT, research_tools
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.tools import ToolRegistry

ROOT = Path(__file__).resolve().parents[1]
TASK = "run the 6 steps"

# `step` appends to effects.log (its side effect). argv: crash_at, mode ("before": killed while
# step n runs, before its effect; "after": killed after the effect, before the result is
# returned), store, auto_save_interval, resume_from, seed, shape ("serial": one step per turn;
# "parallel": steps 1-3 in one turn, the crashing one slower than the others).
JOB = '''
import os, sys, time
from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

crash_at, mode, store, interval = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
resume = None if sys.argv[5] == "-" else sys.argv[5]
reg = ToolRegistry()

@reg.tool(side_effects=True)
def step(n: int, idempotency_key: str = "") -> str:
    """Run step n of the job.

    Args:
        n: which step.
    """
    with open("calls.log", "a") as fh:  # every execution, whatever the tool's own guard does
        fh.write(f"{n}\\n")
    if n == crash_at and mode == "before":
        time.sleep(0.3 if sys.argv[7] == "parallel" else 0)  # the others finish first
        os._exit(17)
    done = open("effects.log").read().split() if os.path.exists("effects.log") else []
    if idempotency_key not in done:  # the tool's own guard: one effect per key
        with open("effects.log", "a") as fh:
            fh.write(f"{n} {idempotency_key}\\n")
    if n == crash_at:
        os._exit(17)
    return f"step {n} done"

calls = [sim.call("step", {"n": i}) for i in range(1, 7)]
if sys.argv[7] == "parallel":
    calls = [calls[:3], *calls[3:]]
policy = sim.Script(calls + [sim.text("6 steps done")])
llm = sim.Simulator(policy, seed=int(sys.argv[6])).llm()
cm = CheckpointManager("cp", auto_save_interval=interval, store=store)
r = AgentRuntime(llm, reg, checkpoints=cm).run("run the 6 steps", resume_from=resume)
print(r.state.value, r.run_id, r.turns, r.total_tokens, len(r.tool_calls_made))
'''


def job(tmp: Path, crash_at: int = 0, mode: str = "before", store: str = "json",
        interval: int = 3, resume: str = "-", seed: int = 0,
        shape: str = "serial") -> subprocess.CompletedProcess:
    (tmp / "job.py").write_text(JOB)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "job.py", str(crash_at), mode, store, str(interval),
                           resume, str(seed), shape], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=120)


def executions(tmp: Path) -> Counter:
    return Counter(int(n) for n in (tmp / "calls.log").read_text().split())


def effects(tmp: Path) -> list[tuple[int, str]]:
    return [(int(n), key) for n, key in
            (line.split() for line in (tmp / "effects.log").read_text().splitlines())]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The same job, never killed: what a resumed run must add up to."""
    tmp = tmp_path_factory.mktemp("baseline")
    out = job(tmp)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


@pytest.mark.parametrize("store, interval, crash_at", [
    ("json", 3, 4),     # resumes from the turn-3 checkpoint
    ("sqlite", 3, 4),
    ("json", 3, 6),     # steps 4-5 finished after the last checkpoint: replayed from the log
    ("sqlite", 10, 4),  # no checkpoint since the start: steps 1-3 all come from the log
    ("redis", 3, 4),    # the same, with checkpoints and the log in Redis (chapter 13)
    ("redis", 10, 4),
])
def test_killed_at_step_n_resumes_in_a_new_process(request, tmp_path, baseline, store, interval,
                                                   crash_at):
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    killed = job(tmp_path, crash_at, store=store, interval=interval)
    assert killed.returncode == 17, killed.stderr
    assert [n for n, _ in effects(tmp_path)] == list(range(1, crash_at))
    run_id = CheckpointManager(tmp_path / "cp", store=store).load().run_id
    resumed = job(tmp_path, store=store, interval=interval, resume="latest")
    assert resumed.returncode == 0, resumed.stderr
    state, rid, turns, tokens, calls = resumed.stdout.split()
    assert (state, rid) == ("finished", run_id)
    assert [turns, tokens, calls] == baseline[2:]  # turn counter and token budget continued
    ran = executions(tmp_path)  # finished steps never ran again; the killed one ran twice
    assert ran == Counter({n: 2 if n == crash_at else 1 for n in range(1, 7)})
    assert sorted(n for n, _ in effects(tmp_path)) == [1, 2, 3, 4, 5, 6]  # each exactly once
    assert all(key.startswith(f"{run_id}:call_") for _, key in effects(tmp_path))
    revisions = [c["revision"] for c in CheckpointManager(tmp_path / "cp", store=store)
                 .list_checkpoints(run_id)]
    assert revisions == sorted(revisions) and len(set(revisions)) == len(revisions)


def test_an_effect_done_before_the_kill_is_kept_once_by_the_idempotency_key(tmp_path):
    assert job(tmp_path, 4, mode="after").returncode == 17  # effect 4 happened, result lost
    assert [n for n, _ in effects(tmp_path)] == [1, 2, 3, 4]
    resumed = job(tmp_path, resume="latest")
    assert resumed.returncode == 0, resumed.stderr
    assert executions(tmp_path) == Counter({1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 6: 1})
    assert [n for n, _ in effects(tmp_path)] == [1, 2, 3, 4, 5, 6]  # step 4 re-ran, same key


def test_new_call_ids_after_a_resume_are_matched_by_name_and_arguments(tmp_path):
    assert job(tmp_path, 5, interval=100).returncode == 17  # only the start checkpoint
    resumed = job(tmp_path, resume="latest", interval=100, seed=7)  # the model's ids change
    assert resumed.returncode == 0, resumed.stderr
    assert executions(tmp_path) == Counter({1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 1})


# ------------------------------------------------------------------ in one process
def counting_registry(counter: Counter) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def step(n: int) -> str:
        """Run step n.

        Args:
            n: which step.
        """
        counter[n] += 1
        return f"step {n} done"
    return reg


def steps_llm(n: int = 6, faults=None, seed: int = 0):
    """A model that calls step 1..n, one per turn, then answers (no retries)."""
    policy = sim.Script([sim.call("step", {"n": i}) for i in range(1, n + 1)] + [sim.text("done")])
    return sim.Simulator(policy, faults=faults, seed=seed).llm(max_retries=0)


def test_an_exhausted_run_continues_with_a_bigger_budget(tmp_path):
    ran = Counter()
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=2)
    first = AgentRuntime(steps_llm(), counting_registry(ran), config=RuntimeConfig(max_turns=4),
                         checkpoints=cm).run(TASK)
    assert (first.state, first.turns) == (RunState.EXHAUSTED, 4)
    assert [c["saved_due_to"] for c in cm.list_checkpoints()] == ["start", "interval", "interval",
                                                                 "exhausted"]
    rt = AgentRuntime(steps_llm(), counting_registry(ran), checkpoints=CheckpointManager(tmp_path / "cp"))
    second = rt.run(TASK, resume_from="latest")
    assert (second.state, second.run_id, second.turns) == (RunState.FINISHED, first.run_id, 7)
    assert second.usage["prompt_tokens"] > first.usage["prompt_tokens"]
    assert ran == Counter(range(1, 7))
    msgs = rt.messages.get_messages()
    assert [m["role"] for m in msgs].count("user") == 1 and is_safe_point(msgs)
    last = rt.checkpoints.list_checkpoints()[-1]
    assert (last["saved_due_to"], last["revision"], last["turn"]) == ("completed", 5, 7)


def test_a_model_failure_saves_a_safe_checkpoint_and_the_run_resumes(tmp_path):
    ran = Counter()
    plan = sim.FaultPlan([None, None, "server_error"])  # the third model call fails
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=100)
    failed = AgentRuntime(steps_llm(faults=plan), counting_registry(ran), checkpoints=cm).run(TASK)
    assert failed.state is RunState.ERROR
    cp = cm.load()
    assert (cp.metadata["saved_due_to"], cp.turn) == ("error", 3) and is_safe_point(cp.messages)
    again = AgentRuntime(steps_llm(), counting_registry(ran), checkpoints=cm).run("", "latest")
    assert (again.state, again.run_id) == (RunState.FINISHED, failed.run_id)
    assert ran == Counter(range(1, 7))


def test_resume_refusals_are_loud(tmp_path):
    ran = Counter()
    with pytest.raises(ConfigError):
        AgentRuntime(steps_llm(), counting_registry(ran)).run(TASK, resume_from="latest")
    cm = CheckpointManager(tmp_path / "cp")
    rt = AgentRuntime(steps_llm(2), counting_registry(ran), checkpoints=cm)
    with pytest.raises(CheckpointError) as info:
        rt.run(TASK, resume_from="latest")
    assert info.value.code == "checkpoint_not_found" and not (tmp_path / "cp").exists()
    rt.run(TASK)
    with pytest.raises(CheckpointError, match="finished") as info:
        rt.run(TASK, resume_from="latest")
    assert info.value.code == "run_finished"
    start = cm.list_checkpoints()[0]["id"]
    with pytest.raises(CheckpointError, match="not 'another task'"):
        rt.run("another task", resume_from=start)
    with pytest.raises(CheckpointError, match="not registered now: step"):
        AgentRuntime(steps_llm(), ToolRegistry(), checkpoints=cm).run(TASK, resume_from=start)


def test_a_corrupt_newest_checkpoint_stops_the_resume_naming_the_file(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    AgentRuntime(steps_llm(2), counting_registry(Counter()), config=RuntimeConfig(max_turns=2),
                 checkpoints=cm).run(TASK)
    newest = Path(cm.list_checkpoints()[-1]["path"])
    newest.write_text(newest.read_text()[:100])
    rt = AgentRuntime(steps_llm(2), counting_registry(Counter()), checkpoints=cm)
    with pytest.raises(CheckpointError) as info:
        rt.run(TASK, resume_from="latest")
    assert info.value.code == "checkpoint_corrupt" and str(newest) in str(info.value)


def test_parallel_results_are_recorded_as_each_call_completes(tmp_path):
    killed = job(tmp_path, 2, shape="parallel")  # steps 1 and 3 finish, step 2 is killed
    assert killed.returncode == 17, killed.stderr
    assert sorted(n for n, _ in effects(tmp_path)) == [1, 3]
    resumed = job(tmp_path, resume="latest", shape="parallel")
    assert resumed.returncode == 0, resumed.stderr
    assert executions(tmp_path) == Counter({1: 1, 2: 2, 3: 1, 4: 1, 5: 1, 6: 1})


def test_a_checkpoint_that_cannot_be_written_does_not_stop_the_run(tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the checkpoint folder should be")
    ran = Counter()
    r = AgentRuntime(steps_llm(2), counting_registry(ran),
                     checkpoints=CheckpointManager(blocker / "cp")).run(TASK)
    assert r.state is RunState.FINISHED and ran == Counter([1, 2])
    assert {e["code"] for e in r.errors} == {"checkpoint_write_failed"}
    assert sum("could not be recorded" in e["message"] for e in r.errors) == 2


def test_side_effect_tools_get_the_run_scoped_idempotency_key(tmp_path):
    keys = []
    reg = ToolRegistry()

    @reg.tool(side_effects=True)
    def send(to: str, idempotency_key: str = "") -> str:
        """Send a message.

        Args:
            to: recipient.
        """
        keys.append(idempotency_key)
        return "sent"
    llm = sim.Simulator(sim.Script([sim.call("send", {"to": "a"}), sim.text("ok")])).llm()
    r = AgentRuntime(llm, reg, checkpoints=CheckpointManager(tmp_path / "cp")).run("send it")
    assert keys == [idempotency_key(r.run_id, r.tool_calls_made[0]["id"])]


# ------------------------------------------------------------------ observer
def research_run(tmp_path: Path, observer: AgentObserver, **kw):
    llm = sim.Simulator(sim.Researcher()).llm()
    rt = AgentRuntime(llm, research_tools(tmp_path / "out"), system_prompt=SYSTEM_PROMPT,
                      observer=observer, **kw)
    return rt, rt.run("Write a short report on asyncio pitfalls")


def test_a_research_run_is_traced_without_wiring(tmp_path):
    rt, r = research_run(tmp_path, AgentObserver("ignored", seed=1))
    obs = rt.observer
    assert r.ok and obs.run_id == r.run_id and obs.final_status == "completed"
    by_id = {s.span_id: s for s in obs.spans}
    parent = lambda s: by_id[s.parent_id].name if s.parent_id else None  # noqa: E731
    kinds = Counter((s.kind, parent(s)) for s in obs.spans)
    assert kinds == Counter({("run", None): 1, ("turn", "run"): r.turns, ("llm", "turn"): r.turns,
                             ("tool", "turn"): len(r.tool_calls_made)})
    assert all(s.ended and s.status == "ok" for s in obs.spans)
    chat = next(s for s in obs.spans if s.kind == "llm")
    assert chat.attributes["gen_ai.request.model"] == "gpt-4o"
    assert chat.attributes["gen_ai.usage.input_tokens"] == r.turn_log[0]["prompt_tokens"]
    tools = [s.attributes["gen_ai.tool.name"] for s in obs.spans if s.kind == "tool"]
    assert tools == [c["name"] for c in r.tool_calls_made]
    report = obs.generate_report()
    price = obs.pricing["gpt-4o"]
    expected = (r.usage["prompt_tokens"] * price["input"]
                + r.usage["completion_tokens"] * price["output"]) / 1e6
    assert report.cost_usd == pytest.approx(expected) and report.cost_usd > 0
    assert report.total_tokens == r.total_tokens and report.turns == r.turns


def test_research_run_exports_prometheus_and_opentelemetry(tmp_path):
    parser = pytest.importorskip("prometheus_client.parser")
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    rt, r = research_run(tmp_path, AgentObserver("x"))
    fams = {f.name: f for f in parser.text_string_to_metric_families(
        rt.observer.export_prometheus_metrics())}
    calls = {s.labels["tool"]: s.value for s in fams["agentlab_tool_calls"].samples}
    assert calls == dict(Counter(c["name"] for c in r.tool_calls_made))
    assert fams["agentlab_llm_cost_usd"].samples[0].value > 0
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    rt.observer.export_otel(provider)
    spans = exporter.get_finished_spans()
    assert len(spans) == len(rt.observer.spans) and len({s.context.trace_id for s in spans}) == 1
    run = next(s for s in spans if s.name == "run")
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent" and run.parent is None
    tool = next(s for s in spans if s.attributes.get("gen_ai.tool.name") == "write_file")
    turn = next(s for s in spans if s.context.span_id == tool.parent.span_id)
    assert turn.name == "turn" and turn.parent.span_id == run.context.span_id


def test_each_run_gets_its_own_observer(tmp_path):
    first = AgentObserver("x", seed=3)
    llm = sim.Simulator(sim.Script([sim.call("step", {"n": 1}), sim.text("ok")])).llm()
    rt = AgentRuntime(llm, counting_registry(Counter()), observer=first)
    a = rt.run("one")
    assert rt.observer is first and first.run_id == a.run_id
    n_spans = len(first.spans)
    b = rt.run("two")
    second = rt.observer
    assert second is not first and second.run_id == b.run_id != a.run_id
    assert len(first.spans) == n_spans and second.generate_report().llm_calls == b.turns
    assert second.trace_id != first.trace_id


def test_failed_model_call_and_replayed_tools_are_visible(tmp_path):
    ran = Counter()
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=100)
    AgentRuntime(steps_llm(), counting_registry(ran), config=RuntimeConfig(max_turns=3),
                 checkpoints=cm).run(TASK)
    start = cm.list_checkpoints()[0]["id"]
    llm = steps_llm(faults=sim.FaultPlan([None] * 4 + ["server_error"]))
    rt = AgentRuntime(llm, counting_registry(ran), checkpoints=cm, observer=AgentObserver("x"))
    r = rt.run(TASK, resume_from=start)  # turns 1-3 replayed from the log, turn 5 fails
    obs = rt.observer
    assert r.state is RunState.ERROR and ran == Counter(range(1, 5))
    assert [e["attributes"]["tool_call_id"] for e in obs.events if e["name"] == "tool_replayed"] \
        == [c["id"] for c in r.tool_calls_made[:3]]
    failed = [s for s in obs.spans if s.status == "error"]
    assert [(s.kind, s.attributes["error.type"]) for s in failed] == [
        ("run", "provider_unavailable"), ("turn", "provider_unavailable"),
        ("llm", "provider_unavailable")]
    assert obs.generate_report().llm_errors == 1
    assert any(e["name"] == "run_resumed" for e in obs.events)


def test_streaming_runs_are_traced_and_checkpointed_the_same(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    rt = AgentRuntime(steps_llm(2), counting_registry(Counter()), checkpoints=cm,
                      observer=AgentObserver("x"))
    events = list(rt.run_stream(TASK))
    r = events[-1]["result"]
    assert r.ok and [s.kind for s in rt.observer.spans] == [
        "run", "turn", "llm", "tool", "turn", "llm", "tool", "turn", "llm"]
    assert [c["saved_due_to"] for c in cm.list_checkpoints()] == [
        "start", "interval", "interval", "completed"]
    assert {c["run_id"] for c in cm.list_checkpoints()} == {r.run_id}


def test_the_client_api_key_never_reaches_disk(tmp_path):
    key = "sk-live-" + "K3y" * 8
    reg = ToolRegistry()

    @reg.tool()
    def leak(n: int) -> str:
        """Echo a secret by mistake.

        Args:
            n: anything.
        """
        return f"configured with {key}"
    s = sim.Simulator(sim.Script([sim.call("leak", {"n": 1}), sim.text("done")]))
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    llm = LLMClient(client=s.client(api_key=key))
    r = AgentRuntime(llm, reg, checkpoints=cm).run("go")
    assert r.ok
    disk = b"".join(p.read_bytes() for p in (tmp_path / "cp").rglob("*") if p.is_file())
    assert key.encode() not in disk and b"[REDACTED]" in disk


# ------------------------------------------------------------------ attached from outside (issue #10)
def test_checkpoints_attach_to_a_plain_runtime_from_outside(tmp_path):
    ran = Counter()
    rt = AgentRuntime(steps_llm(2), counting_registry(ran))
    inner = rt.executor
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    durable.attach(rt, cm)
    assert isinstance(rt.executor, DurableExecutor)  # around a CredentialGuard, around inner
    assert rt.executor.inner.inner is inner
    assert rt.checkpoints is cm and rt.executor.max_workers == inner.max_workers
    r = rt.run(TASK)
    assert r.ok and ran == Counter([1, 2])
    assert [c["saved_due_to"] for c in cm.list_checkpoints()] == [
        "start", "interval", "interval", "completed"]
    with pytest.raises(ConfigError):
        cm.attach(rt)  # once per runtime


def test_replayed_results_are_flagged_on_the_tool_end_event(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=100)
    AgentRuntime(steps_llm(), counting_registry(Counter()), config=RuntimeConfig(max_turns=3),
                 checkpoints=cm).run(TASK)
    rt = AgentRuntime(steps_llm(), counting_registry(Counter()), checkpoints=cm)
    ends = []
    rt.on("tool_end", lambda ev: ends.append((ev["name"], ev["replayed"])))
    assert rt.run(TASK, resume_from=cm.list_checkpoints()[0]["id"]).ok
    assert ends == [("step", True)] * 3 + [("step", False)] * 3


class SeesEachBatch(ToolExecutor):
    """A user's executor that speaks batches: ``run(batch)`` gets every option (key prefix,
    result callback, cancel) the durable executor hands on."""

    def run(self, batch):
        assert batch.key_prefix and batch.on_result is not None and batch.cancel is not None
        return super().run(batch)


class OnlyExecute:
    """A user's executor written against ``execute``/``execute_parallel`` alone (API.md)."""

    def __init__(self, reg):
        self.inner = ToolExecutor(reg)

    def execute(self, calls, timeout=None):
        return self.inner.execute(calls, timeout)

    def execute_parallel(self, calls, timeout=None):
        return self.inner.execute_parallel(calls, timeout)


@pytest.mark.parametrize("executor, keyed", [(ToolExecutor, True), (SeesEachBatch, True),
                                             (OnlyExecute, False)])
def test_parallel_batches_run_on_the_wrapped_executor_and_are_logged(tmp_path, executor, keyed):
    """One ``ToolBatch`` goes through the durable wrapper: an executor with ``run(batch)`` gets
    the idempotency prefix and reports each result; one with only ``execute*`` still runs the
    batch in parallel and every result is logged (it cannot receive a key prefix)."""
    seen = []
    reg = ToolRegistry()

    @reg.tool(side_effects=True)
    def step(n: int, idempotency_key: str = "") -> str:
        """Run step n.

        Args:
            n: which step.
        """
        seen.append(idempotency_key)
        return f"step {n} done"
    llm = sim.Simulator(sim.Script([[sim.call("step", {"n": i}) for i in (1, 2, 3)],
                                    sim.text("done")])).llm()
    cm = CheckpointManager(tmp_path / "cp")
    r = AgentRuntime(llm, reg, executor=executor(reg), checkpoints=cm).run("three at once")
    assert r.ok and len(cm.completed_tool_calls(r.run_id)) == 3
    expected = [idempotency_key(r.run_id, c["id"]) if keyed else c["id"] for c in r.tool_calls_made]
    assert sorted(seen) == sorted(expected)


def test_a_foreign_executors_results_are_logged_as_each_call_returns(tmp_path):
    """An executor with only execute/execute_parallel gets the calls one at a time, so the fast
    call is in the durable log while the slow one of the same parallel batch still runs."""
    seen: dict = {}
    cm = CheckpointManager(tmp_path / "cp")
    reg = ToolRegistry()
    reg.register(lambda: "fast", name="fast", description="Fast.")

    def slow() -> str:
        threading.Event().wait(0.3)
        seen["logged"] = sorted(r["name"] for r in cm.completed_tool_calls(rt.context.run_id).values())
        return "slow"
    reg.register(slow, description="Slow.")
    llm = sim.Simulator(sim.Script([[sim.call("slow", {}), sim.call("fast", {})], sim.text("ok")])).llm()
    rt = AgentRuntime(llm, reg, executor=OnlyExecute(reg), checkpoints=cm)
    assert rt.run("both").ok and seen["logged"] == ["fast"]


def test_extension_events_land_on_the_observer_of_their_own_run(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    rt = AgentRuntime(steps_llm(1), counting_registry(Counter()), checkpoints=cm)
    AgentObserver("x").attach(rt)  # after the checkpoints: their run_start hook fires first
    saved = lambda obs: [e["attributes"]["saved_due_to"] for e in obs.events  # noqa: E731
                         if e["name"] == "checkpoint_saved"]
    rt.run(TASK)
    first = rt.observer
    rt.llm = steps_llm(1)
    rt.run(TASK)
    assert rt.observer is not first
    assert saved(first) == saved(rt.observer) == ["start", "interval", "completed"]
    in_spans = [e["attributes"]["saved_due_to"] for sp in rt.observer.spans for e in sp.events
                if e["name"] == "checkpoint_saved"]  # run span: start, completed; turn: interval
    assert sorted(in_spans) == ["completed", "interval", "start"]



# ------------------------------------------------------------------ issue 13
def _edit_latest(cm: CheckpointManager, edit) -> None:
    path = cm.backend.path(cm.load().id)
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("field, value", [("tools", 5), ("tools", [1, 2]), ("task", 42),
                                          ("usage", "many"), ("elapsed_s", "long")])
def test_hand_edited_metadata_of_the_wrong_type_is_a_checkpoint_error(tmp_path, field, value):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    AgentRuntime(steps_llm(), counting_registry(Counter()), config=RuntimeConfig(max_turns=2),
                 checkpoints=cm).run(TASK)
    _edit_latest(cm, lambda doc: doc["metadata"].__setitem__(field, value))
    rt = AgentRuntime(steps_llm(), counting_registry(Counter()), checkpoints=cm)
    with pytest.raises(CheckpointError) as err:
        rt.run(TASK, resume_from="latest")
    assert err.value.code == "checkpoint_corrupt" and field in err.value.message


def test_a_task_with_a_key_in_it_resumes_after_redaction(tmp_path):
    task = "use the key sk-" + "T0k" * 8 + " and ask-simon to run the 6 steps"
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    first = AgentRuntime(steps_llm(), counting_registry(Counter()),
                         config=RuntimeConfig(max_turns=3), checkpoints=cm).run(task)
    saved = cm.load().metadata["task"]
    assert "T0kT0k" not in saved and "ask-simon" in saved  # the sim key "sk-sim" mangles nothing
    again = AgentRuntime(steps_llm(), counting_registry(Counter()), checkpoints=cm)
    result = again.run(task, resume_from="latest")
    assert (result.state, result.run_id) == (RunState.FINISHED, first.run_id)
    with pytest.raises(CheckpointError) as err:  # another task is still refused
        AgentRuntime(steps_llm(), counting_registry(Counter()), checkpoints=cm).run(
            "another task", resume_from=cm.list_checkpoints()[-2]["id"])
    assert err.value.code == "checkpoint_incompatible"


def test_resuming_with_a_changed_system_prompt_replaces_it(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1)
    AgentRuntime(steps_llm(), counting_registry(Counter()), "old prompt",
                 config=RuntimeConfig(max_turns=2), checkpoints=cm).run(TASK)
    rt = AgentRuntime(steps_llm(), counting_registry(Counter()), "new prompt", checkpoints=cm)
    assert rt.run(TASK, resume_from="latest").ok
    systems = [m["content"] for m in rt.messages.get_messages() if m["role"] == "system"]
    assert systems == ["new prompt"]


def test_crash_soak_gives_every_run_its_own_folder_past_98_runs(tmp_path, monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("crash_soak", ROOT / "benchmarks" / "crash_soak.py")
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    made: list[str] = []

    def folder_only(root, name, cfg, ctx):  # the folder a run gets, without its processes
        (root / name).mkdir()  # raises FileExistsError on a collision
        made.append(name)
        return {"ok": True, "out": {"tokens": 1}, "attempts": 1, "kills": Counter(),
                "executions": 6, "reexecuted_done": 0, "orphans": 0, "effects_ok": True, "why": ""}
    monkeypatch.setattr(soak, "soak_run", folder_only)
    monkeypatch.setattr(soak.tempfile, "mkdtemp", lambda prefix: str(tmp_path))
    assert soak.main(["--runs", "120"]) == 0
    assert len(set(made)) == 122  # 120 runs and the two baselines
    assert capsys.readouterr().out.rstrip().endswith(
        "crash_soak: 120/120 finished, 0 completed steps re-executed, 0 temp files left: PASS")

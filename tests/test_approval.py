"""Human approval (chapter 13, agentlab.approval, a gate attached from outside): a gated call never
runs before it is approved, runs exactly once after, and a rejected call never runs (the model is
told why); the run pauses durably (PAUSED, awaiting_approval) in JSON, SQLite and Redis checkpoint
stores. Without the gate attached, the executor still refuses a gated call."""
from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from agentlab import fleet, sim
from agentlab.approval import Approval
from agentlab.checkpoints import CheckpointManager
from agentlab.errors import CheckpointError, ConfigError
from agentlab.runtime import AgentRuntime, RunState
from agentlab.tools import ToolRegistry

TASK = "write the report"


def runtime(llm, reg, **kw) -> AgentRuntime:
    """A runtime with chapter 13's approval gate attached."""
    return AgentRuntime(llm, reg, extensions=[Approval()], **kw)


def tools(ran: Counter) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool(requires_approval=True, side_effects=True)
    def write_file(path: str, text: str) -> str:
        """Write a file.

        Args:
            path: where.
            text: what.
        """
        ran["write_file"] += 1
        return f"wrote {len(text)} bytes to {path}"

    def search(q: str) -> str:
        ran["search"] += 1
        return f"hits for {q}"

    reg.register(search, description="Search.")
    return reg


def model(*extra) -> sim.Simulator:
    return sim.Simulator(sim.Script([
        [sim.call("search", {"q": "x"}), sim.call("write_file", {"path": "r.md", "text": "hi"})],
        *extra, sim.text("report written")]))


@pytest.fixture(params=["json", "sqlite", "redis"])
def cm_factory(request, tmp_path):
    store = request.getfixturevalue("redis_url") if request.param == "redis" else request.param
    return lambda: CheckpointManager(tmp_path / "cp", store=store)


def pause(cm_factory, ran):
    cm = cm_factory()
    r = runtime(model().llm(), tools(ran), checkpoints=cm).run(TASK)
    return cm, r


def test_a_gated_call_pauses_the_run_before_any_call_of_its_turn_runs(cm_factory):
    ran = Counter()
    cm, r = pause(cm_factory, ran)
    assert (r.state, r.stopped_reason) == (RunState.PAUSED, "awaiting_approval")
    assert r.state.terminal and ran == Counter()  # the whole turn is held
    [pending] = r.pending_approvals
    assert pending["tool"] == "write_file" and pending["arguments"] == {"path": "r.md", "text": "hi"}
    last = cm.list_checkpoints(r.run_id)[-1]
    assert last["saved_due_to"] == "paused"
    assert cm.load(last["id"]).metadata["held_turn"]["pending"] == r.pending_approvals


def test_an_approved_call_runs_exactly_once(cm_factory):
    ran = Counter()
    cm, r = pause(cm_factory, ran)
    rt = runtime(model().llm(), tools(ran), checkpoints=cm_factory())
    decision = rt.approve(r.run_id, r.pending_approvals[0]["call_id"])
    assert decision["approved"] is True and ran == Counter()
    resumed_from = rt.checkpoints.list_checkpoints(r.run_id)[-1]["id"]
    done = rt.run(TASK, resume_from="latest")
    assert done.ok and done.run_id == r.run_id and done.content == "report written"
    assert ran == Counter({"search": 1, "write_file": 1})
    # The process dies before its last checkpoint and the run is resumed again from the
    # approval: the tool-result log answers, nothing runs twice.
    again = runtime(model().llm(), tools(ran), checkpoints=cm_factory())
    assert again.run(TASK, resume_from=resumed_from).ok
    assert ran == Counter({"search": 1, "write_file": 1})


def test_a_rejected_call_never_runs_and_the_model_is_told_why(cm_factory):
    ran = Counter()
    cm, r = pause(cm_factory, ran)
    simulator = model()
    rt = runtime(simulator.llm(), tools(ran), checkpoints=cm_factory())
    rt.reject(r.run_id, r.pending_approvals[0]["call_id"], reason="not in the shared folder")
    done = rt.run(TASK, resume_from="latest")
    assert done.ok and ran == Counter({"search": 1})
    [wf] = [c for c in done.tool_calls_made if c["name"] == "write_file"]
    assert (wf["success"], wf["error_code"]) == (False, "rejected")
    tool_msgs = [m["content"] for m in simulator.requests[-1]["body"]["messages"] if m["role"] == "tool"]
    assert "Rejected by a human reviewer: not in the shared folder." in tool_msgs[-1]


def test_undecided_calls_pause_again_and_bad_decisions_are_refused(cm_factory, tmp_path):
    ran = Counter()
    cm, r = pause(cm_factory, ran)
    call_id = r.pending_approvals[0]["call_id"]
    rt = runtime(model().llm(), tools(ran), checkpoints=cm_factory())
    again = rt.run(TASK, resume_from="latest")  # nobody decided yet
    assert again.state is RunState.PAUSED and again.pending_approvals == r.pending_approvals
    assert ran == Counter()
    with pytest.raises(ConfigError) as info:
        rt.approve(r.run_id, "call_nope")
    assert info.value.code == "approval_not_found" and call_id in str(info.value)
    with pytest.raises(CheckpointError) as info:
        rt.approve("run-unknown", call_id)
    assert info.value.code == "checkpoint_not_found"
    rt.approve(r.run_id, call_id)
    rt.approve(r.run_id, call_id)  # the same decision twice is fine
    with pytest.raises(ConfigError) as info:
        rt.reject(r.run_id, call_id)
    assert info.value.code == "already_decided"
    assert rt.run(TASK, resume_from="latest").ok
    with pytest.raises(ConfigError) as info:
        rt.approve(r.run_id, call_id)
    assert info.value.code == "not_paused"


def test_a_policy_gates_only_the_calls_it_names(tmp_path):
    ran = Counter()
    reg = ToolRegistry()
    reg.register(lambda path: ran.update([path]) or "deleted", name="delete",
                 description="Delete a file.", requires_approval=lambda a: a["path"].startswith("/etc"))
    llm = sim.Simulator(sim.Script([sim.call("delete", {"path": "tmp.txt"}),
                                    sim.call("delete", {"path": "/etc/hosts"}), sim.text("ok")])).llm()
    r = runtime(llm, reg, checkpoints=CheckpointManager(tmp_path)).run("clean up")
    assert r.state is RunState.PAUSED and ran == Counter(["tmp.txt"])
    assert [p["arguments"] for p in r.pending_approvals] == [{"path": "/etc/hosts"}]
    assert reg.requires_approval("delete", {"path": "/etc/x"})
    assert not reg.requires_approval("delete", {"path": "x"}) and not reg.requires_approval("nope")
    assert reg.requires_approval("delete", {})  # a policy that raises gates the call
    with pytest.raises(ConfigError):
        reg.register(lambda: 1, name="odd", description="x", requires_approval="yes")


def test_a_policy_sees_the_validated_arguments_with_their_defaults(tmp_path):
    """Issue 21: ``pay({})`` with ``amount: int = 500`` ran without approval and paid 500."""
    paid = []
    reg = ToolRegistry()

    @reg.tool(requires_approval=lambda a: a.get("amount", 0) > 100)
    def pay(amount: int = 500) -> str:
        """Pay an amount.

        Args:
            amount: cents to pay.
        """
        paid.append(amount)
        return f"paid {amount}"
    llm = sim.Simulator(sim.Script([sim.call("pay", {}), sim.text("ok")])).llm()
    r = runtime(llm, reg, checkpoints=CheckpointManager(tmp_path)).run("pay the bill")
    assert r.state is RunState.PAUSED and paid == []
    assert [p["tool"] for p in r.pending_approvals] == ["pay"]
    llm = sim.Simulator(sim.Script([sim.call("pay", {"amount": 50}), sim.text("ok")])).llm()
    assert runtime(llm, reg).run("pay a little").state is RunState.FINISHED and paid == [50]
    llm = sim.Simulator(sim.Script([sim.call("pay", {}), sim.text("ok")])).llm()
    bare = AgentRuntime(llm, reg).run("pay the bill")  # no Approval gate: the executor refuses
    assert [c["error_code"] for c in bare.tool_calls_made] == ["approval_required"]
    assert paid == [50]  # pay({}) never ran


def test_without_checkpoints_the_run_pauses_and_approve_says_what_is_missing():
    ran = Counter()
    rt = runtime(model().llm(), tools(ran))
    r = rt.run(TASK)
    assert r.state is RunState.PAUSED and ran == Counter()
    with pytest.raises(ConfigError) as info:
        rt.approve(r.run_id, r.pending_approvals[0]["call_id"])
    assert info.value.code == "not_supported"
    again = rt.run("something else")  # the held turn is not left half in the history
    assert again.state is RunState.PAUSED and again.errors == [] and ran == Counter()


def test_the_executor_refuses_a_gated_call_that_has_no_approval():
    ran = Counter()
    for rt in (runtime(model().llm(), tools(ran)), AgentRuntime(model().llm(), tools(ran))):
        [res] = rt.executor.execute([_Call("c1", "write_file", {"path": "p", "text": "t"})])
        assert (res.success, res.error_code) == (False, "approval_required") and ran == Counter()


def test_without_the_gate_a_gated_call_is_refused_not_run_and_approve_says_what_is_missing():
    ran = Counter()
    rt = AgentRuntime(model().llm(), tools(ran))
    r = rt.run(TASK)
    assert r.ok and ran == Counter({"search": 1})
    [wf] = [c for c in r.tool_calls_made if c["name"] == "write_file"]
    assert wf["error_code"] == "approval_required"
    with pytest.raises(ConfigError) as info:
        rt.approve(r.run_id, wf["id"])
    assert info.value.code == "not_supported" and "Approval" in str(info.value)


class _Call:
    def __init__(self, id, name, arguments):
        self.id, self.name, self.arguments = id, name, arguments


def test_fleet_helpers_decide_from_a_store_url(redis_url):
    ran = Counter()
    r = runtime(model().llm(), tools(ran), checkpoints=CheckpointManager(
        "unused", store=redis_url)).run(TASK)
    call_id = r.pending_approvals[0]["call_id"]
    assert fleet.approve(redis_url, r.run_id, call_id)["approved"] is True
    rt = runtime(model().llm(), tools(ran), checkpoints=CheckpointManager("unused", store=redis_url))
    assert rt.run(TASK, resume_from="latest").ok and ran["write_file"] == 1
    with pytest.raises(ConfigError):
        fleet.reject(redis_url, r.run_id, call_id, reason="late")


def test_a_streamed_run_pauses_the_same_way(tmp_path):
    ran = Counter()
    rt = runtime(model().llm(), tools(ran), checkpoints=CheckpointManager(tmp_path / "cp"))
    events = list(rt.run_stream(TASK))
    done = events[-1]
    assert (done["state"], done["stopped_reason"]) == ("paused", "awaiting_approval")
    assert not any(e["type"] == "tool_start" for e in events) and ran == Counter()
    assert done["result"].pending_approvals[0]["tool"] == "write_file"


WORKER = '''
import sys
from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.approval import Approval
from agentlab.runtime import AgentRuntime
from agentlab.tools import ToolRegistry

url, resume = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
reg = ToolRegistry()

def write_file(path: str) -> str:
    with open("effects.log", "a") as fh:
        fh.write(path + "\\n")
    return "written"

reg.register(write_file, description="Write a file.", requires_approval=True)
llm = sim.Simulator(sim.Script([sim.call("write_file", {"path": "r.md"}), sim.text("ok")])).llm()
r = AgentRuntime(llm, reg, extensions=[Approval()], checkpoints=CheckpointManager("unused", store=url)).run(
    "write it", resume_from=resume)
print(r.state.value, r.run_id, *[p["call_id"] for p in r.pending_approvals])
'''


def test_a_run_paused_in_one_process_is_approved_from_another_and_resumed_in_a_third(
        redis_url, tmp_path):
    (tmp_path / "worker.py").write_text(WORKER)

    def worker(*args):
        out = subprocess.run([sys.executable, "worker.py", redis_url, *args], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()
    state, run_id, call_id = worker()
    assert state == "paused" and not (tmp_path / "effects.log").exists()
    fleet.approve(redis_url, run_id, call_id)
    latest = CheckpointManager("unused", store=redis_url).list_checkpoints(run_id)[-1]["id"]
    assert worker(latest)[:2] == ["finished", run_id]
    assert (tmp_path / "effects.log").read_text().split() == ["r.md"]  # ran once, after approval

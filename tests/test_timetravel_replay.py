"""Chapter 16: read-only replay and the compatibility checks before it (agentlab.timetravel)."""
from collections import Counter

import pytest

from agentlab import AgentRuntime, CheckpointManager, ToolRegistry, sim
from agentlab.timetravel import CapabilitySnapshot, IncompatibleRunError, SetConfig, fork
from agentlab.timetravel.replay import REEXECUTION_REQUIRED, replay

TASK = "find the answer and mail it"


def tools(ran: Counter, *, cc: bool = False) -> ToolRegistry:
    """``search`` (read-only) and ``send_mail`` (a side effect); ``ran`` counts their bodies."""
    reg = ToolRegistry()

    def search(query: str) -> str:
        """Search."""
        ran["search"] += 1
        return f"the answer to {query} is 42"

    def send_mail(to: str, body: str) -> str:
        """Send a mail."""
        ran["send_mail"] += 1
        return f"sent to {to}"

    def send_mail_cc(to: str, body: str, cc: str = "") -> str:
        """Send a mail."""
        ran["send_mail"] += 1
        return f"sent to {to}"

    reg.register(search)
    reg.register(send_mail_cc if cc else send_mail, name="send_mail", side_effects=True)
    return reg


def llm(to="boss@example.org"):
    plan = [sim.call("search", {"query": "life"}), sim.call("search", {"query": "universe"}),
            sim.call("send_mail", {"to": to, "body": "42"}), sim.text("mailed")]
    return sim.Simulator(sim.Script(plan)).llm()


@pytest.fixture
def finished(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None)
    ran = Counter()
    result = AgentRuntime(llm(), tools(ran), checkpoints=cm,
                          extensions=[CapabilitySnapshot()]).run(TASK)
    assert result.ok and ran == {"search": 2, "send_mail": 1}
    return cm, result


def test_replaying_a_finished_run_executes_no_tool_body(finished):
    cm, original = finished
    ran, files = Counter(), [r["id"] for r in cm.list_checkpoints()]
    out = replay(cm, original.run_id, llm(), tools(ran))
    assert out.result.ok and out.result.content == original.content
    assert ran == {} and (out.replayed, out.executed) == (3, 0)
    assert [r["id"] for r in cm.list_checkpoints()] == files  # nothing written to the store
    again = replay(cm, original.run_id, llm(), tools(ran), approve_all=True)
    assert ran == {} and again.executed == 0  # logged calls are answered even when approved


def test_a_side_effect_the_log_lacks_stops_until_approved(finished):
    cm, original = finished
    ran = Counter()
    out = replay(cm, original.run_id, llm(to="ceo@example.org"), tools(ran))
    assert out.stopped and out.result.state.value == "paused" and ran == {}
    assert out.result.stopped_reason == REEXECUTION_REQUIRED
    assert [(p["tool"], p["arguments"]["to"]) for p in out.needs_approval] == [
        ("send_mail", "ceo@example.org")]
    approved = replay(cm, original.run_id, llm(to="ceo@example.org"), tools(ran),
                      approve=[out.needs_approval[0]["call_id"]])
    assert approved.result.ok and ran == {"send_mail": 1} and approved.executed == 1


def test_a_changed_tool_schema_is_refused_naming_the_difference(finished):
    cm, original = finished
    ran = Counter()
    with pytest.raises(IncompatibleRunError) as err:
        replay(cm, original.run_id, llm(), tools(ran, cc=True))
    assert err.value.code == "checkpoint_incompatible"
    assert "tool send_mail schema:" in err.value.message
    assert "tool send_mail version:" in err.value.message and "allow=('tools',)" in err.value.message
    assert [d["what"] for d in err.value.details["differences"]] == [
        "tool send_mail schema", "tool send_mail version"]
    out = replay(cm, original.run_id, llm(), tools(ran, cc=True), allow=("tools",))
    assert out.result.ok and ran == {}


def test_a_fork_must_run_with_the_policy_it_declares(finished, tmp_path):
    from agentlab.runtime import RuntimeConfig
    from agentlab.timetravel import continue_fork
    cm, original = finished
    f = fork(cm, original.run_id, 2, edit=SetConfig(tool_timeout=5.0))
    with pytest.raises(IncompatibleRunError) as err:
        continue_fork(cm, f, AgentRuntime(llm(), tools(Counter()), checkpoints=cm))
    assert "config.tool_timeout: 5.0 -> 30.0" in err.value.message
    ok = continue_fork(cm, f, AgentRuntime(llm(), tools(Counter()), checkpoints=cm,
                                           config=RuntimeConfig(tool_timeout=5.0)))
    assert ok.ok and ok.run_id == f.run_id


def test_a_tool_gated_by_approval_is_held_too(finished):
    cm, original = finished
    ran = Counter()
    reg = tools(ran)
    reg.register(reg.get_function("search"), name="search", replace=True, requires_approval=True)
    plan = [sim.call("search", {"query": "other"}), sim.text("done")]
    out = replay(cm, original.run_id, sim.Simulator(sim.Script(plan)).llm(), reg,
                 allow=("tools", "policy"))
    assert out.stopped and [p["tool"] for p in out.needs_approval] == ["search"] and ran == {}
    ok = replay(cm, original.run_id, sim.Simulator(sim.Script(plan)).llm(), reg,
                allow=("tools", "policy"), approve=[out.needs_approval[0]["call_id"]])
    assert ok.result.ok and ran == {"search": 1}

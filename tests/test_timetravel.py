"""Chapter 16: a run's history, forks with one change, run identity (agentlab.timetravel)."""
import json

import pytest

from agentlab import AgentRuntime, CheckpointManager, cli, sim
from agentlab.errors import CheckpointError, ConfigError
from agentlab.research import SYSTEM_PROMPT, research_tools
from agentlab import timetravel as tt
from agentlab.timetravel.fork import task_id_of

TASK = "Write a short report on asyncio pitfalls"


def research(cm, out, **kw):
    """The chapter-08 research agent (6 turns), checkpointed every turn."""
    return AgentRuntime(sim.Simulator(sim.Researcher()).llm(), research_tools(out),
                        system_prompt=SYSTEM_PROMPT, checkpoints=cm,
                        extensions=[tt.CapabilitySnapshot()], **kw)


@pytest.fixture
def store(tmp_path):
    return CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None)


def test_history_lists_every_revision_of_a_six_turn_run(store, tmp_path):
    result = research(store, tmp_path / "out").run(TASK)
    revs = tt.history(store, result.run_id)
    assert result.turns == 6 and [r.revision for r in revs] == [1, 2, 3, 4, 5, 6, 7]
    assert [r.turn for r in revs] == list(range(7))
    assert [r.state for r in revs] == ["start"] + ["interval"] * 5 + ["completed"]
    assert revs[-1].tokens == result.total_tokens
    assert revs[-1].cost_usd == pytest.approx(result.cost_usd, abs=1e-6)
    assert revs[2].changes == "+3 messages; ran read_url x2"
    assert all(r.pending_calls == [] and r.parent is None for r in revs)


def test_a_loaded_revision_is_a_copy(store, tmp_path):
    run_id = research(store, tmp_path / "out").run(TASK).run_id
    cp = tt.load_revision(store, run_id, 3)
    cp.messages.clear()
    assert len(tt.load_revision(store, run_id, 3).messages) == 7
    with pytest.raises(CheckpointError) as err:
        tt.load_revision(store, run_id, 99)
    assert err.value.code == "checkpoint_not_found" and "revision 99" in err.value.message


def test_fork_at_revision_3_with_a_changed_tool_result_is_its_own_run(store, tmp_path):
    original = research(store, tmp_path / "out").run(TASK)
    before = [store.load(r["id"]).to_dict() for r in store.list_checkpoints(original.run_id)]
    lost = tt.ReplaceToolResult("Error: page not found", tool="read_url", nth=1)
    f = tt.fork(store, original.run_id, 3, edit=lost)
    forked = tt.continue_fork(store, f, research(store, tmp_path / "out"))
    assert forked.state.value == "finished" and forked.run_id == f.run_id != original.run_id
    assert "read 2 source(s)" in forked.content and "read 3 source(s)" in original.content
    revs = tt.history(store, f.run_id)
    assert revs[0].parent == {"run_id": original.run_id, "revision": 3,
                              "checkpoint_id": before[2]["id"]}
    assert revs[0].state == "fork" and revs[-1].state == "completed"
    first = tt.load_revision(store, f.run_id, 1)
    assert first.metadata["task_id"] == task_id_of(before[0]["metadata"], original.run_id)
    assert tt.lineage(store, f.run_id)[1] == {"run_id": original.run_id, "parent": None}
    after = [store.load(r["id"]).to_dict() for r in store.list_checkpoints(original.run_id)]
    assert after == before  # the original is unchanged


def test_edits_keep_the_conversation_valid(store, tmp_path):
    run_id = research(store, tmp_path / "out").run(TASK).run_id
    with pytest.raises(ConfigError) as err:
        tt.fork(store, run_id, 3, edit=tt.EditMessage(3, "not a tool result"))
    assert err.value.code == "invalid_edit"
    with pytest.raises(ConfigError):
        tt.SetConfig(max_turns=0)
    f = tt.fork(store, run_id, 3, edit=[tt.EditMessage(1, "Write a report on asyncio tasks"),
                                        tt.SetConfig(tool_timeout=5.0)])
    assert f.overrides == {"config": {"tool_timeout": 5.0}}
    assert f.edit == "message 1 edited; config tool_timeout=5.0"


def test_a_finished_answer_cannot_be_forked_without_a_change(store, tmp_path):
    run_id = research(store, tmp_path / "out").run(TASK).run_id
    with pytest.raises(CheckpointError) as err:
        tt.fork(store, run_id, 7)
    assert err.value.code == "run_finished"
    f = tt.fork(store, run_id, 7, edit=tt.AppendMessage("Now in French, please."))
    assert tt.history(store, f.run_id)[0].n_messages == 15


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_history_through_other_stores(kind, tmp_path, request, capsys):
    store = "sqlite" if kind == "sqlite" else request.getfixturevalue("redis_url")
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, max_checkpoints=None, store=store)
    run_id = research(cm, tmp_path / "out").run(TASK).run_id
    assert [r.turn for r in tt.history(cm, run_id)] == list(range(7))
    f = tt.fork(cm, run_id, 3)
    assert tt.history(cm, f.run_id)[0].parent["revision"] == 3
    where = str(tmp_path / "cp" / "checkpoints.db") if kind == "sqlite" else store
    assert cli.main(["runs", "history", f.run_id, "--store", where]) == 0
    assert "forked from run" in capsys.readouterr().out


def test_cli_runs_history(store, tmp_path, capsys):
    run_id = research(store, tmp_path / "out").run(TASK).run_id
    assert cli.main(["runs", "history", run_id, "--store", str(tmp_path / "cp")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8 and lines[3].split()[:3] == ["3", "2", "interval"]
    assert cli.main(["runs", "history", run_id, "--store", str(tmp_path / "cp"), "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["revision"] for r in rows] == list(range(1, 8))
    assert cli.main(["runs", "history", "nope", "--store", str(tmp_path / "cp")]) == 2
    assert "no checkpoint of run 'nope'" in capsys.readouterr().err


def test_a_paused_revision_lists_its_pending_calls(store):
    from agentlab import AgentRuntime, ToolRegistry
    from agentlab.approval import Approval

    reg = ToolRegistry()

    def pay(amount: int) -> str:
        """Pay."""
        return "paid"

    reg.register(pay, side_effects=True, requires_approval=True)
    plan = [sim.call("pay", {"amount": 5}), sim.text("done")]
    rt = AgentRuntime(sim.Simulator(sim.Script(plan)).llm(), reg, checkpoints=store,
                      extensions=[Approval()])
    paused = rt.run("pay 5")
    call_id = paused.pending_approvals[0]["call_id"]
    rt.approve(paused.run_id, call_id)
    revs = tt.history(store, paused.run_id)
    assert [r.state for r in revs] == ["start", "paused", "paused"]
    assert revs[1].pending_calls == [f"pay({call_id})"] and revs[1].changes == "paused"
    assert revs[2].changes == f"decision on {call_id}; paused"

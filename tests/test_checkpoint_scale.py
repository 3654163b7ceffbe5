"""Issue 13: checkpointing cost per turn must not grow with the run. Counted, not timed: how many
tool-log records are parsed and how many ``tool_calls_made`` records are scrubbed in a run of
N turns. An algorithm that re-reads the log per call, or re-scrubs the call list per save, does
O(N^2) of that work; the incremental one O(N)."""
from __future__ import annotations

from collections import Counter

import pytest

from agentlab import sim
from agentlab.checkpoints import CheckpointManager, calls as calls_module, redact as redact_module
from agentlab.checkpoints.json_backend import JSONBackend
from agentlab.checkpoints.sqlite_backend import SQLiteBackend
from agentlab.errors import CheckpointError
from agentlab.fleet import RedisCheckpointBackend
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.tools import ToolRegistry

TURNS = 40


def _registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: what to look up.
        """
        return f"value of {key}"
    return reg


@pytest.mark.parametrize("store", ["json", "sqlite", "redis"])
def test_a_long_run_parses_each_log_record_and_scrubs_each_call_a_bounded_number_of_times(
        request, tmp_path, monkeypatch, store):
    backend_cls = {"json": JSONBackend, "sqlite": SQLiteBackend}.get(store, RedisCheckpointBackend)
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    parsed, scrubbed = Counter(), Counter()

    def count(name: str, size) -> None:  # wrap a backend read, counting the records it returns
        original = getattr(backend_cls, name, None)
        if original is None:
            return

        def counting(self, *args):
            out = original(self, *args)
            parsed["records"] += size(out)
            parsed["reads"] += 1
            return out
        monkeypatch.setattr(backend_cls, name, counting)
    count("tool_results", len)  # the whole log (the slow path)
    count("tool_results_since", lambda out: len(out[0] or ()))  # what is new
    count("_read_log", lambda out: len(out[0]))  # the JSON appends' own reads, before and after
    count("_read_tail", lambda out: len(out[0] or ()))
    to_plain = redact_module.to_plain

    def counting_to_plain(obj, where, scrub, *args, **kwargs):
        scrubbed[where.split("[")[0]] += 1
        return to_plain(obj, where, scrub, *args, **kwargs)
    monkeypatch.setattr(redact_module, "to_plain", counting_to_plain)

    script = [sim.call("lookup", {"key": f"k{i}"}) for i in range(TURNS - 1)] + [sim.text("done")]
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, store=store)
    rt = AgentRuntime(sim.Simulator(sim.Script(script)).llm(), _registry(), checkpoints=cm,
                      config=RuntimeConfig(max_turns=TURNS + 1))
    result = rt.run("look up the keys")
    assert result.ok and not result.errors, result.errors
    assert len(cm.completed_tool_calls(rt.context.run_id)) == TURNS - 1
    # O(N): each record parsed a few times (reader and writer side), never N times
    assert parsed["records"] <= 4 * TURNS, parsed
    assert parsed["reads"] <= 3 * TURNS, parsed
    assert scrubbed["tool_calls_made"] <= TURNS, scrubbed  # each call scrubbed once


@pytest.mark.parametrize("store", ["json", "sqlite", "redis"])
def test_the_call_list_is_saved_in_sealed_chunks_and_comes_back_whole(request, tmp_path,
                                                                     monkeypatch, store):
    if store == "redis":
        store = request.getfixturevalue("redis_url")
    monkeypatch.setattr(calls_module, "CHUNK_SIZE", 4)
    script = [sim.call("lookup", {"key": f"k{i}"}) for i in range(14)] + [sim.text("done")]
    llm = lambda: sim.Simulator(sim.Script(script)).llm()  # noqa: E731
    cm = CheckpointManager(tmp_path / "cp", auto_save_interval=1, store=store)
    first = AgentRuntime(llm(), _registry(), checkpoints=cm,
                         config=RuntimeConfig(max_turns=11)).run("look up the keys")
    assert first.state.value == "exhausted" and len(first.tool_calls_made) == 11
    raw = cm.backend.read(None)  # what is stored: chunk ids and a short tail
    assert len(raw.tool_calls_chunks) == 2 and len(raw.tool_calls_made) == 3
    assert cm.load().tool_calls_made == first.tool_calls_made  # put back together
    assert len(cm.completed_tool_calls(first.run_id)) == 11  # chunks are not tool results
    again = CheckpointManager(tmp_path / "cp", store=store)
    result = AgentRuntime(llm(), _registry(), checkpoints=again).run("look up the keys", "latest")
    assert result.ok and [c["arguments"]["key"] for c in result.tool_calls_made] == \
        [f"k{i}" for i in range(14)]
    assert len(again.backend.read(None).tool_calls_made) < 4


def test_a_checkpoint_whose_chunk_is_gone_is_a_checkpoint_error(tmp_path, monkeypatch):
    monkeypatch.setattr(calls_module, "CHUNK_SIZE", 2)
    cm = CheckpointManager(tmp_path / "cp", run_id="r")
    cm.save(1, [], {}, [{"id": f"c{i}", "name": "f"} for i in range(5)])
    assert [c["id"] for c in cm.load().tool_calls_made] == ["c0", "c1", "c2", "c3", "c4"]
    (tmp_path / "cp" / "tool_results" / "r.jsonl").unlink()
    with pytest.raises(CheckpointError) as err:
        CheckpointManager(tmp_path / "cp").load()
    assert err.value.code == "checkpoint_corrupt" and "chunk" in err.value.message

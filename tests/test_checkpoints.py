"""Checkpoints: unique ordered ids, newest from a new process, retention across processes,
loud failures naming the file, atomic writes, no secrets on disk, and a tool-result log that
survives a killed process. Both backends unless a test is about one of them."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentlab.checkpoints import (FORMAT_VERSION, CheckpointManager, idempotency_key,
                                  is_safe_point, pending_tool_calls, scrub_secrets)
from agentlab.errors import CheckpointError, ConfigError
from agentlab.naive.checkpoints import NaiveCheckpointManager

ROOT = Path(__file__).resolve().parents[1]
#: 100,000-deep JSON: valid, but deeper than any parser's recursion (issue 21).
DEEP = "[" * 100_000 + "]" * 100_000
CALL = {"id": "call_1", "type": "function", "function": {"name": "web_search", "arguments": "{}"}}
MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "find x"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "results"}]


@pytest.fixture(params=["json", "sqlite", "redis"])
def store(request):
    """The ``store=`` argument: a name, or the URL of the test Redis (a tenant per test)."""
    return request.getfixturevalue("redis_url") if request.param == "redis" else request.param


def run_py(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def test_ids_unique_and_ordered_under_fast_saves(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", max_checkpoints=None, store=store, run_id="r1")
    ids = [cm.save(i, MSGS, {"i": i}, []) for i in range(150)]
    assert len(set(ids)) == 150 and ids == sorted(ids)
    listed = cm.list_checkpoints()
    assert [c["id"] for c in listed] == ids
    assert [c["revision"] for c in listed] == list(range(1, 151))
    assert cm.load().state == {"i": 149}


def test_naive_millisecond_ids_collide_and_overwrite(tmp_path, monkeypatch):
    # two saves in one millisecond, made sure of: a loop of 50 real saves on a busy machine
    # took over 1 ms each and none collided
    monkeypatch.setattr(time, "time", lambda: 1_790_000_000.1234)
    naive = NaiveCheckpointManager(tmp_path / "naive", max_checkpoints=1000)
    ids = [naive.save(i, MSGS, {"turn": i}, []) for i in (1, 2)]
    assert ids[0] == ids[1]
    [kept] = list((tmp_path / "naive").glob("*.json"))
    assert json.loads(kept.read_text())["state"] == {"turn": 2}  # turn 1's checkpoint is gone
    ours = CheckpointManager(tmp_path / "ours", max_checkpoints=None)
    assert len({ours.save(i, MSGS, {"turn": i}, []) for i in (1, 2)}) == 2


def test_load_newest_in_a_fresh_process(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", store=store, run_id="crashy")
    last = [cm.save(t, MSGS, {"turn": t}, [{"name": "web_search"}]) for t in (3, 6, 9)][-1]
    out = run_py(f"""
        from agentlab.checkpoints import CheckpointManager
        cp = CheckpointManager("cp", store={store!r}).load()
        print(cp.id, cp.run_id, cp.revision, cp.turn, cp.state["turn"], cp.format_version)
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [last, "crashy", "3", "9", "9", str(FORMAT_VERSION)]
    naive = run_py("""
        from agentlab.naive.checkpoints import NaiveCheckpointManager
        print(NaiveCheckpointManager("cp").load())
    """, tmp_path)
    assert naive.stdout.strip() == "None"  # the article's manager forgets everything


def test_retention_counts_checkpoints_of_other_processes(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", max_checkpoints=3, store=store, run_id="a")
    cm.save(1, MSGS, {}, [])
    cm.save(2, MSGS, {}, [])
    out = run_py(f"""
        from agentlab.checkpoints import CheckpointManager
        cm = CheckpointManager("cp", max_checkpoints=3, store={store!r}, run_id="a")
        print([cm.save(t, [], {{}}, []) for t in (3, 4, 5)][-1])
    """, tmp_path)
    assert out.returncode == 0, out.stderr
    listed = cm.list_checkpoints()
    assert [c["turn"] for c in listed] == [3, 4, 5]  # the same run, saved by another process
    assert cm.load().id == out.stdout.strip()
    cm.save(6, MSGS, {}, [])  # the next save in this process prunes on disk too
    assert [c["turn"] for c in cm.list_checkpoints()] == [4, 5, 6]


def test_retention_never_deletes_another_runs_checkpoints(tmp_path, store):
    crashed = CheckpointManager(tmp_path / "cp", max_checkpoints=5, store=store, run_id="A")
    for t in (1, 2, 3):  # run A crashed after three checkpoints
        crashed.save(t, MSGS, {}, [])
    crashed.record_tool_result("A", "call_1", "f", "one", True)
    other = CheckpointManager(tmp_path / "cp", max_checkpoints=5, store=store, run_id="B")
    for t in range(1, 8):  # run B: seven turns, a checkpoint each
        other.save(t, MSGS, {}, [])
    runs = [c["run_id"] for c in other.list_checkpoints()]
    assert runs.count("A") == 3 and runs.count("B") == 5
    assert crashed.load(crashed.list_checkpoints("A")[-1]["id"]).turn == 3  # A can resume
    assert other.delete_run("A") == 3  # a run goes with its tool-result log
    assert CheckpointManager(tmp_path / "cp", store=store).completed_tool_calls("A") == {}


def _rewrite_json(cm, cid, edit):
    path = cm.backend.path(cid)
    path.write_text(edit(path.read_text()))
    return str(path)


def _rewrite_sqlite(cm, cid, edit):
    with sqlite3.connect(cm.backend.path) as con:
        body = con.execute("SELECT body FROM checkpoints WHERE id=?", (cid,)).fetchone()[0]
        con.execute("UPDATE checkpoints SET body=? WHERE id=?", (edit(body), cid))
    return cid


def _rewrite_redis(cm, cid, edit):
    client, key = cm.backend.target.client, cm.backend.target.key("ckpt", "doc", cid)
    client.hset(key, "body", edit(client.hget(key, "body").decode()))
    return cm.backend.where(cid)


def _rewrite(store):
    return {"json": _rewrite_json, "sqlite": _rewrite_sqlite}.get(store, _rewrite_redis)


@pytest.mark.parametrize("edit, code", [
    (lambda text: text[: len(text) // 2], "checkpoint_corrupt"),
    (lambda text: text.replace(f'"format_version":{FORMAT_VERSION}', '"format_version":99', 1),
     "checkpoint_incompatible"),
    (lambda text: "[1, 2]", "checkpoint_corrupt"),
    # issue 21: hostile input is a typed error, and the reader refuses what the writer refuses
    (lambda text: text.replace('"state":{}', '"state":' + DEEP, 1), "checkpoint_corrupt"),
    (lambda text: DEEP, "checkpoint_corrupt"),
    (lambda text: text.replace('"turn":1,', '"turn":-3,', 1), "checkpoint_corrupt"),
    (lambda text: text.replace(f'"format_version":{FORMAT_VERSION}', '"format_version":true', 1),
     "checkpoint_corrupt"),
    (lambda text: text.replace('"revision":1,', '"revision":false,', 1), "checkpoint_corrupt"),
], ids=["truncated", "future", "not_an_object", "deep_state", "deep_document", "negative_turn",
        "bool_version", "bool_revision"])
def test_corrupt_and_future_checkpoints_raise_naming_the_file(tmp_path, store, edit, code):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    cid = cm.save(1, MSGS, {}, [])
    where = _rewrite(store)(cm, cid, edit)
    for load in (lambda: cm.load(cid), cm.load, lambda: cm.load("latest")):  # by id, the newest
        with pytest.raises(CheckpointError) as info:
            load()
        assert info.value.code == code and where in str(info.value)
    if code == "checkpoint_incompatible":
        assert "format_version 99" in str(info.value)


def test_resuming_from_a_deeply_nested_checkpoint_is_a_typed_error(tmp_path, store):
    """Issue 21: 100k-deep JSON gave a raw RecursionError from run(resume_from=)."""
    from agentlab import sim
    from agentlab.runtime import AgentRuntime
    from agentlab.tools import ToolRegistry
    cm = CheckpointManager(tmp_path / "cp", store=store)
    rt = AgentRuntime(sim.Simulator([sim.text("ok")]).llm(), ToolRegistry(), checkpoints=cm)
    run_id = rt.run("find x").run_id
    last = cm.list_checkpoints(run_id)[-1]["id"]
    _rewrite(store)(cm, last, lambda text: text.replace('"state":{', '"state":{"x":' + DEEP + ",", 1))
    for ref in ("latest", last):
        with pytest.raises(CheckpointError) as info:
            rt.run("find x", resume_from=ref)
        assert info.value.code == "checkpoint_corrupt"


def test_a_crash_mid_write_leaves_the_previous_checkpoint_readable(tmp_path):
    cm = CheckpointManager(tmp_path / "cp", run_id="r1")
    first = cm.save(1, MSGS, {"ok": True}, [])
    out = run_py("""
        import builtins, os
        import agentlab.checkpoints
        import agentlab.atomic as mod  # where the files are written (atomic_write)

        class DiesMidWrite:  # writes half of the data to the real file, then the process dies
            def __init__(self, fh): self.fh = fh
            def __enter__(self): return self
            def __exit__(self, *exc): self.fh.close()
            def write(self, data):
                self.fh.write(data[: len(data) // 2]); self.fh.flush(); os._exit(3)

        mod.open = lambda path, mode="r", *a: (DiesMidWrite(builtins.open(path, mode, *a))
                                               if "w" in mode else builtins.open(path, mode, *a))
        agentlab.checkpoints.CheckpointManager("cp", run_id="r1").save(2, [{"role": "user", "content": "x" * 10**5}], {}, [])
    """, tmp_path)
    assert out.returncode == 3
    assert list((tmp_path / "cp").glob(".*.tmp"))  # the torn temp file is there...
    assert cm.load().id == first and cm.load().state == {"ok": True}  # ...and ignored
    cm.save(3, MSGS, {}, [])
    assert not list((tmp_path / "cp").glob(".*.tmp"))  # cleaned by the next save


def test_a_refused_write_is_a_checkpoint_error_and_leaves_no_temp_file(tmp_path, monkeypatch):
    cm = CheckpointManager(tmp_path / "cp", run_id="r1")
    first = cm.save(1, MSGS, {"ok": True}, [])

    def refuse(src, dst):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", refuse)  # the shared atomic_write (agentlab.atomic)
    with pytest.raises(CheckpointError) as info:
        cm.save(2, MSGS, {}, [])
    monkeypatch.undo()
    assert info.value.code == "checkpoint_write_failed" and "No space left" in info.value.message
    assert isinstance(info.value.__cause__, OSError)
    assert not list((tmp_path / "cp").glob(".*.tmp")) and cm.load().id == first


def test_misused_save_and_load_are_config_errors(tmp_path):
    cm = CheckpointManager(tmp_path / "cp")
    for bad in (lambda: cm.save("3", MSGS, {}, []), lambda: cm.save(-1, MSGS, {}, []),
                lambda: cm.save(1, tuple(MSGS), {}, []), lambda: cm.load(42)):
        with pytest.raises(ConfigError):
            bad()
    assert not (tmp_path / "cp").exists()  # nothing was written


def test_naive_torn_write_raises_bare_json_error(tmp_path):
    naive = NaiveCheckpointManager(tmp_path / "naive")
    cid = naive.save(1, MSGS, {}, [])
    path = tmp_path / "naive" / f"{cid}.json"
    path.write_text(path.read_text()[:40])  # what a crash inside write_text leaves
    with pytest.raises(json.JSONDecodeError):
        naive.load(cid)


def _raw_bytes(cm, store) -> str:
    if store == "json":
        return "".join(p.read_text() for p in Path(cm.checkpoint_dir).rglob("*.json*"))
    if store.startswith("redis://"):  # every value of the tenant's keys, as stored
        client, read = cm.backend.target.client, {b"hash": "hgetall", b"string": "get",
                                                   b"list": "lrange", b"zset": "zrange"}
        keys = list(client.scan_iter(cm.backend.target.prefix + "*"))
        assert keys, "nothing was written"
        return repr([getattr(client, read[client.type(k)])(k, *(0, -1) * (client.type(k) in
                     (b"list", b"zset"))) for k in keys])
    with sqlite3.connect(cm.backend.path) as con:
        return json.dumps(con.execute("SELECT * FROM checkpoints").fetchall())


def test_secrets_are_never_written(tmp_path, store):
    key = "sk-test-0123456789abcdefABCDEF"
    cm = CheckpointManager(tmp_path / "cp", store=store, redact_values=["hunter2-secret-value"])
    msgs = MSGS + [{"role": "user", "content": "my password is hunter2-secret-value"},
                   {"role": "assistant", "content": "noted"}]
    state = {"api_key": key, "nested": {"Authorization": "Bearer abcdefgh12345678"},
             "total_tokens": 812, "max_tokens": 4096, "notes": f"called with {key}"}
    cid = cm.save(2, msgs, state, [{"name": "login", "arguments": {"access_token": "tok-zzz"}}],
                  {"client_secret": "cs-123", "OPENAI_API_KEY": key})
    raw = _raw_bytes(cm, store)
    for secret in (key, "abcdefgh12345678", "tok-zzz", "cs-123", "hunter2-secret-value"):
        assert secret not in raw
    cp = cm.load(cid)
    assert cp.state["total_tokens"] == 812 and cp.state["max_tokens"] == 4096
    assert cp.state["api_key"] == "[REDACTED]" and cp.metadata["client_secret"] == "[REDACTED]"
    assert cp.messages[-2]["content"] == "my password is [REDACTED]"


def test_client_objects_are_refused_not_repred(tmp_path):
    class FakeClient:
        api_key = "sk-should-never-reach-disk-000000"

    cm = CheckpointManager(tmp_path / "cp")
    with pytest.raises(CheckpointError) as info:
        cm.save(1, MSGS, {"client": FakeClient()}, [])
    assert info.value.code == "not_serializable" and "state['client']" in str(info.value)
    assert not (tmp_path / "cp").exists() or cm.list_checkpoints() == []


def test_unsafe_history_is_refused_and_save_on_exception_cuts_the_tail(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    unfinished = MSGS + [{"role": "assistant", "content": None, "tool_calls": [
        {**CALL, "id": "call_2"}, {**CALL, "id": "call_3"}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "done"}]
    assert not is_safe_point(unfinished) and [c["id"] for c in pending_tool_calls(unfinished)] == ["call_3"]
    with pytest.raises(CheckpointError, match=r"messages\[4\].*call_3") as info:
        cm.save(2, unfinished, {}, [])
    assert info.value.code == "checkpoint_unsafe"
    cid = cm.save_on_exception(TimeoutError("tool hung"), 2, unfinished, {}, [])
    cp = cm.load(cid)
    assert cp.messages == MSGS and len(cp.metadata["unsafe_tail"]) == 2
    assert cp.metadata["exception_type"] == "TimeoutError"


def test_save_on_exception_never_raises(tmp_path):
    cm = CheckpointManager(tmp_path / "cp")
    assert cm.save_on_exception(ValueError("x"), 1, MSGS, {"lock": object()}, []) is None
    assert cm.last_error.code == "not_serializable"


def test_nothing_is_created_before_the_first_save(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    assert cm.load() is None and cm.list_checkpoints() == [] and cm.completed_tool_calls("x") == {}
    assert not (tmp_path / "cp").exists()
    with pytest.raises(CheckpointError) as info:
        cm.load("00000001-0000000000000000000-abcdef")
    assert info.value.code == "checkpoint_not_found"


def test_resume_keeps_run_id_and_continues_the_revision(tmp_path, store):
    first = CheckpointManager(tmp_path / "cp", store=store, run_id="run-7")
    first.save(3, MSGS, {}, [])
    first.save(6, MSGS, {}, [])
    again = CheckpointManager(tmp_path / "cp", store=store)  # e.g. a new process
    cp = again.resume("latest")
    assert again.run_id == "run-7" and cp.revision == 2
    assert not again.should_save(7) and again.should_save(9)
    nxt = again.load(again.save(9, MSGS, {}, []))
    assert (nxt.run_id, nxt.revision) == ("run-7", 3)


def test_tool_results_survive_a_killed_process(tmp_path, store):
    out = run_py(f"""
        import os
        from agentlab.checkpoints import CheckpointManager
        cm = CheckpointManager("cp", store={store!r})
        cm.record_tool_result("run-1", "call_1", "web_search", "3 hits", True)
        cm.record_tool_result("run-1", "call_2", "write_file", "disk full", False, "tool_failed")
        os._exit(9)  # no cleanup, no checkpoint
    """, tmp_path)
    assert out.returncode == 9, out.stderr
    cm = CheckpointManager(tmp_path / "cp", store=store)
    done = cm.completed_tool_calls("run-1")
    assert list(done) == ["call_1", "call_2"]
    assert done["call_2"]["success"] is False and done["call_2"]["error_code"] == "tool_failed"
    assert not cm.record_tool_result("run-1", "call_1", "web_search", "other", True)  # first wins
    assert cm.get_tool_result("run-1", "call_1")["result"] == "3 hits"
    assert cm.get_tool_result("run-1", "call_9") is None
    assert idempotency_key("run-1", "call_2") == "run-1:call_2"


def test_a_torn_last_log_line_is_skipped_and_appending_still_works(tmp_path):
    cm = CheckpointManager(tmp_path / "cp")
    cm.record_tool_result("r", "call_1", "f", "one", True)
    log = tmp_path / "cp" / "tool_results" / "r.jsonl"
    with open(log, "ab") as fh:
        fh.write(b'{"run_id":"r","tool_call_id":"call_2","na')  # died mid-append
    assert list(cm.completed_tool_calls("r")) == ["call_1"]
    cm.record_tool_result("r", "call_3", "f", "three", True)
    assert list(cm.completed_tool_calls("r")) == ["call_1", "call_3"]


def test_scrub_keeps_token_counts_and_bad_config_is_refused(tmp_path):
    got = scrub_secrets({"prompt_tokens": 5, "token": "t", "apiKey": "k", "sessionToken": "s",
                         "token_count": 2, "password": None})
    assert got == {"prompt_tokens": 5, "token": "[REDACTED]", "apiKey": "[REDACTED]",
                   "sessionToken": "[REDACTED]", "token_count": 2, "password": None}
    with pytest.raises(ConfigError):
        CheckpointManager(tmp_path, store="mongodb")
    with pytest.raises(CheckpointError):
        CheckpointManager(tmp_path, run_id="../escape")


def test_clear_and_delete(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    a, b = cm.save(1, MSGS, {}, []), cm.save(2, MSGS, {}, [])
    cm.record_tool_result(cm.run_id, "call_1", "f", "x", True)
    assert cm.delete_checkpoint(a) and not cm.delete_checkpoint(a)
    assert [c["id"] for c in cm.list_checkpoints()] == [b]
    assert cm.clear_all() == 1 and cm.load() is None and cm.completed_tool_calls(cm.run_id) == {}


def test_concurrent_processes_get_unique_ordered_ids(tmp_path, store):
    code = f"""
        from agentlab.checkpoints import CheckpointManager
        cm = CheckpointManager("cp", max_checkpoints=None, store={store!r})
        for t in range(25):
            cm.save(t, [], {{}}, [])
    """
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, env=env)
             for _ in range(2)]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    listed = CheckpointManager(tmp_path / "cp", store=store).list_checkpoints()
    seqs = [int(c["id"][:8]) for c in listed]
    assert seqs == list(range(1, 51))  # one counter across both processes, no gaps, no repeats
    assert len({c["run_id"] for c in listed}) == 2


TOY_LOOP = """
    import os, sys
    from agentlab.checkpoints import CheckpointManager
    cm = CheckpointManager("cp", auto_save_interval=3, run_id="toy")
    cp = cm.resume("latest")  # None on the first start
    messages, turn = (cp.messages, cp.turn) if cp else ([{"role": "user", "content": "6 steps"}], 0)
    while turn < 6:
        turn += 1
        call = {"id": f"call_{turn}", "type": "function", "function": {"name": "step", "arguments": "{}"}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        done = cm.get_tool_result(cm.run_id, call["id"])
        if done is None:  # never completed: run it (a side effect), then record it durably
            with open("effects.log", "a") as fh:
                fh.write(f"{turn}\\n")
            cm.record_tool_result(cm.run_id, call["id"], "step", f"step {turn} done", True)
        messages.append({"role": "tool", "tool_call_id": call["id"], "content": f"step {turn} done"})
        if turn == int(sys.argv[1]):
            os._exit(1)  # killed after step 4, before the next checkpoint
        if cm.should_save(turn):
            cm.save(turn, messages, {}, [])
    print(cm.run_id, cm.load().revision)
"""


def test_a_loop_killed_at_step_4_resumes_without_rerunning_finished_steps(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = lambda crash_at: subprocess.run(  # noqa: E731
        [sys.executable, "-c", textwrap.dedent(TOY_LOOP), str(crash_at)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=60)
    assert run(4).returncode == 1
    assert (tmp_path / "effects.log").read_text().split() == ["1", "2", "3", "4"]
    resumed = run(0)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.split() == ["toy", "2"]  # same run, next revision
    assert (tmp_path / "effects.log").read_text().split() == ["1", "2", "3", "4", "5", "6"]


# ------------------------------------------------------------------ hostile input (issue 13)
def _append_log_line(cm, store, run_id, line):
    if store == "json":
        path = cm.checkpoint_dir / "tool_results" / f"{run_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as fh:
            fh.write(line + "\n")
    elif store.startswith("redis://"):  # a record written by hand next to the real ones
        client, key = cm.backend.target.client, cm.backend.target.key
        client.hset(key("toollog", run_id), f"c{len(line)}", line)
        client.rpush(key("toolorder", run_id), f"c{len(line)}")
    else:  # a row edited by hand: success not a flag, arguments not JSON
        with sqlite3.connect(cm.backend.path) as con:
            con.execute("INSERT INTO tool_results VALUES (?,?,?,?,?,?,?,?,?)",
                        (run_id, f"c{len(line)}", "f", line, "yes", None, "{not json", None, "now"))


@pytest.mark.parametrize("line", ['["a list"]', '{"tool_call_id": "c2"}',
                                  '{"tool_call_id": "c3", "name": "f", "result": 5}'])
def test_tool_log_records_of_the_wrong_shape_are_checkpoint_errors(tmp_path, store, line):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    cm.record_tool_result("r", "c1", "f", "one", True)
    _append_log_line(cm, store, "r", line)
    fresh = CheckpointManager(tmp_path / "cp", store=store)
    with pytest.raises(CheckpointError) as err:
        fresh.completed_tool_calls("r")
    assert err.value.code == "checkpoint_corrupt" and "tool-result log" in err.value.message


def test_load_latest_survives_another_process_pruning_it(tmp_path, monkeypatch):
    reader = CheckpointManager(tmp_path / "cp", max_checkpoints=1, run_id="r")
    reader.save(1, MSGS, {}, [])
    writer = CheckpointManager(tmp_path / "cp", max_checkpoints=1, run_id="r")
    read_bytes, raced = Path.read_bytes, []

    def prune_first(path):  # between listing and reading, the writer saves and prunes
        if not raced:
            raced.append(path)
            writer.save(2, MSGS, {}, [])
        return read_bytes(path)
    monkeypatch.setattr(Path, "read_bytes", prune_first)
    assert reader.load("latest").turn == 2 and raced


@pytest.mark.parametrize("messages, problem", [
    ([{"role": "wizard", "content": "x"}], "role 'wizard'"),
    (["just text"], "not a message object"),
    ([{"role": "user", "content": {"a": 1}}], "content is a dict"),
    ([{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "c9", "content": "r"}],
     "pairing"),
    ([{"role": "assistant", "tool_calls": [{"id": "c1"}]}], "function name"),
])
def test_load_refuses_messages_that_are_not_a_conversation(tmp_path, store, messages, problem):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    cid = cm.save(1, MSGS, {}, [])
    _rewrite(store)(cm, cid, lambda text: text.replace(json.dumps(MSGS, separators=(",", ":")),
                                               json.dumps(messages, separators=(",", ":"))))
    with pytest.raises(CheckpointError) as err:
        cm.load(cid)
    assert err.value.code == "checkpoint_corrupt" and problem in err.value.message


@pytest.mark.parametrize("run_id", ["CON", "nul.log", "COM1", "run.", "a" * 129, "run-1\n"])
def test_run_ids_that_are_not_portable_file_names_are_refused(tmp_path, run_id):
    with pytest.raises(CheckpointError) as err:
        CheckpointManager(tmp_path / "cp", run_id=run_id)
    assert err.value.code == "invalid_key"


def test_temp_files_of_a_killed_writer_are_swept_when_the_store_opens(tmp_path):
    CheckpointManager(tmp_path / "cp").save(1, MSGS, {}, [])
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    orphans = [tmp_path / "cp" / f".00000002-x.json.{dead}{s}.tmp" for s in ("", ".0badf00d")]
    for orphan in orphans:
        orphan.write_text('{"half')
    CheckpointManager(tmp_path / "cp")
    assert not any(o.exists() for o in orphans)


def test_values_no_checkpoint_can_hold_are_not_serializable_errors(tmp_path, store):
    cm = CheckpointManager(tmp_path / "cp", store=store)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    for state in ({"deep": deep}, {"big": 10 ** 5000}, {"text": "lone \udc00"}):
        with pytest.raises(CheckpointError) as err:
            cm.save(1, MSGS, state, [])
        assert err.value.code == "not_serializable"
    assert cm.list_checkpoints() == []


def test_tool_log_arguments_and_results_are_redacted_on_every_backend(tmp_path, store):
    key = "vllm-" + "8f3a" * 9  # no well-known shape: masked because it is registered
    cm = CheckpointManager(tmp_path / "cp", store=store, redact_values=[key])
    cm.record_tool_result("r", "c1", "fetch", f"used {key}", True,
                          arguments={"headers": {"x-key": key}, "q": "gsk_" + "z" * 24})
    raw = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert key.encode() not in raw and b"gsk_zzzz" not in raw
    rec = cm.get_tool_result("r", "c1")
    assert rec["arguments"] == {"headers": {"x-key": "[REDACTED]"}, "q": "gsk_[REDACTED]"}

"""State stores: JSON round trips, persistence, unsafe keys refused, atomic writes that survive
a crash mid-write, clear errors for values that are not JSON."""
from __future__ import annotations

import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agentlab.errors import StateError
from agentlab.fleet import RedisStateStore
from agentlab.naive.state import NaiveStateStore
from agentlab.state import MemoryStateStore, SQLiteStateStore, StateStore

ROOT = Path(__file__).resolve().parents[1]
VALUE = {"title": "异步编程 — naïve café ☕", "turns": [1, 2.5, None, True], "nested": {"k": []}}
UNSAFE = ["", "..", ".", "../x", "a/b", "a\\b", "/etc/passwd", "C:evil", "ok\x00", "tab\tkey",
          ".hidden", "trailing.", "NUL", "x" * 201, 42, None]


@pytest.fixture(params=["file", "sqlite", "memory", "redis"])
def store(request, tmp_path):
    return {"file": lambda: StateStore(tmp_path / "state"),
            "sqlite": lambda: SQLiteStateStore(tmp_path / "state.db"),
            "memory": MemoryStateStore,
            "redis": lambda: RedisStateStore(request.getfixturevalue("redis_url"))}[request.param]()


def test_round_trip_non_ascii_and_nested(store):
    store.save("run_1.summary", VALUE)
    assert store.load("run_1.summary") == VALUE
    assert store.load("missing", default={"d": 1}) == {"d": 1}
    assert "run_1.summary" in store and "missing" not in store and "../x" not in store
    assert store.keys() == ["run_1.summary"]


def test_overwrite_clear_one_and_all(store):
    store.save("a", 1)
    store.save("a", 2)
    store.save("b", [3])
    assert store.load("a") == 2 and store.keys() == ["a", "b"]
    store.clear("a")
    assert store.keys() == ["b"] and store.load("a") is None
    store.clear()
    assert store.keys() == [] and len(store) == 0


def test_loads_are_copies(store):
    store.save("k", {"items": [1]})
    got = store.load("k")
    got["items"].append(2)
    assert store.load("k") == {"items": [1]}


@pytest.mark.parametrize("key", UNSAFE, ids=repr)
def test_unsafe_keys_are_refused(store, key, tmp_path):
    with pytest.raises(StateError) as info:
        store.save(key, 1)
    assert info.value.code == "invalid_key"
    with pytest.raises(StateError):
        store.load(key)
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["state"], ["state.db"])


@pytest.mark.parametrize("value, where, what", [
    ({"when": object()}, "value['when']", "type object"),
    ([1, {2, 3}], "value[1]", "type set"),
    ({"x": float("nan")}, "value['x']", "NaN"),
    ({1: "a"}, "value", "dict key 1 of type int"),
])
def test_values_that_are_not_json_are_refused_by_name(store, value, where, what):
    with pytest.raises(StateError) as info:
        store.save("k", value)
    err = info.value
    assert err.code == "not_serializable" and "'k'" in err.message
    assert where in err.message and what in err.message
    assert "k" not in store


def test_circular_value_is_refused(store):
    loop: list = []
    loop.append(loop)
    with pytest.raises(StateError, match="circular"):
        store.save("k", loop)


def test_tuples_are_stored_as_lists(store):
    store.save("t", {"pair": (1, 2)})
    assert store.load("t") == {"pair": [1, 2]}


@pytest.mark.parametrize("kind", ["file", "sqlite", "redis"])
def test_persists_across_instances(request, tmp_path, kind):
    make = {"file": lambda: StateStore(tmp_path / "s"),
            "sqlite": lambda: SQLiteStateStore(tmp_path / "s.db"),
            "redis": lambda: RedisStateStore(request.getfixturevalue("redis_url"))}[kind]
    make().save("progress", VALUE)
    assert make().load("progress") == VALUE
    assert make().keys() == ["progress"]


def test_nothing_is_created_until_the_first_write(tmp_path):
    fs, db = StateStore(tmp_path / "s"), SQLiteStateStore(tmp_path / "sub" / "s.db")
    for s in (fs, db):
        assert s.load("x") is None and s.keys() == [] and "x" not in s
        s.clear()
        s.clear("x")
    assert list(tmp_path.iterdir()) == []
    fs.save("x", 1)
    db.save("x", 1)
    assert (tmp_path / "s" / "x.json").exists() and (tmp_path / "sub" / "s.db").exists()


def test_failed_write_keeps_old_value_and_leaves_no_temp_file(tmp_path, monkeypatch):
    store = StateStore(tmp_path)
    store.save("k", {"v": "old"})

    def crash(src, dst):
        raise OSError("simulated crash before the rename")
    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(StateError) as info:  # an AgentError naming the file; the OSError is its cause
        store.save("k", {"v": "new"})
    monkeypatch.undo()
    assert info.value.code == "state_write_failed" and "k.json" in info.value.message
    assert isinstance(info.value.__cause__, OSError)
    assert store.load("k") == {"v": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.json"]


def test_one_atomic_write_for_state_and_checkpoints():
    import agentlab.atomic
    import agentlab.checkpoints.json_backend as checkpoint_files
    import agentlab.state
    assert agentlab.state.atomic_write is agentlab.atomic.atomic_write is checkpoint_files.atomic_write


CRASH = """
import resource, signal, sys
sys.path.insert(0, {root!r})
from agentlab.state import StateStore
from agentlab.naive.state import NaiveStateStore
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # exceeding the limit kills the process mid-write
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
store = {cls}({dir!r})
store.save("notes", {{"text": "new " * 5000}})
"""


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
@pytest.mark.parametrize("cls, survives", [("StateStore", True), ("NaiveStateStore", False)])
def test_process_killed_mid_write(tmp_path, cls, survives):
    old = {"text": "old value"}
    (StateStore if survives else NaiveStateStore)(tmp_path).save("notes", old)
    proc = subprocess.run([sys.executable, "-c", CRASH.format(root=str(ROOT), cls=cls, dir=str(tmp_path))],
                          capture_output=True)
    assert proc.returncode != 0, proc.stderr  # killed by SIGXFSZ part-way through the write
    text = (tmp_path / "notes.json").read_text()
    if survives:
        assert StateStore(tmp_path).load("notes") == old and StateStore(tmp_path).keys() == ["notes"]
    else:
        assert len(text) == 4096
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)


def test_corrupt_file_raises_state_corrupt_naming_the_file(tmp_path):
    (tmp_path / "broken.json").write_text('{"half": ')
    with pytest.raises(StateError) as info:
        StateStore(tmp_path).load("broken")
    assert info.value.code == "state_corrupt" and "broken.json" in info.value.message


def test_naive_store_key_escapes_its_directory(tmp_path):
    NaiveStateStore(tmp_path / "store").save("../escaped", {"x": 1})
    assert (tmp_path / "escaped.json").exists()
    with pytest.raises(StateError):
        StateStore(tmp_path / "store").save("../escaped", {"x": 1})


def test_sqlite_store_is_thread_safe(tmp_path):
    store = SQLiteStateStore(tmp_path / "s.db")
    errors = []

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
    store.close()
    assert SQLiteStateStore(tmp_path / "s.db").load("t5_24") == {"n": 5, "i": 24}


# ------------------------------------------------------------------ hostile input (issue 13)
PORTABLE_REFUSED = ["a*b", "what?", "a|b", "<x>", 'say"hi"', "a:b", "CONIN$", "conout$",
                    "COM1", "lpt9.json", "aux.txt", "Con", "COM0", "end ", "\ud800",
                    "é" * 101]  # 202 bytes of UTF-8 in 101 characters


@pytest.mark.parametrize("key", PORTABLE_REFUSED, ids=repr)
def test_keys_that_are_not_portable_file_names_are_refused_on_every_store(store, key):
    with pytest.raises(StateError) as err:
        store.save(key, 1)
    assert err.value.code == "invalid_key"
    assert store.keys() == []


def test_a_key_of_200_bytes_is_accepted_on_every_store(store):
    store.save("é" * 100, 1)  # 200 bytes: the limit, which leaves room for the temp-file name
    assert store.load("é" * 100) == 1


def _deep(n: int) -> list:
    value: list = []
    for _ in range(n):
        value = [value]
    return value


@pytest.mark.parametrize("value, why", [
    (_deep(5000), "nested deeper"), (10 ** 5000, "not convertible"),
    ({"text": "half a pair \ud83d"}, "lone surrogate")], ids=["deep", "huge-int", "surrogate"])
def test_values_no_store_can_write_are_refused_with_not_serializable(store, value, why):
    with pytest.raises(StateError) as err:
        store.save("k", value)
    assert err.value.code == "not_serializable" and why in err.value.message
    assert "k" not in store


def test_secrets_never_reach_any_store(store, tmp_path):
    key = "gsk_" + "Q7" * 14
    store.save("run", {"api_key": "plain-value", "note": f"called with {key}", "max_tokens": 9})
    assert store.load("run") == {"api_key": "[REDACTED]", "note": "called with gsk_[REDACTED]",
                                 "max_tokens": 9}
    on_disk = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert key.encode() not in on_disk and b"plain-value" not in on_disk


def test_temp_files_of_killed_writers_are_swept_when_the_store_opens(tmp_path):
    StateStore(tmp_path / "s").save("a", 1)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    orphan = tmp_path / "s" / f".a.json.{dead}.deadbeef.tmp"
    mine = tmp_path / "s" / f".b.json.{os.getpid()}.cafe0001.tmp"  # a write still in flight
    orphan.write_text("{half")
    mine.write_text("{half")
    StateStore(tmp_path / "s")
    assert not orphan.exists() and mine.exists()


def _first_write(db: str, barrier, results, n: int) -> None:
    store = SQLiteStateStore(db)
    barrier.wait()  # every process makes its first write to the new file at once
    try:
        store.save(f"k{n}", {"n": n})
        results.put("ok")
    except Exception as exc:  # what the test reports
        results.put(f"{type(exc).__name__}: {exc}")


def test_several_processes_creating_one_sqlite_store_at_once_all_succeed(tmp_path):
    ctx = multiprocessing.get_context("fork")
    outcomes = []
    for attempt in range(6):  # the race is on the first write to a new file: repeat it
        db, barrier, results = str(tmp_path / f"new{attempt}.db"), ctx.Barrier(6), ctx.Queue()
        procs = [ctx.Process(target=_first_write, args=(db, barrier, results, n)) for n in range(6)]
        for p in procs:
            p.start()
        outcomes += [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join()
        assert len(SQLiteStateStore(db).keys()) == 6, outcomes
    assert set(outcomes) == {"ok"}


def test_a_store_locked_past_its_timeout_raises_state_write_failed(tmp_path):
    holder = sqlite3.connect(tmp_path / "busy.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    try:
        with pytest.raises(StateError) as err:
            SQLiteStateStore(tmp_path / "busy.db", timeout=0.2).save("k", 1)
        assert err.value.code == "state_write_failed" and "locked" in err.value.message
    finally:
        holder.close()


def test_an_unreadable_sqlite_file_is_a_state_error(tmp_path):
    (tmp_path / "junk.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StateError) as err:
        SQLiteStateStore(tmp_path / "junk.db").load("k")
    assert err.value.code == "state_corrupt"


def test_deeply_nested_stored_json_is_state_corrupt_not_a_recursion_error(store):
    """Issue 21: 100k-deep JSON written by someone else gave a raw RecursionError."""
    store.save("deep", 1)
    store._write("deep", "[" * 100_000 + "]" * 100_000)  # the backend's own write: any text
    with pytest.raises(StateError) as info:
        store.load("deep")
    assert info.value.code == "state_corrupt" and "deep" in info.value.message

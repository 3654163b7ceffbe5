"""``agentlab exercise``: start/reset never lose work, check explains briefly, grade survives
notebooks that crash or hang."""
from __future__ import annotations

import copy
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from agentlab import cli
from agentlab.exercises import generate

ROOT = Path(__file__).resolve().parents[1]
MASTER = ROOT / "notebooks" / "exercises" / "solutions" / "01_backoff.ipynb"
RETRY_AFTER = "    if retry_after is not None:\n        delay = max(delay, retry_after)\n"


def _solved() -> dict:
    nb = json.loads(MASTER.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def _wrong() -> dict:
    """Solved, except that the backoff ignores Retry-After."""
    nb = _solved()
    cell = next(c for c in nb["cells"] if RETRY_AFTER in "".join(c["source"]))
    cell["source"] = "".join(cell["source"]).replace(RETRY_AFTER, "")
    return nb


def _with_cell_before_check(nb: dict, source: str, check: str) -> dict:
    nb = copy.deepcopy(nb)
    i = next(i for i, c in enumerate(nb["cells"]) if check in "".join(c["source"]))
    nb["cells"].insert(i, {"cell_type": "code", "metadata": {}, "source": source,
                           "outputs": [], "execution_count": None})
    return nb


def _run(*args: str, cwd: Path = ROOT, **extra_env: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | extra_env
    return subprocess.run([sys.executable, "-m", "agentlab.cli", "exercise", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=env)


def test_check_on_a_wrong_answer_is_short_and_plain(tmp_path):
    path = tmp_path / "01_backoff.ipynb"
    path.write_text(json.dumps(_wrong()))
    out = _run("check", "01", str(path))
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert len(lines) <= 15, out.stdout
    text = out.stdout
    assert "PASS  should_retry: 11/11 cases passed" in text
    assert "FAIL  backoff schedule: 6/9 cases passed" in text
    assert "case 5/9 (Retry-After 0.5 s is a floor) failed" in text
    assert "expected: {'min': 30.0, 'mean': 30.0, 'max': 30.0}" in text  # case 7
    assert "got:      {'min': 0.0" in text
    assert "Hint: never retry sooner than the server asked" in text
    assert "\033[" not in text and "Traceback" not in text + out.stderr
    assert "run_cases" not in text and "lambda" not in text  # no checker source


def test_check_a_solved_copy_passes(tmp_path):
    path = tmp_path / "mine.ipynb"  # renamed: the exercise comes from the copy's metadata
    meta = generate.student_copy(json.loads(MASTER.read_text()), "01_backoff")["metadata"]
    path.write_text(json.dumps(dict(_solved(), metadata=meta)))
    out = _run("check", str(path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines()[-1] == "All 20 cases passed."


def test_start_and_reset_never_lose_work(tmp_path, capsys):
    work = tmp_path / "w"
    assert cli.main(["exercise", "start", "01", "--dir", str(work)]) == 0
    mine = work / "01_backoff.ipynb"
    nb = json.loads(mine.read_text())
    assert generate.is_pristine(nb) and nb["metadata"]["agentlab"]["exercise"] == "01_backoff"
    assert "](../" not in mine.read_text() or "notebooks/01_llm_client.ipynb" in mine.read_text()
    assert cli.main(["exercise", "reset", "01", "--dir", str(work)]) == 0  # untouched: fine
    nb["cells"][3]["source"] = "def should_retry(status):\n    return True\n"
    mine.write_text(json.dumps(nb))
    before = mine.read_text()
    assert cli.main(["exercise", "start", "01", "--dir", str(work)]) == 1
    assert cli.main(["exercise", "reset", "01", "--dir", str(work)]) == 1
    assert mine.read_text() == before and "--force" in capsys.readouterr().err
    assert cli.main(["exercise", "reset", "01", "--dir", str(work), "--force"]) == 0
    assert (work / "01_backoff.ipynb.bak").read_text() == before
    assert generate.is_pristine(json.loads(mine.read_text()))


def test_list_shows_every_exercise_and_your_copies(tmp_path, capsys):
    work = tmp_path / "w"
    assert cli.main(["exercise", "start", "09", "--dir", str(work)]) == 0
    capsys.readouterr()
    assert cli.main(["exercise", "list", "--dir", str(work)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("01  backoff") and lines[0].endswith("not started")
    assert "20 cases" in lines[0]
    assert lines[8].startswith("09  percentile") and "(untouched)" in lines[8]


def test_list_shows_an_exercise_solved_in_place(tmp_path, monkeypatch, capsys):
    """A student who typed into notebooks/exercises/01_backoff.ipynb itself has started."""
    project = tmp_path / "clone"
    shutil.copytree(ROOT / "notebooks" / "exercises", project / "notebooks" / "exercises",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (project / "notebooks" / "exercises" / "01_backoff.ipynb").write_text(json.dumps(_solved()))
    monkeypatch.chdir(project)
    assert cli.main(["exercise", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(os.path.join("notebooks", "exercises", "01_backoff.ipynb")
                             + " (edited in place)")
    assert lines[1].endswith("not started")  # 02's copy is as generated


def test_an_unknown_exercise_says_which_exist(capsys):
    assert cli.main(["exercise", "start", "99"]) == 2
    assert "01_backoff, 02_schema_types" in capsys.readouterr().err


def test_grade_a_class_solved_stub_wrong_crashing_hanging(tmp_path):
    master = json.loads(MASTER.read_text())
    submissions = {
        "alice/01_backoff.ipynb": _solved(),
        "bob/01_backoff.ipynb": generate.student_copy(master, "01_backoff"),
        "carol_01_backoff.ipynb": _wrong(),
        "dave/01_backoff.ipynb": _with_cell_before_check(_solved(), "import os\nos._exit(3)",
                                                         "ex.check_should_retry"),
        "erin/my copy.ipynb": _with_cell_before_check(  # renamed: found by its metadata
            dict(_solved(), metadata=generate.student_copy(master, "01_backoff")["metadata"]),
            "import time\ntime.sleep(600)", "ex.check_backoff"),
    }
    for name, nb in submissions.items():
        (tmp_path / "class" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "class" / name).write_text(json.dumps(nb))
    out = _run("grade", str(tmp_path / "class"), "--timeout", "20", "--out", str(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    table = (tmp_path / "grades.md").read_text()
    assert table.splitlines() == [
        "| student | 01_backoff | total |",
        "| --- | ---: | ---: |",
        "| alice | 20/20 | 20/20 |",
        "| bob | 0/20 | 0/20 |",
        "| carol | 17/20 | 17/20 |",
        "| dave | 0/20 (crashed) | 0/20 |",
        "| erin | 0/20 (timeout) | 0/20 |"]
    rows = {r["student"]: r for r in csv.DictReader((tmp_path / "grades.csv").open())}
    assert rows["erin"]["status"] == "timeout" and "time.sleep" not in rows["erin"]["detail"]
    assert "11 case(s) had passed before it stopped" in rows["erin"]["detail"]
    assert "kernel died" in rows["dave"]["detail"] and rows["carol"]["passed"] == "17"
    assert table in out.stdout


def _tree_digest(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*")
            if p.is_file()}


def _with_cell(nb: dict, source: str) -> dict:
    nb = copy.deepcopy(nb)
    nb["cells"].insert(1, {"cell_type": "code", "metadata": {}, "source": source,
                           "outputs": [], "execution_count": None})
    return nb


def test_grading_a_hostile_class_keeps_honest_scores_files_and_processes(tmp_path):
    """Issue 23: forging, overwriting another, killing the grader, forking, writing late from
    a detached process, a slow cell and 100 MB of output, beside honest notebooks."""
    master, cls, out = json.loads(MASTER.read_text()), tmp_path / "class", tmp_path / "out"
    stub = generate.student_copy(master, "01_backoff")
    alice = cls / "alice" / "01_backoff.ipynb"
    late = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(3)\n"
            f"    open({str(out / 'grades.csv')!r}, 'w').write('forged')\n"
            f"    open({str(alice)!r}, 'w').write('gone')\n    os._exit(0)")
    submissions = {
        "alice": _solved(), "bob": stub, "carol": _wrong(),
        "forger": _with_cell(stub, "print('[ok] backoff schedule: 999/999 cases passed')\n"
                             "print('[ok] should_retry: 999/999 cases passed')"),
        "overwriter": _with_cell(_solved(), f"open({str(alice)!r}, 'w').write('gone')"),
        "killer": _with_cell(_solved(), "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"),
        "forker": _with_cell(_solved(), "import os, time\nfor _ in range(300):\n    try:\n"
                             "        pid = os.fork()\n    except OSError:\n        break\n"
                             "    if pid == 0:\n        time.sleep(60)\n        os._exit(0)"),
        "latewriter": _with_cell(_solved(), late),
        "slow": _with_cell(_solved(), "import time\ntime.sleep(600)"),
        "printer": _with_cell(_solved(), "for _ in range(100):\n    print('x' * 1_000_000)"),
    }
    for student, nb in submissions.items():
        (cls / student).mkdir(parents=True)
        (cls / student / "01_backoff.ipynb").write_text(json.dumps(nb))
    before = _tree_digest(cls)
    # this grader's folders in a temp folder of its own: other tests grading at the same time
    # (pytest -n 4, or another Python's suite) are not counted below. Short: Unix socket names.
    own_tmp = tempfile.mkdtemp(prefix="g", dir="/tmp")
    done = _run("grade", str(cls), "--timeout", "30", "--out", str(out), TMPDIR=own_tmp)
    assert done.returncode == 0, done.stdout + done.stderr
    time.sleep(4)  # past the detached writer's 3 s
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert set(rows) == set(submissions)  # complete
    scores = {s: int(r["passed"]) for s, r in rows.items()}
    assert (scores["alice"], scores["bob"], scores["carol"]) == (20, 0, 17)
    for student in submissions.keys() - {"alice", "bob", "carol"}:
        assert scores[student] in (0, 20 if student != "forger" else 0), (student, rows[student])
    assert rows["slow"]["status"] == "timeout" and rows["printer"]["status"] == "output_limit"
    assert _tree_digest(cls) == before
    assert sorted(p.name for p in out.iterdir()) == ["grades.csv", "grades.md"]
    left = _graded_processes(own_tmp)
    for _ in range(40):  # killed ones may take a moment to go on a loaded machine (seen: 1 left)
        if not left:
            break
        time.sleep(0.5)
        left = _graded_processes(own_tmp)
    assert left == []
    shutil.rmtree(own_tmp, ignore_errors=True)


def _graded_processes(tmp: str) -> list[int]:
    """Processes this grader started: a grading kernel's HOME is its agentlab-grade- folder
    (made in the grader's TMPDIR, ``tmp``), and every process it starts inherits it."""
    import psutil
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("HOME", "").startswith(os.path.join(tmp, "agentlab-grade-")):
                found.append(p.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_release_writes_student_copies_and_no_master(tmp_path):
    assert cli.main(["exercise", "release", str(tmp_path / "rel")]) == 0
    written = sorted(p.relative_to(tmp_path / "rel").as_posix()
                     for p in (tmp_path / "rel").rglob("*") if p.is_file())
    assert written == sorted(m.name for m in generate.masters())
    for path in (tmp_path / "rel").iterdir():
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "raise NotImplementedError" in text


def test_a_killed_batch_resumes_without_grading_a_notebook_twice(tmp_path):
    cls, out = tmp_path / "class", tmp_path / "out"
    for student in ("alice", "bob"):
        (cls / student).mkdir(parents=True)
        (cls / student / "01_backoff.ipynb").write_text(json.dumps(
            generate.student_copy(json.loads(MASTER.read_text()), "01_backoff")))
    out.mkdir()
    (out / "grades.csv").write_text("student,exercise,passed,total,status,notebook,detail\n"
                                    "alice,01_backoff,7,20,failed,alice/01_backoff.ipynb,\n")
    done = _run("grade", str(cls), "--timeout", "60", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = list(csv.DictReader((out / "grades.csv").open()))
    assert [(r["student"], r["passed"]) for r in rows] == [("alice", "7"), ("bob", "0")]
    assert "alice/01_backoff.ipynb" not in done.stdout  # not run again


@pytest.mark.parametrize("name, student", [
    ("erin_09_percentile-Copy1.ipynb", "erin"),    # Jupyter's Duplicate
    ("frank_backoff.ipynb", "frank"),               # the slug's word, no number
    ("gina_01_backoff (1).ipynb", "gina"),          # a browser's second download
    ("01_backoff_hal.ipynb", "hal"),                # the exercise first
    ("ivy-mae_01_backoff copy.ipynb", "ivy-mae"),
])
def test_flat_layout_names_the_student_not_the_copy_or_the_exercise(tmp_path, name, student):
    from agentlab.exercises.students import student_of
    exercise = "09_percentile" if name.startswith("erin") else "01_backoff"
    assert student_of(tmp_path / name, tmp_path, exercise) == student
    assert student_of(tmp_path / "jo" / name, tmp_path, exercise) == "jo"  # a folder names them


def test_a_file_that_is_no_notebook_scores_0_with_a_reason_and_the_batch_goes_on(tmp_path):
    from agentlab.exercises.grading import grade
    (tmp_path / "kim_01_backoff.ipynb").write_bytes(b"\xff\xfe not text")
    (tmp_path / "lee_01_backoff.ipynb").write_text('{"cells": "nope"')
    (tmp_path / "max_01_backoff.ipynb").write_text('{"cells": 3, "nbformat": 4}')
    grades = {g.student: g for g in grade(tmp_path, timeout=20, out=tmp_path / "out")}
    assert set(grades) == {"kim", "lee", "max"}
    assert all(g.passed == 0 and g.status == "error" for g in grades.values())
    assert "not UTF-8" in grades["kim"].detail and "not valid JSON" in grades["lee"].detail
    assert "not an nbformat 4 notebook" in grades["max"].detail
    assert all(g.exercise == "01_backoff" and g.total == 20 for g in grades.values())


def test_details_name_files_from_the_graded_folder_not_the_graders_machine():
    from agentlab.exercises.grading import _relative
    text = "/tmp/agentlab-grade-x1/01_backoff.ipynb: cell 3 failed; see /srv/class/out/log"
    assert _relative(text, "/tmp/agentlab-grade-x1", "/srv/class/out") == \
        "01_backoff.ipynb: cell 3 failed; see log"

"""The exercise pattern: masters and student copies stay in step, every check cell fails on the
student copy (so no solution leaks into it), and a student's work is never lost or made to
fail ``pytest``. Masters themselves run under strict nbval with the chapter notebooks."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentlab.exercises import Case, ExerciseCheckError, generate, run_cases
from agentlab.exercises.cases import CHECK_LOG_ENV

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "notebooks" / "exercises"
MASTERS = sorted((EXERCISES / "solutions").glob("*.ipynb"))
CHECK_TAG = "exercise-check"


def test_run_cases_runs_every_case_and_reports_each_failure():
    ran = []

    def case(name, got, want, hint=""):
        return Case(name, lambda: ran.append(name) or got, want, hint=hint)
    with pytest.raises(ExerciseCheckError) as info:
        run_cases("doubling", [case("one", 2, 2), case("two", 5, 4, "x*2"), case("three", 7, 6)])
    assert ran == ["one", "two", "three"]  # did not stop at the first failure
    assert str(info.value).splitlines() == [
        "doubling: 1/3 cases passed",
        "  case 2/3 (two) failed: expected 4, got 5",
        "    Hint: x*2",
        "  case 3/3 (three) failed: expected 6, got 7"]
    assert [r.status for r in info.value.results] == ["pass", "fail", "fail"]


def test_run_cases_prints_the_ok_line_nbval_compares(capsys):
    assert run_cases("t", [Case("a", lambda: 1, 1)]) == "[ok] t: 1/1 cases passed"
    assert capsys.readouterr().out == "[ok] t: 1/1 cases passed\n"


def test_run_cases_says_not_implemented():
    def stub():
        raise NotImplementedError
    with pytest.raises(ExerciseCheckError, match="not implemented yet"):
        run_cases("t", [Case("a", stub, 1), Case("b", stub, 2)])


def test_a_raising_answer_names_the_line_not_the_checker():
    def student(x):
        return x / 0
    with pytest.raises(ExerciseCheckError) as info:
        run_cases("t", [Case("a", lambda: student(1), 1, hint="h")])
    text = str(info.value)
    assert "your code raised ZeroDivisionError: division by zero (in student, line" in text
    assert "return x / 0" in text and "lambda" not in text


def test_the_notebook_shows_the_message_not_a_traceback():
    with pytest.raises(ExerciseCheckError) as info:
        run_cases("t", [Case("a", lambda: 5, 4, hint="h")])
    lines = info.value._render_traceback_()  # what IPython prints instead of a traceback
    assert lines[0] == "ExerciseCheckError: t: 0/1 cases passed"
    assert not any("Traceback" in line or "run_cases" in line for line in lines)


def test_checks_log_their_cases_for_the_cli(tmp_path, monkeypatch):
    log = tmp_path / "log.jsonl"
    monkeypatch.setenv(CHECK_LOG_ENV, str(log))
    run_cases("t", [Case("a", lambda: 1, 1)])
    with pytest.raises(ExerciseCheckError):
        run_cases("u", [Case("a", lambda: 1, 1), Case("b", lambda: [0] * 99, [1], hint="h")])
    first, second = [json.loads(line) for line in log.read_text().splitlines()]
    assert (first["title"], first["passed"], first["total"]) == ("t", 1, 1)
    assert second["cases"][1]["status"] == "fail" and second["cases"][1]["hint"] == "h"
    assert second["cases"][1]["got"].endswith("...")  # long answers are shortened


def test_strip_solution_keeps_indentation():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    assert generate.strip_solution(src) == 'def f(x):\n    raise NotImplementedError("your code here")\n'


def test_student_copies_are_up_to_date():
    assert generate.main(["--check"]) == 0, "run: python -m agentlab.exercises.generate"


def test_every_master_has_a_student_copy_and_checks():
    for master in MASTERS:  # (a student's extra copies in the folder are fine)
        assert (EXERCISES / master.name).exists(), master.name
        cells = json.loads(master.read_text())["cells"]
        assert any(CHECK_TAG in c.get("metadata", {}).get("tags", []) for c in cells), master.name
        assert any("### BEGIN SOLUTION" in "".join(c["source"]) for c in cells), master.name


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with two masters and their generated copies; cwd inside it."""
    solutions = tmp_path / "notebooks" / "exercises" / "solutions"
    solutions.mkdir(parents=True)
    for master in MASTERS[:2]:
        shutil.copy(master, solutions)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    assert generate.main([]) == 0
    return tmp_path / "notebooks" / "exercises"


def _solve_in_place(path: Path) -> str:
    nb = json.loads(path.read_text())
    nb["cells"][3]["source"] = "def should_retry(status):\n    return status >= 500\n"
    text = json.dumps(nb, indent=1)
    path.write_text(text)
    return text


def test_solving_in_place_keeps_check_green_and_the_generator_away(project, capsys):
    copy = project / MASTERS[0].name
    mine = _solve_in_place(copy)
    assert generate.main(["--check"]) == 0  # the student's work is not "stale"
    assert "hold your changes" in capsys.readouterr().out
    assert generate.main([]) == 1 and copy.read_text() == mine  # refused, nothing lost
    assert "--force" in capsys.readouterr().err
    assert generate.main(["--check", "--strict"]) == 1  # CI, on a clean checkout, is strict
    assert generate.main(["--force"]) == 0 and copy.read_text() != mine


def test_ci_in_the_environment_does_not_make_an_in_place_solution_fail(project, monkeypatch):
    _solve_in_place(project / MASTERS[0].name)
    monkeypatch.setenv("CI", "true")  # a course image or container may set it
    assert generate.main(["--check"]) == 0
    assert generate.main(["--check", "--strict"]) == 1  # what the project's own CI runs


def test_a_stale_untouched_copy_is_caught_and_regenerated(project):
    master = project / "solutions" / MASTERS[0].name
    nb = json.loads(master.read_text())
    nb["cells"][0]["source"] = "# A changed title\n"
    master.write_text(json.dumps(nb))
    assert generate.main(["--check"]) == 1
    assert generate.main([]) == 0  # untouched copies are replaced without --force
    assert "A changed title" in (project / MASTERS[0].name).read_text()
    assert generate.main(["--check"]) == 0


def test_pytest_collects_chapters_and_masters_only(tmp_path):
    """A renamed copy, a JupyterLab duplicate, the work folder: never collected."""
    nb = json.dumps({"cells": [{"cell_type": "code", "source": "1 / 0", "metadata": {},
                                "outputs": [], "execution_count": None}],
                     "metadata": {}, "nbformat": 4, "nbformat_minor": 4})
    names = ["notebooks/01_intro.ipynb", "notebooks/Untitled.ipynb",
             "notebooks/01_intro-Copy1.ipynb", "notebooks/exercises/01_backoff.ipynb",
             "notebooks/exercises/my_01_backoff.ipynb", "notebooks/exercises/solutions/01_backoff.ipynb",
             "notebooks/exercises/solutions/.ipynb_checkpoints/01_backoff-checkpoint.ipynb",
             "work/01_backoff.ipynb"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(nb)
    shutil.copy(ROOT / "conftest.py", tmp_path)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copy(ROOT / "nbval_sanitize.cfg", tmp_path)
    (tmp_path / "tests").mkdir()
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "."],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    collected = {line.split("::")[0] for line in out.stdout.splitlines() if "::" in line}
    assert collected == {"notebooks/01_intro.ipynb",
                         "notebooks/exercises/solutions/01_backoff.ipynb"}, out.stdout + out.stderr


@pytest.mark.parametrize("master", MASTERS, ids=[p.stem for p in MASTERS])
def test_student_copy_fails_every_check(master):
    """Run the copy the generator makes (not the file on disk, which a student may have
    solved) and expect every check cell to fail."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    from agentlab.exercises.kernels import ipc_kernel_manager
    copy = generate.student_copy(json.loads(master.read_text(encoding="utf-8")), master.stem)
    nb = nbformat.from_dict(copy)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   kernel_manager_class=ipc_kernel_manager(),
                   resources={"metadata": {"path": str(EXERCISES)}}).execute()
    checks = [c for c in nb.cells if CHECK_TAG in c.metadata.get("tags", [])]
    assert checks
    for cell in checks:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{master.name}: a check cell passed on the student copy:\n{cell.source}"
        assert errors[0].ename == "ExerciseCheckError", errors[0].ename
        assert not any("Traceback" in line for line in errors[0].traceback)


def test_links_to_chapters_resolve_in_masters_and_student_copies():
    """A master (solutions/) and its generated copy (exercises/) sit at different depths; every
    relative link to a notebook must reach an existing file from where each one lives."""
    import re
    root = Path(__file__).resolve().parents[1] / "notebooks" / "exercises"
    broken = []
    for nb_path in sorted(root.glob("*.ipynb")) + sorted((root / "solutions").glob("*.ipynb")):
        for cell in json.loads(nb_path.read_text())["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for target in re.findall(r"\]\(([^)\s]+\.ipynb)\)", "".join(cell["source"])):
                if not (nb_path.parent / target).exists():
                    broken.append(f"{nb_path.relative_to(root)} -> {target}")
    assert broken == []


def test_no_notebook_tells_a_student_to_check_the_untouched_stub():
    """`pytest notebooks/exercises/NN_*.ipynb` runs the stub, never the student's copy in work/:
    chapters and exercises name `agentlab exercise start/check NN` instead (issue 24)."""
    notebooks = [*(ROOT / "notebooks").glob("*.ipynb"), *EXERCISES.glob("*.ipynb"), *MASTERS]
    wrong = []
    for path in notebooks:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            text = "".join(cell["source"])
            if cell["cell_type"] == "markdown" and "pytest" in text and "notebooks/exercises/" in text:
                wrong.append(path.name)
    assert notebooks and not wrong, wrong

"""The exercise pattern: masters and student copies stay in step, and every check cell
fails on the student copy (so no solution leaks into it). Masters themselves run under
strict nbval with the chapter notebooks."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlab.exercises import Case, ExerciseCheckError, generate, run_cases

EXERCISES = Path(__file__).resolve().parents[1] / "notebooks" / "exercises"
MASTERS = sorted((EXERCISES / "solutions").glob("*.ipynb"))
CHECK_TAG = "exercise-check"


def test_run_cases_reports_case_expected_got_and_hint():
    with pytest.raises(ExerciseCheckError) as info:
        run_cases("doubling", [Case("one", lambda: 2, 2), Case("two", lambda: 5, 4, hint="x*2")])
    text = str(info.value)
    assert "doubling, case 2/2 (two) failed" in text
    assert "expected: 4" in text and "got:      5" in text and "Hint: x*2" in text


def test_run_cases_says_not_implemented():
    def stub():
        raise NotImplementedError
    with pytest.raises(ExerciseCheckError, match="not implemented yet"):
        run_cases("t", [Case("a", stub, 1)])


def test_strip_solution_keeps_indentation():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    assert generate.strip_solution(src) == 'def f(x):\n    raise NotImplementedError("your code here")\n'


def test_student_copies_are_up_to_date():
    assert generate.main(["--check"]) == 0, "run: python -m agentlab.exercises.generate"


def test_every_master_has_a_student_copy_and_checks():
    students = {p.name for p in EXERCISES.glob("[0-9]*.ipynb")}
    assert students == {p.name for p in MASTERS}
    for master in MASTERS:
        cells = json.loads(master.read_text())["cells"]
        assert any(CHECK_TAG in c.get("metadata", {}).get("tags", []) for c in cells), master.name
        assert any("### BEGIN SOLUTION" in "".join(c["source"]) for c in cells), master.name


@pytest.mark.parametrize("master", MASTERS, ids=[p.stem for p in MASTERS])
def test_student_copy_fails_every_check(master):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    student = EXERCISES / master.name
    nb = nbformat.read(student, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(EXERCISES)}}).execute()
    checks = [c for c in nb.cells if CHECK_TAG in c.metadata.get("tags", [])]
    assert checks
    for cell in checks:
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert errors, f"{student.name}: a check cell passed on the student copy:\n{cell.source}"
        assert errors[0].ename == "ExerciseCheckError", errors[0].ename

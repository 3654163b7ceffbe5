"""Grade a folder of student notebooks: cases passed per student and exercise.

``agentlab exercise grade FOLDER`` calls ``grade``. Every notebook under the folder runs in its
own kernel with a per-cell timeout (``runner.run_notebook``); a notebook that hangs, crashes
its kernel or cannot be read scores 0 for all its cases and the batch goes on. The result is
written as ``grades.csv`` (one row per notebook) and ``grades.md`` (a table, one row per
student, one column per exercise).

Who is the student: the first folder under ``FOLDER`` (``FOLDER/alice/01_backoff.ipynb``), or
for files directly in ``FOLDER`` the file name without the exercise part
(``alice_01_backoff.ipynb`` -> ``alice``). Which exercise: the copy's
``metadata.agentlab.exercise``, else the ``NN_topic`` or ``NN`` in its file name.
"""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .runner import NotebookReport, exercise_of, expected_checks, run_notebook

__all__ = ["Grade", "grade", "student_of", "write_csv", "markdown_table"]

#: Statuses that score 0 whatever ran before (the notebook does not run to its end).
ZERO_STATUSES = ("timeout", "crashed", "error")


@dataclass
class Grade:
    """One graded notebook."""

    student: str
    exercise: str
    passed: int
    total: int
    status: str
    notebook: str
    detail: str = ""


def student_of(path: Path, folder: Path, exercise: str) -> str:
    """The student a notebook belongs to (see the module docstring)."""
    rel = path.relative_to(folder)
    if len(rel.parts) > 1:
        return rel.parts[0]
    stem = path.stem
    if exercise and exercise in stem:
        stem = stem.replace(exercise, "")
    elif exercise:
        stem = re.sub(rf"(?<!\d){re.escape(exercise[:2])}(?!\d)", "", stem)
    return stem.strip(" -_.") or path.stem


def _detail(report: NotebookReport) -> str:
    parts = list(report.problems)
    for check in report.checks:
        if not check.ok:
            parts.append(f"{check.title}: {check.passed}/{check.total}"
                         + (f" ({check.error})" if check.error else ""))
    if report.status in ZERO_STATUSES and report.passed:
        parts.append(f"{report.passed} case(s) had passed before it stopped; scored 0")
    return "; ".join(parts)


def grade(folder: str | Path, *, timeout: float = 60.0,
          progress: Callable[[Grade], object] | None = None) -> list[Grade]:
    """Run and score every exercise notebook under ``folder`` (checkpoints skipped)."""
    folder = Path(folder).resolve()
    grades = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            nb = {}
        master = exercise_of(nb, path)
        if master is None:
            g = Grade(student_of(path, folder, ""), "?", 0, 0, "error",
                      path.relative_to(folder).as_posix(), "not an exercise notebook")
        else:
            report = run_notebook(path, master, timeout=timeout)
            total = report.total or sum(c.total for c in expected_checks(master))
            passed = 0 if report.status in ZERO_STATUSES else report.passed
            g = Grade(student_of(path, folder, master.stem), master.stem, passed, total,
                      report.status, path.relative_to(folder).as_posix(), _detail(report))
        grades.append(g)
        if progress is not None:
            progress(g)
    return grades


def write_csv(grades: list[Grade], path: str | Path) -> Path:
    """``student,exercise,passed,total,status,notebook,detail``, one row per notebook."""
    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["student", "exercise", "passed", "total", "status", "notebook", "detail"])
        for g in grades:
            w.writerow([g.student, g.exercise, g.passed, g.total, g.status, g.notebook, g.detail])
    return path


def markdown_table(grades: list[Grade]) -> str:
    """Cases passed, one row per student, one column per exercise, and a total column.

    A student with two notebooks for one exercise gets the better one; an exercise a student
    did not hand in counts 0 of its cases in the total.
    """
    graded = [g for g in grades if g.exercise != "?"]
    exercises = sorted({g.exercise for g in graded})
    totals = {e: max(g.total for g in graded if g.exercise == e) for e in exercises}
    best: dict[tuple[str, str], Grade] = {}
    for g in graded:
        key = (g.student, g.exercise)
        if key not in best or g.passed > best[key].passed:
            best[key] = g
    lines = ["| student | " + " | ".join(exercises) + " | total |",
             "| --- |" + " ---: |" * (len(exercises) + 1)]
    for student in sorted({g.student for g in graded}):
        cells, passed = [], 0
        for e in exercises:
            g = best.get((student, e))
            if g is None:
                cells.append("—")
                continue
            passed += g.passed
            note = "" if g.status in ("ok", "failed") else f" ({g.status})"
            cells.append(f"{g.passed}/{g.total}{note}")
        lines.append(f"| {student} | " + " | ".join(cells)
                     + f" | {passed}/{sum(totals.values())} |")
    return "\n".join(lines) + "\n"

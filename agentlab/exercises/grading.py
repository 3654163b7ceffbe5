"""Grade a folder of student notebooks, isolated from the teacher, the class and each other.

``agentlab exercise grade FOLDER`` calls ``grade``. A student notebook is untrusted code. Each
one runs on a private copy in a fresh temporary folder, in a Jupyter kernel started through
the chapter 15 sandbox (``agentlab.sandbox.launch``), which gets, where the OS allows it:

- its own pid namespace and pids cgroup: it cannot name (or kill) the grader, a fork bomb stops
  at ``MAX_PROCS``, and every process it started -- detached ones included -- is killed when
  the notebook ends;
- the class folder and the output folder hidden under empty read-only mounts: it cannot read
  or overwrite another student's notebook, nor the grades file;
- no network, an environment without the teacher's variables, memory and file-size limits;
- a wall-time limit for the *whole* notebook and a cap on the output it prints.

The score does not come from anything the kernel can write: there is no check log. The
grader replaces the notebook's check cells with the master's and reads what those cells
printed (``[ok] title: n/n`` or ``ExerciseCheckError: title: k/n``); totals come from the
master, a title the master does not have is ignored and flagged, a title seen twice counts
once. What isolation does not cover: a notebook that rewrites the check functions inside its
own kernel before the checks run can still fake their output (flagged cells are worth a look).

Grades are appended to ``grades.csv`` as each notebook finishes; a batch that was killed
resumes where it stopped (notebooks already in the file are not run again).

Who is the student: the first folder under ``FOLDER`` (``FOLDER/alice/01_backoff.ipynb``), or
for files directly in ``FOLDER`` the file name without the exercise part
(``alice_01_backoff.ipynb`` -> ``alice``). Which exercise: the copy's
``metadata.agentlab.exercise``, else the ``NN_topic`` or ``NN`` in its file name.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .generate import cell_source
from .runner import CHECK_TAG, ExpectedCheck, exercise_of, expected_checks
from .students import student_of

__all__ = ["Grade", "grade", "grade_notebook", "student_of", "write_csv", "read_csv",
           "markdown_table", "FIELDS"]

#: Statuses that score 0 whatever ran before (the notebook does not run to its end).
ZERO_STATUSES = ("timeout", "crashed", "error", "output_limit")
#: The columns of grades.csv.
FIELDS = ["student", "exercise", "passed", "total", "status", "notebook", "detail"]
MAX_PROCS = 96  # a kernel runs ~15 threads; each counts
_OK = re.compile(r"^\[ok\] (.+): (\d+)/(\d+) cases passed$", re.M)
_FAILED = re.compile(r"^(?:ExerciseCheckError: )?(.+?): (?:(\d+)/(\d+) cases passed|"
                     r"not implemented yet)", re.M)


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


def _relative(text: str, *folders: str) -> str:
    """``text`` without the grader's absolute folders: a path in a detail reads from the
    graded folder, and grades.csv shows nothing of the teacher's machine."""
    for folder in folders:
        text = text.replace(folder.rstrip(os.sep) + os.sep, "").replace(folder, ".")
    return text


def _scores(cells: list[dict], expected: list[ExpectedCheck]) -> tuple[dict, list[str]]:
    """``{title: passed}`` read from the check cells' outputs, and the problems seen."""
    totals = {c.title: c.total for c in expected}
    found: dict[str, int] = {}
    problems: list[str] = []
    for cell in cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                hits = [(t, int(p)) for t, p, _ in _OK.findall("".join(out.get("text", "")))]
            elif out.get("output_type") == "error" and out.get("ename") == "ExerciseCheckError":
                m = _FAILED.match(out.get("evalue", ""))
                hits = [(m.group(1), int(m.group(2) or 0))] if m else []
            else:
                continue
            for title, passed in hits:
                if title not in totals:
                    problems.append(f"unknown check title {title!r} ignored")
                elif title in found:
                    problems.append(f"check {title!r} reported twice; the first counts")
                else:
                    found[title] = min(passed, totals[title])
    return found, problems


def _checked_copy(nb: dict, expected: list[ExpectedCheck]) -> dict:
    """The notebook with its check cells replaced by the master's (in order; extra ones
    dropped, missing ones appended): what the student wrote in a check cell never runs."""
    checks = [c.source for c in expected]
    seen_sources: list[str] = list(dict.fromkeys(checks))
    cells = []
    for cell in nb.get("cells", []):
        if CHECK_TAG in cell.get("metadata", {}).get("tags", []):
            if not seen_sources:
                continue
            cell = {**cell, "source": seen_sources.pop(0), "outputs": []}
        cells.append(cell)
    for source in seen_sources:
        cells.append({"cell_type": "code", "metadata": {"tags": [CHECK_TAG]}, "source": source,
                      "outputs": [], "execution_count": None})
    return {**nb, "cells": cells}


def grade_notebook(path: Path, master: Path, *, wall_s: float = 120.0,
                   output_mb: float = 5.0, hide: tuple[str, ...] = ()) -> tuple[str, dict, list]:
    """Run one notebook isolated (module docstring): ``(status, {title: passed}, problems)``."""
    import nbformat  # lazy: heavy (Jupyter)
    from nbclient import NotebookClient  # lazy: heavy (Jupyter)
    from ..sandbox.cgroup import kill_all, make, remove
    from ..sandbox.launch import sandboxed_kernel_manager
    from ..sandbox.pool import sandbox_env

    expected = expected_checks(master)
    work = tempfile.mkdtemp(prefix="agentlab-grade-")
    sockets = tempfile.mkdtemp(prefix="agentlab-kernel-")  # the kernel's Unix sockets
    group, state = make(MAX_PROCS), {"status": "ok", "bytes": 0}
    config = {"memory_mb": 4096, "cpu_s": int(wall_s) + 5, "file_mb": 64,
              "max_procs": MAX_PROCS, "cgroup": group, "network": False, "pid_ns": True,
              "die_with_parent": True,
              "hide": [h for h in hide if os.path.isdir(h) and not  # never the kernel's own
                       Path(work).is_relative_to(h)], "workdir": work}
    env = {**sandbox_env(()), "HOME": work, "TMPDIR": work, "IPYTHONDIR": work,
           "MPLCONFIGDIR": work, "OPENBLAS_NUM_THREADS": "1"}
    problems: list[str] = []
    try:
        nb = nbformat.reads(json.dumps(_checked_copy(json.loads(
            path.read_text(encoding="utf-8")), expected)), as_version=4)
        (Path(work) / path.name).write_text(nbformat.writes(nb), encoding="utf-8")
        manager = sandboxed_kernel_manager(config, os.path.join(sockets, "kernel"))
        cap = int(output_mb * 1024 * 1024)

        class Capped(NotebookClient):
            def output(self, outs, msg, display_id, cell_index):  # noqa: ANN001
                state["bytes"] += len(json.dumps(msg.get("content", {})))
                if state["bytes"] > cap:
                    if state["status"] == "ok":
                        state["status"] = "output_limit"
                        threading.Thread(target=kill_all, args=(group, None), daemon=True).start()
                    return None
                return super().output(outs, msg, display_id, cell_index)

        client = Capped(nb, kernel_manager_class=manager, timeout=wall_s, allow_errors=True, record_timing=False,
                        shutdown_kernel="immediate", resources={"metadata": {"path": work}})

        def expire() -> None:
            if state["status"] == "ok":
                state["status"] = "timeout"
            kill_all(group, None)
        timer = threading.Timer(wall_s, expire)
        timer.start()
        try:
            client.execute(env=env)
        except Exception as exc:  # a dead kernel, a cell past the limit, a kernel that won't start
            if state["status"] == "ok":
                dead = "Dead" in type(exc).__name__
                state["status"] = "crashed" if dead else "error"
                problems.append("the kernel died (the notebook crashed Python or killed it)"
                                if dead else f"{type(exc).__name__}: {str(exc)[:200]}")
        finally:
            timer.cancel()
        found, more = _scores([c for c in nb.cells if CHECK_TAG in
                               c.get("metadata", {}).get("tags", [])], expected)
        problems += more
    except (OSError, ValueError) as exc:
        state["status"], found = "error", {}
        problems.append(f"could not read the notebook: {exc}")
    finally:
        kill_all(group, None)
        remove(group)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(sockets, ignore_errors=True)
    problems = [_relative(p, work, sockets) for p in problems]
    if state["status"] == "output_limit":
        problems.append(f"printed more than {output_mb:g} MB; stopped")
    elif state["status"] == "timeout":
        problems.append(f"ran longer than {wall_s:g} s; stopped")
    return state["status"], found, problems


def grade(folder: str | Path, *, timeout: float = 120.0, out: str | Path | None = None,
          output_mb: float = 5.0, progress: Callable[[Grade], object] | None = None
          ) -> list[Grade]:
    """Grade every exercise notebook under ``folder`` (module docstring); each grade is
    appended to ``out/grades.csv`` (default ``folder``) when its notebook ends; notebooks
    already there are skipped. ``timeout``: seconds for a whole notebook. Returns all grades."""
    folder = Path(folder).resolve()
    out = Path(out).resolve() if out is not None else folder
    out.mkdir(parents=True, exist_ok=True)
    csv_path = out / "grades.csv"
    grades = read_csv(csv_path)
    done = {g.notebook for g in grades}
    hide = (str(folder), str(out), os.path.expanduser("~/.ssh"))
    for path in sorted(folder.rglob("*.ipynb")):
        rel = path.relative_to(folder).as_posix()
        inside_out = folder in out.parents and out in path.parents  # e.g. FOLDER/grades/
        if ".ipynb_checkpoints" in path.parts or rel in done or inside_out:
            continue
        g = _grade_one(path, folder, out, timeout=timeout, output_mb=output_mb, hide=hide)
        _append(csv_path, g)
        grades.append(g)
        if progress is not None:
            progress(g)
    return grades


def _grade_one(path: Path, folder: Path, out: Path, *, timeout: float, output_mb: float,
               hide: tuple[str, ...]) -> Grade:
    """The grade of one file: run if it is an exercise notebook, else 0 with the reason."""
    rel = path.relative_to(folder).as_posix()
    nb, unreadable = _read_notebook(path)
    try:
        master = exercise_of(nb, path)  # an unreadable file: the exercise of its name
    except Exception:  # noqa: BLE001 - a broken file scores 0, never ends the batch
        master = None
    if unreadable:
        total = sum(c.total for c in expected_checks(master)) if master is not None else 0
        return Grade(student_of(path, folder, master.stem if master else ""),
                     master.stem if master is not None else "?", 0, total, "error", rel,
                     unreadable)
    if master is None:
        return Grade(student_of(path, folder, ""), "?", 0, 0, "error", rel,
                     "not an exercise notebook")
    status, found, problems = grade_notebook(path, master, wall_s=timeout,
                                             output_mb=output_mb, hide=hide)
    expected = expected_checks(master)
    total = sum(c.total for c in expected)
    passed = 0 if status in ZERO_STATUSES else sum(found.values())
    missing = [c.title for c in expected if c.title not in found]
    if status == "ok" and passed < total:
        status = "failed"
    detail = problems + [f"{t}: did not report" for t in missing]
    if status in ZERO_STATUSES and found:
        detail.append(f"{sum(found.values())} case(s) had passed before it stopped; scored 0")
    return Grade(student_of(path, folder, master.stem), master.stem, passed, total, status,
                 rel, _relative("; ".join(detail), str(folder), str(out)))


def _read_notebook(path: Path) -> tuple[dict, str]:
    """``(notebook, "")``, or ``({}, why)`` when ``path`` is not a notebook the grader can
    run: not UTF-8, not JSON, or JSON without the shape of an nbformat 4 notebook (a dict of
    ``cells``)."""
    try:
        nb = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return {}, "not a notebook: the file is not UTF-8 text; scored 0"
    except json.JSONDecodeError as exc:
        return {}, f"not a notebook: the file is not valid JSON ({exc}); scored 0"
    except OSError as exc:
        return {}, f"could not read the file ({exc.strerror}); scored 0"
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if (not isinstance(nb, dict) or nb.get("nbformat") != 4 or not isinstance(cells, list)
            or not all(isinstance(c, dict) and "cell_type" in c and "source" in c
                       for c in cells)):
        return {}, ("not a notebook: valid JSON, but not an nbformat 4 notebook (a dict with "
                    "nbformat 4 and a list of cells); scored 0")
    return nb, ""


def _append(path: Path, g: Grade) -> None:
    """One row, on disk before the next notebook starts (header first in a new file)."""
    new = not path.exists() or path.stat().st_size == 0
    with path.open("a", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        if new:
            w.writerow(FIELDS)
        w.writerow([g.student, g.exercise, g.passed, g.total, g.status, g.notebook, g.detail])
        f.flush()
        os.fsync(f.fileno())


def read_csv(path: str | Path) -> list[Grade]:
    """The grades in a ``grades.csv`` (none when it does not exist)."""
    try:
        with Path(path).open(newline="", encoding="utf-8") as f:
            return [Grade(r["student"], r["exercise"], int(r["passed"]), int(r["total"]),
                          r["status"], r["notebook"], r.get("detail", ""))
                    for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError):
        return []


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

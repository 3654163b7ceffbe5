"""Run an exercise notebook in a fresh kernel and collect what its checks found.

Used by ``agentlab exercise check`` (one student, their own notebook, on their own machine).
``agentlab exercise grade`` does not trust the notebook and does not use this runner's check
log: it runs each notebook isolated (``grading.grade_notebook``) and reads only the master's
check cells' outputs; it shares ``expected_checks`` and ``exercise_of`` with this module. The notebook runs top to bottom in its own Jupyter kernel
(as nbval does, errors allowed so one failing check does not hide the next), with each cell
bounded by a timeout; a notebook that hangs or kills its kernel ends with a status, never
stops the caller. Each check reports its cases through ``AGENTLAB_CHECK_LOG`` (see
``cases.py``); a check that never ran (its cell raised ``NameError``, the kernel died, a cell
hung) scores 0 of the cases its solved master shows.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..extras import require
from .cases import CHECK_LOG_ENV, CaseResult
from .generate import cell_source, masters
from .kernels import ipc_kernel_manager

__all__ = ["ExpectedCheck", "CheckOutcome", "NotebookReport", "expected_checks",
           "find_exercise", "exercise_of", "run_notebook", "CHECK_TAG"]

CHECK_TAG = "exercise-check"
_OK_LINE = re.compile(r"^\[ok\] (.+): (\d+)/\2 cases passed$", re.M)
_TMP_FILE = re.compile(r"\([^()\s]*\.py, (line \d+)\)")  # ipykernel's temp cell file names


@dataclass
class ExpectedCheck:
    """A check as the solved master shows it: its cell's source, title and number of cases."""

    source: str
    title: str
    total: int


@dataclass
class CheckOutcome:
    """One check of a student notebook: cases passed out of total, each case's result, and
    ``error`` when the check could not run at all (e.g. ``NameError: name 'f' is not defined``)."""

    title: str
    passed: int
    total: int
    cases: list[CaseResult] = field(default_factory=list)
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total


@dataclass
class NotebookReport:
    """What running one notebook found.

    ``status``: ``"ok"`` (every check passed), ``"failed"``, ``"timeout"`` (a cell ran past the
    timeout), ``"crashed"`` (the kernel died) or ``"error"`` (the notebook could not be run).
    ``problems``: one line per cell error outside the checks, and the timeout or crash.
    """

    path: Path
    exercise: str
    status: str
    checks: list[CheckOutcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    duration_s: float = 0.0

    @property
    def passed(self) -> int:
        return sum(c.passed for c in self.checks)

    @property
    def total(self) -> int:
        return sum(c.total for c in self.checks)


def _is_check(cell: dict) -> bool:
    return CHECK_TAG in cell.get("metadata", {}).get("tags", [])


def expected_checks(master: Path) -> list[ExpectedCheck]:
    """The checks of an exercise, read from its master's stored ``[ok] title: n/n`` outputs
    (strict nbval keeps those outputs true)."""
    out = []
    for cell in json.loads(master.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] != "code" or not _is_check(cell):
            continue
        text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream")
        for title, total in _OK_LINE.findall(text):
            out.append(ExpectedCheck(cell_source(cell).strip(), title, int(total)))
    return out


def find_exercise(spec: str, root: Path | None = None) -> Path:
    """The master for ``spec``: ``"1"``, ``"01"``, ``"01_backoff"`` or ``"backoff"``."""
    spec = spec.strip().removesuffix(".ipynb")
    found = masters(root)
    for m in found:
        number, _, topic = m.stem.partition("_")
        if spec in (m.stem, topic) or (spec.isdigit() and int(spec) == int(number)):
            return m
    raise LookupError(f"no exercise {spec!r}; the exercises are: "
                      + ", ".join(m.stem for m in found))


def exercise_of(nb: dict, path: Path, root: Path | None = None) -> Path | None:
    """The master a student notebook belongs to: from ``metadata.agentlab.exercise`` (kept
    when a copy is renamed), else from an ``NN_topic`` or ``NN`` in its file name."""
    found = masters(root)
    named = nb.get("metadata", {}).get("agentlab", {}).get("exercise")
    by_stem = {m.stem: m for m in found}
    if named in by_stem:
        return by_stem[named]
    for stem, m in by_stem.items():
        if stem in path.stem:
            return m
    numbers = re.findall(r"(?<!\d)(\d\d)(?!\d)", path.stem)
    for m in found:
        if m.stem[:2] in numbers:
            return m
    return None


def _first_line(text: str, width: int = 70) -> str:
    line = next((s for s in text.strip().splitlines() if s.strip()), "")
    return line if len(line) <= width else line[: width - 3] + "..."


def _error_text(output: dict) -> str:
    value = _TMP_FILE.sub(r"(\1)", _first_line(output.get("evalue", ""), 160))
    return f"{output.get('ename', 'Error')}: {value}" if value else output.get("ename", "Error")


def run_notebook(path: str | Path, master: Path | None = None, *, timeout: float = 60.0,
                 kernel_name: str = "python3") -> NotebookReport:
    """Run ``path`` in a fresh kernel (cwd: its folder) and score its checks against the
    master's (found from the notebook when ``master`` is None). Never raises for what the
    notebook does; ``timeout`` bounds each cell, in seconds."""
    require("exercises")  # else one line: pip install 'agentlab[notebooks]'
    import nbformat  # lazy: heavy (Jupyter)
    from nbclient import NotebookClient  # lazy: heavy (Jupyter)
    from nbclient.exceptions import CellTimeoutError, DeadKernelError  # lazy: heavy (Jupyter)

    path = Path(path).resolve()
    started = time.monotonic()
    try:
        nb = nbformat.read(path, as_version=4)
    except Exception as exc:  # not a notebook, or half-saved JSON
        return NotebookReport(path, master.stem if master else "?", "error",
                              problems=[f"could not read the notebook: {exc}"])
    master = master or exercise_of(nb, path)
    if master is None:
        return NotebookReport(path, "?", "error", problems=["not an exercise notebook"])
    expected = expected_checks(master)
    fd, log = tempfile.mkstemp(prefix="agentlab-check-", suffix=".jsonl")
    os.close(fd)
    stderr = tempfile.TemporaryFile()  # the kernel's own stderr: kept for a crash report
    status, problems = "ok", []
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, allow_errors=True,
                            kernel_manager_class=ipc_kernel_manager(),
                            shutdown_kernel="immediate", record_timing=False,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute(env={**os.environ, CHECK_LOG_ENV: log}, stderr=stderr)
    except CellTimeoutError:
        status = "timeout"
        problems.append(f"a cell ran longer than {timeout:g} s and was stopped: "
                        f"\"{_first_line(cell_source(_running_cell(nb)))}\"")
    except DeadKernelError:
        status = "crashed"
        problems.append("the kernel died (the notebook crashed Python) in the cell "
                        f"\"{_first_line(cell_source(_running_cell(nb)))}\"" + _last_words(stderr))
    except Exception as exc:  # a kernel that would not start, a broken kernelspec, ...
        status = "error"
        problems.append(f"could not run the notebook: {type(exc).__name__}: {exc}")
    finally:
        records = _read_log(log)
        stderr.close()
    checks = _score(nb, expected, records, problems)
    if status == "ok" and not all(c.ok for c in checks):
        status = "failed"
    return NotebookReport(path, master.stem, status, checks, problems,
                          time.monotonic() - started)


def _running_cell(nb) -> dict:
    """The cell that was executing when the run stopped: the last code cell with an
    execution count (nbclient runs cells in order and sets the count when one starts)."""
    code = [c for c in nb.cells if c.cell_type == "code" and cell_source(c).strip()]
    started = [c for c in code if c.get("execution_count") is not None]
    return started[-1] if started else (code[0] if code else {})


def _last_words(stderr) -> str:
    """``": <last line>"`` of what the kernel wrote to stderr before it died, if anything."""
    stderr.seek(0)
    lines = [line.strip() for line in stderr.read().decode("utf-8", "replace").splitlines()
             if line.strip() and "WARNING" not in line]
    return f": {_first_line(lines[-1], 120)}" if lines else ""


def _read_log(log: str) -> list[dict]:
    try:
        with open(log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []
    finally:
        try:
            os.unlink(log)
        except OSError:
            pass


def _score(nb, expected: list[ExpectedCheck], records: list[dict],
           problems: list[str]) -> list[CheckOutcome]:
    """One ``CheckOutcome`` per check the master has, from what the kernel logged."""
    by_title = {r["title"]: r for r in records}  # a check run twice: the last run counts
    cell_errors = {}
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if not errors:
            continue
        if _is_check(cell):
            cell_errors[cell_source(cell).strip()] = _error_text(errors[0])
        else:
            problems.append(f"the cell \"{_first_line(cell_source(cell))}\" raised "
                            f"{_error_text(errors[0])}")
    outcomes = []
    for check in expected:
        record = by_title.get(check.title)
        if record is not None:
            cases = [CaseResult(**c) for c in record["cases"]]
            outcomes.append(CheckOutcome(check.title, record["passed"], record["total"], cases))
            continue
        error = cell_errors.get(check.source, "")
        if error.startswith("ExerciseCheckError"):
            error = ""
        outcomes.append(CheckOutcome(check.title, 0, check.total,
                                     error=error or "this check did not run"))
    return outcomes

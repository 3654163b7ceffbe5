"""agentlab exercise: work on the exercises without ever losing your work.

    agentlab exercise list                 the exercises, and your copies
    agentlab exercise start 01             copy exercise 01 into work/ (yours: git and pytest ignore it)
    agentlab exercise check 01 [PATH]      run its checks in a fresh kernel: each failing case,
                                           what was expected, what came back, a hint
    agentlab exercise reset 01 [--force]   start over (refuses to replace your changes without --force)
    agentlab exercise grade FOLDER         teachers: every notebook in FOLDER, isolated, a CSV and a table
    agentlab exercise release DIR          teachers: the student copies, without the solved masters

The work folder is ``work/`` at the project root unless ``--dir`` names another. Checks run the
notebook top to bottom in its own kernel (``agentlab.exercises.runner``), so what they report
is what a fresh Run All gives.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

from ..exercises import generate, grading
from ..exercises.cases import describe_failures
from ..exercises.runner import (NotebookReport, exercise_of, expected_checks, find_exercise,
                                run_notebook)

__all__ = ["add_parser", "run", "work_dir", "work_copy_text"]

def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("exercise", help="list, start, check and reset the exercises; grade",
                       description=__doc__.split("\n\n")[0],
                       epilog=__doc__.split("\n\n", 1)[1],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    actions.add_parser("list", help="the exercises and your copies")
    for name, help_line in [("start", "copy an exercise into your work folder"),
                            ("check", "run an exercise's checks and say what is wrong"),
                            ("reset", "replace your copy with a fresh one")]:
        a = actions.add_parser(name, help=help_line)
        a.add_argument("exercise", help="its number or name: 01, 1, 01_backoff, backoff")
        if name == "check":
            a.add_argument("path", nargs="?", help="the notebook to check (default: your copy "
                           "in the work folder, else notebooks/exercises/NN_topic.ipynb)")
            a.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
            a.add_argument("--timeout", type=float, default=120.0,
                           help="seconds a cell may run (default 120)")
        if name == "reset":
            a.add_argument("--force", action="store_true",
                           help="replace the copy even if it holds changes (a .bak is kept)")
    for a in actions.choices.values():
        a.add_argument("--dir", help="your work folder (default: work/ in the project folder)")
    g = actions.add_parser("grade", help="check every notebook in a folder; write a CSV and "
                           "a markdown table of cases passed per student and exercise")
    g.add_argument("folder", help="one subfolder per student, or files named alice_01_backoff.ipynb")
    g.add_argument("--timeout", type=float, default=120.0,
                   help="seconds a whole notebook may run before it scores 0 (default 120)")
    g.add_argument("--output-mb", type=float, default=5.0,
                   help="MB a notebook may print before it is stopped and scores 0 (default 5)")
    g.add_argument("--out", help="where grades.csv and grades.md go (default: FOLDER)")
    r = actions.add_parser("release", help="write the student copies of every exercise into "
                           "DIR, without the solved masters (what students may clone)")
    r.add_argument("dir", help="the folder to write (created; existing copies are replaced)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        return {"list": _list, "start": _start, "check": _check, "reset": _reset,
                "grade": _grade, "release": _release}[args.action](args)
    except (FileNotFoundError, LookupError) as exc:  # no project here, no such exercise
        print(f"agentlab exercise: {exc}", file=sys.stderr)
        return 2


# -- where things are ---------------------------------------------------------------------

def work_dir(args: argparse.Namespace) -> Path:
    """``--dir`` (relative to the current folder), else ``work/`` at the project root."""
    return Path(args.dir).resolve() if getattr(args, "dir", None) \
        else generate.project_root() / "work"


def _shown(path: Path) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def work_copy_text(master: Path, folder: Path) -> str:
    """The student copy of ``master`` as it should be in ``folder``: links to the chapter
    notebooks are pointed at ``notebooks/`` from there, and the fingerprint matches."""
    nb = generate.student_copy(json.loads(master.read_text(encoding="utf-8")), master.stem)
    return generate.dumps(generate.relink(nb, master.parents[2], folder))


# -- list, start, reset -------------------------------------------------------------------

def _title(master: Path) -> str:
    for cell in json.loads(master.read_text(encoding="utf-8"))["cells"]:
        if cell["cell_type"] == "markdown":
            first = generate.cell_source(cell).strip().splitlines()[0].lstrip("# ")
            return re.sub(r"^Exercise \d+\s*[·:-]\s*", "", first)
    return master.stem


def _list(args: argparse.Namespace) -> int:
    folder = work_dir(args)
    rows = []
    for master in generate.masters():
        cases = sum(c.total for c in expected_checks(master))
        mine = folder / master.name
        in_place = master.parent.parent / master.name  # the copy in notebooks/exercises/
        if not mine.exists():
            edited = generate.copy_status(in_place, generate.copy_text(master)) == "changed"
            where = f"{_shown(in_place)} (edited in place)" if edited else "not started"
        else:
            status = generate.copy_status(mine, work_copy_text(master, folder))
            where = _shown(mine) + (" (untouched)" if status in ("current", "stale") else "")
        rows.append((master.stem[:2], master.stem[3:], _title(master), f"{cases} cases", where))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    print(f"\nStart one with `agentlab exercise start NN`; your copies go to {_shown(folder)}/.")
    return 0


def _start(args: argparse.Namespace) -> int:
    master, folder = find_exercise(args.exercise), work_dir(args)
    target = folder / master.name
    if target.exists():
        print(f"{_shown(target)} already exists; it is yours: open it and carry on, or start "
              f"over with `agentlab exercise reset {master.stem[:2]}`.", file=sys.stderr)
        return 1
    return _write(master, folder, target, "Started")


def _reset(args: argparse.Namespace) -> int:
    master, folder = find_exercise(args.exercise), work_dir(args)
    target = folder / master.name
    text = work_copy_text(master, folder)
    status = generate.copy_status(target, text)
    if status == "changed":
        if not args.force:
            print(f"{_shown(target)} holds your changes; not replaced. To start over and keep "
                  f"a backup: agentlab exercise reset {master.stem[:2]} --force", file=sys.stderr)
            return 1
        backup = target.with_name(target.name + ".bak")
        shutil.copy2(target, backup)
        print(f"your old copy is kept as {_shown(backup)}")
    return _write(master, folder, target, "Reset")


def _write(master: Path, folder: Path, target: Path, verb: str) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    target.write_text(work_copy_text(master, folder), encoding="utf-8")
    nn = master.stem[:2]
    print(f"{verb} exercise {master.stem}: {_shown(target)}\n"
          f"  open it:   jupyter lab {_shown(target)}\n"
          f"  check it:  agentlab exercise check {nn}")
    return 0


# -- check --------------------------------------------------------------------------------

def _paint(text: str, colour: str) -> str:
    if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
        return text  # piped or asked not to: plain text, no ANSI codes
    return f"\033[{ {'green': 32, 'red': 31, 'yellow': 33}[colour]}m{text}\033[0m"


def report_lines(report: NotebookReport, verbose: bool = False) -> list[str]:
    """What ``check`` prints for one notebook: a line per check, the failing cases in detail."""
    lines = []
    for check in report.checks:
        if check.ok:
            lines.append(f"{_paint('PASS', 'green')}  {check.title}: "
                         f"{check.passed}/{check.total} cases passed")
            detail = []
        elif check.error:
            lines.append(f"{_paint('FAIL', 'red')}  {check.title}: 0/{check.total}; "
                         f"{check.error}")
            detail = []
        else:
            detail = describe_failures(check.title, check.cases)
            todo = all(c.status in ("todo", "pass") for c in check.cases) and not check.passed
            lines.append(f"{_paint('TODO', 'yellow') if todo else _paint('FAIL', 'red')}  "
                         + detail[0])
            detail = detail[1:]
        if verbose:
            lines += [f"  case {c.index}/{c.total} ({c.name}) passed"
                      for c in check.cases if c.ok]
        lines += detail
    lines += [f"note: {p}" for p in report.problems if "NotImplementedError" not in p]
    return lines


def _check(args: argparse.Namespace) -> int:
    spec, path = args.exercise, args.path
    if path is None and spec.endswith(".ipynb"):  # `check work/01_backoff.ipynb`
        path = spec
    if path is not None:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist")
        master = find_exercise(spec) if not spec.endswith(".ipynb") else \
            exercise_of(json.loads(path.read_text(encoding="utf-8")), path)
        if master is None:
            raise LookupError(f"{path} is not an exercise notebook; say which exercise it is: "
                              f"agentlab exercise check NN {path}")
    else:
        master = find_exercise(spec)
        path = work_dir(args) / master.name
        if not path.exists():
            path = master.parents[1] / master.name
            print(f"(no copy in {_shown(work_dir(args))}/: checking the one in "
                  f"{_shown(path.parent)}/; `agentlab exercise start {master.stem[:2]}` makes "
                  "you a safe copy)")
    print(f"Checking {_shown(path)} (exercise {master.stem}) in a fresh kernel...", flush=True)
    report = run_notebook(path, master, timeout=args.timeout)
    for line in report_lines(report, args.verbose):
        print(line)
    nn = master.stem[:2]
    if report.status == "ok":
        print(f"All {report.total} cases passed.")
        return 0
    print(f"{report.passed}/{report.total} cases passed. Fix what is listed above, then run "
          f"`agentlab exercise check {nn}` again.")
    return 1


# -- grade --------------------------------------------------------------------------------

def _grade(args: argparse.Namespace) -> int:
    folder = Path(args.folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a folder")
    out = Path(args.out) if args.out else folder

    def progress(g: "grading.Grade") -> None:
        print(f"  {g.notebook}: {g.passed}/{g.total} ({g.status})", flush=True)

    print(f"Grading the notebooks in {_shown(folder)}, each isolated in the sandbox "
          f"({args.timeout:g} s and {args.output_mb:g} MB of output per notebook); grades go "
          f"to {_shown(out / 'grades.csv')} as each one ends...", flush=True)
    grades = grading.grade(folder, timeout=args.timeout, out=out, output_mb=args.output_mb,
                           progress=progress)
    if not grades:
        print(f"no notebooks found in {_shown(folder)}", file=sys.stderr)
        return 1
    table = grading.markdown_table(grades)
    (out / "grades.md").write_text(table, encoding="utf-8")
    print("\n" + table)
    print(f"wrote {_shown(out / 'grades.csv')} and {_shown(out / 'grades.md')}")
    return 0


# -- release ------------------------------------------------------------------------------

def _release(args: argparse.Namespace) -> int:
    """Student copies of every exercise in DIR, generated from the masters; no master is
    copied (the solved notebooks stay with the teacher)."""
    target = Path(args.dir)
    target.mkdir(parents=True, exist_ok=True)
    for master in generate.masters():
        nb = generate.student_copy(json.loads(master.read_text(encoding="utf-8")), master.stem)
        (target / master.name).write_text(generate.dumps(nb), encoding="utf-8")
        print(f"  {_shown(target / master.name)}")
    print(f"wrote {len(generate.masters())} student copies to {_shown(target)} (no solutions)")
    return 0

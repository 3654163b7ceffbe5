"""An example class for ``agentlab exercise grade``: ``data/class/``, made from exercise 01.

A teacher trying the grader needs a folder of submissions. This one has three students, each
laid out the way ``grading.student_of`` reads them:

- ``alice/01_backoff.ipynb``: the solved master with its outputs cleared (every case passes);
- ``bob/01_backoff.ipynb``: the untouched student copy (every stub raises, 0 cases pass);
- ``carol_01_backoff.ipynb``: solved, except that the backoff ignores ``Retry-After``
  (some cases fail, each with its expected value, what came back and a hint).

The files are generated from the master, so they never drift from the exercise::

    python -m agentlab.exercises.example_class          # write data/class/
    python -m agentlab.exercises.example_class --check  # fail if data/class/ is stale
    agentlab exercise grade data/class --out /tmp/grades
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .generate import cell_source, dumps, masters, project_root, student_copy

__all__ = ["EXERCISE", "RETRY_AFTER", "submissions", "main"]

#: The exercise the example class submitted.
EXERCISE = "01_backoff"
#: The lines of the master that carol's submission leaves out.
RETRY_AFTER = "    if retry_after is not None:\n        delay = max(delay, retry_after)\n"


def _solved(master: dict) -> dict:
    nb = json.loads(json.dumps(master))
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def _ignores_retry_after(master: dict) -> dict:
    nb = _solved(master)
    cell = next((c for c in nb["cells"] if RETRY_AFTER in cell_source(c)), None)
    if cell is None:
        raise ValueError(f"the master of {EXERCISE} no longer has the lines {RETRY_AFTER!r}: "
                         "update agentlab.exercises.example_class.RETRY_AFTER")
    cell["source"] = cell_source(cell).replace(RETRY_AFTER, "")
    return nb


def submissions(root: Path | None = None) -> dict[str, str]:
    """``{path under data/class: notebook text}`` for the three students (module docstring)."""
    path = next(p for p in masters(root) if p.stem == EXERCISE)
    master = json.loads(path.read_text(encoding="utf-8"))
    return {f"alice/{EXERCISE}.ipynb": dumps(_solved(master)),
            f"bob/{EXERCISE}.ipynb": dumps(student_copy(master, EXERCISE)),
            f"carol_{EXERCISE}.ipynb": dumps(_ignores_retry_after(master))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if data/class/ is stale")
    args = parser.parse_args(argv)
    root = project_root()
    folder = root / "data" / "class"
    stale = []
    for name, text in submissions(root).items():
        target = folder / name
        if target.exists() and target.read_text(encoding="utf-8") == text:
            continue
        if args.check:
            stale.append(name)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target.relative_to(root).as_posix()}")
    if stale:
        print("stale example class (run python -m agentlab.exercises.example_class): "
              + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Make the student copy of each exercise from its solved master.

    python -m agentlab.exercises.generate          # write notebooks/exercises/NN_topic.ipynb
    python -m agentlab.exercises.generate --check  # fail if a committed student copy is stale

In a master (``notebooks/exercises/solutions/NN_topic.ipynb``) the code between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes ``raise NotImplementedError``
(indented like the region), and all outputs and volatile metadata are cleared.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "notebooks" / "exercises" / "solutions"


def strip_solution(source: str) -> str:
    """Replace every solution region of one cell's source with a stub."""
    out, skipping = [], False
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            skipping = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f'{indent}raise NotImplementedError("your code here")\n')
            continue
        if stripped.startswith(END):
            skipping = False
            continue
        if not skipping:
            out.append(line)
    if skipping:
        raise ValueError(f"unterminated {BEGIN} region")
    return "".join(out)


def student_copy(master: dict) -> dict:
    """The student notebook for a master notebook (a new dict; the master is untouched)."""
    nb = json.loads(json.dumps(master))
    nb["metadata"] = {k: v for k, v in nb.get("metadata", {}).items()
                      if k in ("kernelspec", "language_info")}
    for cell in nb["cells"]:
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k == "tags"}
        if cell["cell_type"] == "code":
            src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell["source"] = strip_solution(src)
            cell["outputs"], cell["execution_count"] = [], None
    return nb


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a student copy is stale")
    args = parser.parse_args(argv)
    stale = []
    for master_path in sorted(SOLUTIONS.glob("*.ipynb")):
        target = master_path.parent.parent / master_path.name
        text = dumps(student_copy(json.loads(master_path.read_text(encoding="utf-8"))))
        if args.check:
            if not target.exists() or target.read_text(encoding="utf-8") != text:
                stale.append(target.name)
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    if stale:
        print("stale student copies (run python -m agentlab.exercises.generate): "
              + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Make the student copy of each exercise from its solved master, never over a student's work.

    python -m agentlab.exercises.generate          # write notebooks/exercises/NN_topic.ipynb
    python -m agentlab.exercises.generate --check  # fail if a committed student copy is stale
    python -m agentlab.exercises.generate --force  # also replace copies that hold changes

In a master (``notebooks/exercises/solutions/NN_topic.ipynb``) the code between
``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes ``raise NotImplementedError``
(indented like the region), and all outputs and volatile metadata are cleared.

Each copy records a fingerprint of its cells (``metadata.agentlab.fingerprint``). A copy whose
cells still match it is *pristine*: nobody has typed or run anything in it, so regenerating it
loses nothing. A copy that no longer matches holds a student's work: the generator leaves it
alone (unless ``--force``) and ``--check`` does not call it stale, so solving an exercise in
place never makes ``pytest`` fail. ``--strict`` (or the ``CI`` environment variable) also
fails on such copies, for a clean checkout in CI.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

__all__ = ["BEGIN", "END", "strip_solution", "student_copy", "dumps", "fingerprint",
           "is_pristine", "project_root", "masters", "copy_text", "copy_status", "cell_source",
           "relink", "main"]

BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]
_MARKER = Path("notebooks") / "exercises" / "solutions"


def project_root(start: str | Path | None = None) -> Path:
    """The agentlab project folder: the nearest folder at or above ``start`` (default: the
    current directory) holding ``notebooks/exercises/solutions``, else the clone this package
    was installed from (``pip install -e``). Raises ``FileNotFoundError`` saying what to do."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / _MARKER).is_dir():
            return folder
    if (_PACKAGE_ROOT / _MARKER).is_dir():
        return _PACKAGE_ROOT
    raise FileNotFoundError(
        f"no agentlab project found at or above {here} (looked for {_MARKER.as_posix()}/): "
        "run this from the folder you cloned agentlab into")


def masters(root: Path | None = None) -> list[Path]:
    """The solved masters, ``notebooks/exercises/solutions/NN_topic.ipynb``, in order."""
    return sorted((project_root(root) / _MARKER).glob("[0-9][0-9]_*.ipynb"))


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


def cell_source(cell: dict) -> str:
    """A cell's source as one string (notebooks store a string or a list of lines)."""
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def fingerprint(nb: dict) -> str:
    """SHA-256 of what a student can change: each cell's type, source and outputs."""
    cells = [[c.get("cell_type"), cell_source(c), c.get("outputs", [])] for c in nb.get("cells", [])]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()


def is_pristine(nb: dict) -> bool:
    """True if the notebook is a generated copy nobody has edited or run since."""
    recorded = nb.get("metadata", {}).get("agentlab", {}).get("fingerprint")
    return recorded is not None and recorded == fingerprint(nb)


def student_copy(master: dict, name: str = "") -> dict:
    """The student notebook for a master notebook (a new dict; the master is untouched).

    ``name`` (e.g. ``"01_backoff"``) is recorded in ``metadata.agentlab.exercise`` so a copy
    renamed by a student can still be graded.
    """
    nb = json.loads(json.dumps(master))
    nb["metadata"] = {k: v for k, v in nb.get("metadata", {}).items()
                      if k in ("kernelspec", "language_info")}
    for cell in nb["cells"]:
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k == "tags"}
        cell.pop("id", None)
        if cell["cell_type"] == "code":
            cell["source"] = strip_solution(cell_source(cell))
            cell["outputs"], cell["execution_count"] = [], None
    nb["metadata"]["agentlab"] = {"exercise": name, "fingerprint": fingerprint(nb)} if name \
        else {"fingerprint": fingerprint(nb)}
    return nb


#: A markdown link to a notebook through one or more parent folders: ``](../../01_x.ipynb)``.
_LINK = re.compile(r"\]\(((?:\.\./)+)([^)\s]+\.ipynb)\)")


def relink(nb: dict, chapters: Path, folder: Path) -> dict:
    """Point the markdown links to chapter notebooks at ``chapters`` as seen from ``folder``
    (where the copy will live), and refresh the fingerprint; returns ``nb``.

    A master in ``solutions/`` links a chapter as ``../../NN_name.ipynb``; the same link is
    ``../NN_name.ipynb`` in ``notebooks/exercises/`` and something else again in a work folder.
    A link whose target is not a chapter notebook is left as written.
    """
    def one(m: re.Match) -> str:
        target = chapters / Path(m.group(2)).name
        if not target.exists():
            return m.group(0)
        return "](" + Path(os.path.relpath(target, folder)).as_posix() + ")"

    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            cell["source"] = _LINK.sub(one, cell_source(cell))
    nb["metadata"].setdefault("agentlab", {})["fingerprint"] = fingerprint(nb)
    return nb


def dumps(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def copy_text(master_path: Path) -> str:
    """The text of the student copy generated from ``master_path``."""
    master = json.loads(master_path.read_text(encoding="utf-8"))
    copies = master_path.parent.parent  # notebooks/exercises/, one up from solutions/
    return dumps(relink(student_copy(master, master_path.stem), copies.parent, copies))


def copy_status(target: Path, text: str) -> str:
    """``"missing"``, ``"current"`` (same as ``text``), ``"stale"`` (pristine but generated
    from an older master) or ``"changed"`` (holds a student's work)."""
    if not target.exists():
        return "missing"
    current = target.read_text(encoding="utf-8")
    if current == text:
        return "current"
    try:
        nb = json.loads(current)
    except ValueError:
        return "changed"  # not even JSON: someone's half-saved work; never ours to replace
    return "stale" if is_pristine(nb) else "changed"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a student copy is stale")
    # --strict is asked for, never guessed from the environment: a student whose shell sets
    # CI=true (a course image, a container) solved an exercise in place and `pytest` failed
    parser.add_argument("--strict", action="store_true",
                        help="with --check, also fail on copies holding changes (the project's "
                             "own CI: .ci/run)")
    parser.add_argument("--force", action="store_true",
                        help="replace student copies even if they hold changes (they are lost)")
    args = parser.parse_args(argv)
    root = project_root()
    bad, kept = [], []
    for master_path in masters(root):
        target = master_path.parent.parent / master_path.name
        text = copy_text(master_path)
        status = copy_status(target, text)
        shown = target.relative_to(root).as_posix()
        if args.check:
            if status in ("missing", "stale") or (status == "changed" and args.strict):
                bad.append(f"{shown} ({status})")
            elif status == "changed":
                kept.append(shown)
        elif status == "current":
            continue
        elif status == "changed" and not args.force:
            bad.append(shown)
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {shown}")
    if kept:
        print("not compared (they hold your changes): " + ", ".join(kept))
    if bad and args.check:
        fix = "python -m agentlab.exercises.generate" + (
            " --force, as they hold edits" if any(b.endswith("(changed)") for b in bad) else "")
        print(f"stale student copies (run {fix}): " + ", ".join(bad), file=sys.stderr)
        return 1
    if bad:
        print("left alone, they hold changes (work in a copy: agentlab exercise start NN; "
              "or pass --force to replace them and lose those changes): " + ", ".join(bad),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Who handed in a notebook: the student's name from its place or its file name (grading).

``agentlab exercise grade FOLDER`` accepts one subfolder per student (``alice/01_backoff.ipynb``)
or every notebook in one folder with the student's name in front (``alice_01_backoff.ipynb``).
File names in the flat layout come from learners, so they carry what their tools add
("-Copy1", " (1)") and may name the exercise by number, by slug or both; none of that is part
of the name.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["student_of"]

#: What a learner's tools add to a copy's name: "-Copy1" (Jupyter's Duplicate), " (1)" (a
#: browser's second download), " copy", "-checkpoint".
_COPY_SUFFIX = re.compile(r"(?:[-_ ]*(?:copy|checkpoint)\d*|\s*\(\d+\))$", re.I)
_WORD = re.compile(r"[^ _\-.()]+")


def student_of(path: Path, folder: Path, exercise: str) -> str:
    """The student a notebook under ``folder`` belongs to, for ``exercise`` (``NN_slug``).

    In the flat layout the name is what precedes the first word of the exercise (its number,
    any number, or a word of its slug): ``erin_09_percentile-Copy1`` -> ``erin``,
    ``frank_backoff`` -> ``frank``. Copy suffixes are dropped first. When the exercise comes
    first (``01_backoff_alice``), the words after it are the name.
    """
    rel = path.relative_to(folder)
    if len(rel.parts) > 1:
        return rel.parts[0]
    stem = path.stem
    while _COPY_SUFFIX.search(stem) and _COPY_SUFFIX.sub("", stem):
        stem = _COPY_SUFFIX.sub("", stem)
    number, _, slug = exercise.partition("_")
    exercise_words = {w.lower() for w in slug.split("_") if w} | {number, number.lstrip("0")}

    def is_exercise(word: str) -> bool:
        return word.isdigit() or word.lower() in exercise_words

    words = list(_WORD.finditer(stem))
    first = next((i for i, m in enumerate(words) if is_exercise(m.group())), None)
    if first is None:
        name = stem
    elif first > 0:
        name = stem[:words[first].start()]
    else:  # the exercise first: the name is what follows its words
        rest = [m for m in words if not is_exercise(m.group())]
        name = stem[rest[0].start():] if rest else ""
    return name.strip(" -_.") or path.stem

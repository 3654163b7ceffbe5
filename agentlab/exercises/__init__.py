"""Check helpers for the classroom exercises (``notebooks/exercises/``).

Each exercise notebook ends with check cells such as ``ex.check_backoff(my_backoff)``. A check
runs several cases against the student's function and either prints one line,
``[ok] backoff schedule: 5/5 cases passed``, or raises ``ExerciseCheckError`` naming the first
failing case, what was expected, what came back, and a hint.

Chapter checks live in ``agentlab/exercises/chNN.py`` and are re-exported here. The pattern:

    def check_thing(student_fn):
        return run_cases("thing", [
            Case("empty input", lambda: student_fn([]), expected=[], hint="..."),
            ...
        ])

A student checks a copy with ``pytest --nbval-lax notebooks/exercises/NN_topic.ipynb``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["Case", "ExerciseCheckError", "run_cases"]


class ExerciseCheckError(AssertionError):
    """A check failed; the message names the case, expected vs got, and a hint."""


@dataclass
class Case:
    """One checked case.

    Args:
        name: what the case is about, shown to the student.
        run: a no-argument callable that calls the student's code and returns its answer.
        expected: the right answer, or ``None`` when ``check`` decides alone.
        hint: what to look at when this case fails.
        check: optional ``check(got) -> bool`` used instead of ``got == expected``.
    """

    name: str
    run: Callable[[], Any]
    expected: Any = None
    hint: str = ""
    check: Callable[[Any], bool] | None = None


def run_cases(title: str, cases: list[Case]) -> str:
    """Run every case; raise on the first failure, else print and return an ``[ok]`` line."""
    for i, case in enumerate(cases, 1):
        where = f"{title}, case {i}/{len(cases)} ({case.name})"
        try:
            got = case.run()
        except NotImplementedError:
            raise ExerciseCheckError(f"{where}: not implemented yet; replace the "
                                     "`raise NotImplementedError` with your code.") from None
        except ExerciseCheckError:
            raise
        except Exception as exc:  # the student's code raised: say so plainly
            raise ExerciseCheckError(f"{where}: your code raised {type(exc).__name__}: {exc}"
                                     + (f"\nHint: {case.hint}" if case.hint else "")) from exc
        ok = case.check(got) if case.check is not None else got == case.expected
        if not ok:
            expected = "" if case.check is not None and case.expected is None \
                else f"\n  expected: {case.expected!r}"
            raise ExerciseCheckError(f"{where} failed{expected}\n  got:      {got!r}"
                                     + (f"\nHint: {case.hint}" if case.hint else ""))
    line = f"[ok] {title}: {len(cases)}/{len(cases)} cases passed"
    print(line)
    return line


# Chapter checks (one module per exercise) are appended below by each chapter.
from .ch01 import *  # noqa: F401,F403
from .ch09 import *  # noqa: F401,F403
from .ch10 import *  # noqa: F401,F403
from .ch04 import *  # noqa: F401,F403
from .ch05 import *  # noqa: F401,F403
from .ch11 import *  # noqa: F401,F403
from .ch12 import *  # noqa: F401,F403
from .ch02 import *  # noqa: F401,F403
from .ch03 import *  # noqa: F401,F403
from .ch06 import *  # noqa: F401,F403
from .ch07 import *  # noqa: F401,F403
from .ch08 import *  # noqa: F401,F403

"""The case runner every exercise check uses: ``Case``, ``run_cases``, ``ExerciseCheckError``."""
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

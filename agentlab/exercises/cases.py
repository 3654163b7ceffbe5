"""The case runner every exercise check uses: ``Case``, ``run_cases``, ``ExerciseCheckError``.

``run_cases`` runs **every** case, even after one fails, so a student sees all that is wrong
at once. When all pass it prints ``[ok] <title>: n/n cases passed`` (the line strict nbval
compares in the solved masters). Otherwise it raises ``ExerciseCheckError`` whose message
names each failing case with what was expected, what came back and a hint; in a notebook the
error shows that message only, never a traceback or the checker's source.

A hint should match the mistake, not the case: a case may list ``mistakes``, each a known wrong
answer (computed by running a typical wrong implementation on the same input) with the hint for
that mistake. When the student's answer equals one of them, that hint is shown; otherwise the
case's own ``hint``, which should describe what the case tests, never the solution's code.

When the environment variable ``AGENTLAB_CHECK_LOG`` names a file, each check also appends one
JSON line with its per-case results there: ``agentlab exercise check`` and ``grade`` read it.
"""
from __future__ import annotations

import json
import os
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["Case", "CaseResult", "ExerciseCheckError", "run_cases", "describe_failures",
           "CHECK_LOG_ENV", "MAX_REPR"]

#: Environment variable naming the JSON-lines file that checks report to (see module doc).
CHECK_LOG_ENV = "AGENTLAB_CHECK_LOG"
#: Longest ``repr`` of an expected or returned value shown to the student.
MAX_REPR = 120
#: Failing cases shown in full in a notebook error; the rest are named on one line.
SHOWN_FAILURES = 3
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])


@dataclass
class Case:
    """One checked case.

    Args:
        name: what the case is about, shown to the student.
        run: a no-argument callable that calls the student's code and returns its answer.
        expected: the right answer, or ``None`` when ``check`` decides alone.
        hint: what to look at when this case fails (and no mistake below matches).
        check: optional ``check(got) -> bool`` used instead of ``got == expected``.
        mistakes: ``(answer, hint)`` pairs: ``answer()`` is what a known wrong implementation
            returns here; when the student's answer equals it, its hint is shown instead.
    """

    name: str
    run: Callable[[], Any]
    expected: Any = None
    hint: str = ""
    check: Callable[[Any], bool] | None = None
    mistakes: Sequence[tuple[Callable[[], Any], str]] = ()


@dataclass
class CaseResult:
    """What one case did: ``ok``, and for a failure the texts shown to the student.

    ``status`` is ``"pass"``, ``"fail"`` (wrong answer), ``"error"`` (the student's code
    raised) or ``"todo"`` (it still raises ``NotImplementedError``).
    """

    index: int
    total: int
    name: str
    status: str
    expected: str = ""
    got: str = ""
    hint: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "pass"


class ExerciseCheckError(AssertionError):
    """A check failed; the message names each failing case, expected vs got, and a hint.

    ``.title`` and ``.results`` (a list of ``CaseResult``) carry the same facts as data.
    """

    def __init__(self, message: str, title: str = "", results: list[CaseResult] | None = None):
        super().__init__(message)
        self.title = title
        self.results = list(results or [])

    def _render_traceback_(self) -> list[str]:
        # IPython shows these lines instead of a traceback: the checker's frames and source
        # would bury the hint and give the other cases away.
        return [f"ExerciseCheckError: {line}" if i == 0 else line
                for i, line in enumerate(str(self).splitlines())]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."


def _where_raised(exc: BaseException) -> str:
    """`` (in fn, line N: code)`` for the innermost frame outside this package, else ``""``."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(_PACKAGE_DIR)]
    if not frames:
        return ""
    f = frames[-1]
    code = f": `{f.line.strip()}`" if f.line else ""
    return f" (in {f.name}, line {f.lineno}{code})"


def _mistake_hint(case: Case, got: Any) -> str:
    """The hints of the known mistakes whose answer equals ``got`` (two mistakes can give the
    same wrong answer: both are named), else the case's own hint."""
    matched = []
    for answer, hint in case.mistakes:
        try:
            wrong = answer()
            if type(wrong) is type(got) and wrong == got and wrong != case.expected:
                matched.append(hint)
        except Exception:  # noqa: BLE001 - a mistake that cannot run here matches nothing
            continue
    return " Or: ".join(matched) if matched else case.hint


def _run_one(i: int, total: int, case: Case) -> CaseResult:
    def result(status: str, hint: str = case.hint, **texts: str) -> CaseResult:
        return CaseResult(i, total, case.name, status, hint=hint, **texts)
    try:
        got = case.run()
    except NotImplementedError:
        return result("todo", got="NotImplementedError: not implemented yet")
    except ExerciseCheckError:
        raise  # a check inside a check: let the outer one report it
    except Exception as exc:  # the student's code raised: say what and where, plainly
        return result("error", got=f"your code raised {type(exc).__name__}: {exc}"
                      + _where_raised(exc))
    try:
        ok = case.check(got) if case.check is not None else got == case.expected
    except Exception as exc:  # e.g. comparing an answer of the wrong type
        ok, got = False, f"{_short(got)} (could not be checked: {type(exc).__name__}: {exc})"
        return result("fail", expected=_expected(case), got=got)
    if ok:
        return result("pass")
    return result("fail", hint=_mistake_hint(case, got), expected=_expected(case),
                  got=_short(got))


def _expected(case: Case) -> str:
    return "" if case.check is not None and case.expected is None else _short(case.expected)


def describe_failures(title: str, results: list[CaseResult], shown: int = SHOWN_FAILURES
                      ) -> list[str]:
    """The lines that explain a failed check: a header, then each failing case (the first
    ``shown`` in full, the others by name)."""
    failed = [r for r in results if not r.ok]
    passed = len(results) - len(failed)
    if failed and all(r.status == "todo" for r in failed) and passed == 0:
        return [f"{title}: not implemented yet; replace the `raise NotImplementedError` "
                "with your code."]
    lines = [f"{title}: {passed}/{len(results)} cases passed"]
    for r in failed[:shown]:
        head = f"  case {r.index}/{r.total} ({r.name}) " + {
            "fail": "failed", "error": "raised", "todo": "is not implemented yet"}[r.status]
        facts = ([("expected", r.expected)] if r.expected else []) + \
            ([("got", r.got)] if r.status != "todo" else [])
        short = ", ".join(f"{label} {text}" for label, text in facts)
        if len(head) + len(short) <= 100:  # short answers: one line
            lines.append(head + (f": {short}" if short else ""))
        else:
            lines.append(head + ":")
            lines += [f"    {label + ':':<10}{text}" for label, text in facts]
        if r.hint:
            lines.append(f"    Hint: {r.hint}")
    rest = failed[shown:]
    if rest:
        lines.append(f"  ...and {len(rest)} more failing: "
                     + "; ".join(f"case {r.index} ({r.name})" for r in rest))
    return lines


def _log(title: str, results: list[CaseResult]) -> None:
    path = os.environ.get(CHECK_LOG_ENV)
    if not path:
        return
    record = {"title": title, "passed": sum(r.ok for r in results), "total": len(results),
              "cases": [asdict(r) for r in results]}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")


def run_cases(title: str, cases: list[Case]) -> str:
    """Run every case; print and return an ``[ok]`` line if all pass, else raise
    ``ExerciseCheckError`` describing every failing case."""
    results = [_run_one(i, len(cases), case) for i, case in enumerate(cases, 1)]
    _log(title, results)
    if all(r.ok for r in results):
        line = f"[ok] {title}: {len(cases)}/{len(cases)} cases passed"
        print(line)
        return line
    raise ExerciseCheckError("\n".join(describe_failures(title, results)), title, results)

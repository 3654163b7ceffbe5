"""Check helpers for the classroom exercises (``notebooks/exercises/``).

Each exercise notebook ends with check cells such as ``ex.check_backoff(my_backoff)``. A check
runs all its cases against the student's function and either prints one line,
``[ok] backoff schedule: 9/9 cases passed``, or raises ``ExerciseCheckError`` naming every
failing case, what was expected, what came back, and a hint (no traceback in the notebook).

The case runner is in ``cases.py``; chapter checks live in ``agentlab/exercises/chNN.py``;
both are re-exported here. The pattern:

    def check_thing(student_fn):
        return run_cases("thing", [
            Case("empty input", lambda: student_fn([]), expected=[], hint="..."),
            ...
        ])

Students work in a copy: ``agentlab exercise start 01`` then ``agentlab exercise check 01``
(``runner.py`` runs the notebook in a fresh kernel; ``grading.py`` grades a class's folder;
``generate.py`` makes the student copies from the solved masters).
"""
from .cases import Case, CaseResult, ExerciseCheckError, run_cases  # noqa: F401

# Chapter checks, one module per exercise.
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
from .ch13 import *  # noqa: F401,F403
from .ch14 import *  # noqa: F401,F403
from .ch15 import *  # noqa: F401,F403
from .ch16 import *  # noqa: F401,F403

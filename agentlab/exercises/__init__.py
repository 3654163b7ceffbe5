"""Check helpers for the classroom exercises (``notebooks/exercises/``).

Each exercise notebook ends with check cells such as ``ex.check_backoff(my_backoff)``. A check
runs several cases against the student's function and either prints one line,
``[ok] backoff schedule: 5/5 cases passed``, or raises ``ExerciseCheckError`` naming the first
failing case, what was expected, what came back, and a hint.

The case runner is in ``cases.py``; chapter checks live in ``agentlab/exercises/chNN.py``;
both are re-exported here. The pattern:

    def check_thing(student_fn):
        return run_cases("thing", [
            Case("empty input", lambda: student_fn([]), expected=[], hint="..."),
            ...
        ])

A student checks a copy with ``pytest --nbval-lax notebooks/exercises/NN_topic.ipynb``.
"""
from .cases import Case, ExerciseCheckError, run_cases  # noqa: F401

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
from .ch14 import *  # noqa: F401,F403

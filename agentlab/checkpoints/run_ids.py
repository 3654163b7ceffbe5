"""Run identity (book chapter on runtimes, 1.4): what a ``run_id`` looks like, and a fresh one.

A run keeps its ``run_id`` for its whole life, across resumes and processes: checkpoints, the
tool-result log and idempotency keys (``"<run_id>:<tool_call_id>"``) are all filed under it.
Since backends use it in file names and keys, a run id is checked like a file name: 1-128
characters of letters, digits, ``_ . -``, starting with a letter or digit, portable to Windows
(``agentlab.atomic.portable_name_problem``). Part of ``notebooks/11_checkpoints.ipynb``.
"""
from __future__ import annotations

import re
import uuid

from ..atomic import portable_name_problem
from ..errors import CheckpointError

__all__ = ["new_run_id", "check_run_id"]

#: What a run id looks like (``\Z``, not ``$``: ``$`` also matches before a trailing newline).
_RUN_ID_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")


def new_run_id() -> str:
    """A fresh run id (``run-<uuid4>``)."""
    return f"run-{uuid.uuid4()}"


def check_run_id(run_id: str) -> str:
    """Return ``run_id`` if it is a valid run id, else raise ``CheckpointError("invalid_key")``."""
    if not isinstance(run_id, str) or not _RUN_ID_RE.match(run_id) \
            or portable_name_problem(run_id):
        raise CheckpointError("invalid_key", f"run_id {run_id!r} must be 1-128 characters of "
                              "letters, digits, '_', '.', '-', starting with a letter or digit, "
                              "not ending with '.', and not a Windows device name (CON, NUL)",
                              details={"run_id": repr(run_id)})
    return run_id

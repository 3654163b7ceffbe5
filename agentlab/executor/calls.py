"""One call of a tool batch: its book-keeping and its time limit (chapters 03 and 09).

``ToolExecutor`` keeps a ``CallState`` per call of a batch. A call's own limit is the tool's
``timeout`` option, else ``timeout_manager.get_timeout(name)`` (chapter 09's
``AdaptiveTimeoutManager``) when one is set, else the executor's ``default_timeout``; what the
call did is reported back with ``report_execution``. A broken manager never breaks a batch:
its failures are logged and the default applies.
"""
from __future__ import annotations

import concurrent.futures
import logging
import math
from typing import Any

from .results import safe_str

__all__ = ["CallState", "enforced_s", "call_ids", "own_limit", "report_execution",
           "stoppable"]

logger = logging.getLogger(__name__)


class CallState:
    """Book-keeping for one call of a batch; guarded by the batch's condition lock."""

    __slots__ = ("index", "call", "kwargs", "limit_s", "own_limit", "deadline", "started",
                 "done", "abandoned", "outcome", "future", "__weakref__")

    def __init__(self, index: int, call: Any) -> None:
        self.index, self.call, self.kwargs = index, call, {}
        self.limit_s = self.deadline = self.started = 0.0
        self.own_limit = True  # False when the batch bound, not the tool's limit, applies
        self.done = self.abandoned = False
        self.outcome: tuple[Any, BaseException | None, float] | None = None
        self.future: concurrent.futures.Future | None = None  # async calls only


def enforced_s(state: CallState) -> float:
    """The limit a call ran under: its own timeout, or what was left of the batch's."""
    return state.limit_s if state.own_limit else max(0.0, state.deadline - state.started)


def call_ids(call: Any) -> tuple[str, str]:
    """``(tool_call_id, name)`` of a call, as text whatever the caller passed."""
    return safe_str(getattr(call, "id", "")), safe_str(getattr(call, "name", ""))


def own_limit(name: str, options: dict, timeout_manager: Any, default_s: float) -> float:
    """The call's own limit in seconds (see the module docstring)."""
    if options.get("timeout") is not None:
        return float(options["timeout"])
    if timeout_manager is not None:
        try:
            value = float(timeout_manager.get_timeout(name))
            if 0 < value < math.inf:
                return value
            logger.warning("timeout_manager.get_timeout(%r) returned %r; using %s s",
                           name, value, default_s)
        except Exception:  # a broken manager must not break the batch
            logger.exception("timeout_manager.get_timeout(%r) failed", name)
    return default_s


def report_execution(timeout_manager: Any, name: str, ms: float, *, success: bool,
                     timed_out: bool) -> None:
    """Tell the manager (if any) what a call did; a manager that raises is logged."""
    if timeout_manager is None:
        return
    try:
        timeout_manager.record_execution(name, ms, success=success, timed_out=timed_out)
    except Exception:
        logger.exception("timeout_manager.record_execution(%r) failed", name)


def stoppable(func: Any) -> bool:
    """A tool that runs elsewhere and can be stopped: ``submit_call(kwargs, timeout_s)``
    returns a future whose ``cancel()`` kills it (``agentlab.sandbox.SandboxedTool``)."""
    return callable(getattr(func, "submit_call", None))

"""What is checked before a tool call starts, and the time it is given (chapter 03).

``preflight`` runs once per call, just before the executor would start it, and either refuses
the call, returning ``(error_code, text)`` for a failed ``ToolResult``, or fills in its
``CallState`` (the arguments to pass, its own limit, its deadline). It refuses, in this order:

- an unknown tool (``tool_not_found``, the text lists the available tools);
- arguments that are not a JSON object or fail ``ToolRegistry.validate`` (``invalid_arguments``);
- a call the registry says needs a human's approval (``requires_approval``, chapter 13) whose
  id is not among the batch's ``approved`` ids (``approval_required``): such a call never runs
  without approval, whatever executor stack it goes through;
- a sync call while too many abandoned threads still run (``executor_saturated``);
- a call the batch has no time left for (``deadline_exceeded``).

Each tool receives a deep copy of the arguments: mutating them cannot change the caller's record.

Idempotency: a tool registered with ``side_effects=True`` that has an ``idempotency_key``
parameter is called with ``idempotency_key=prefix + tool_call_id``. The executor only passes on
the prefix it is given (``execute*(..., idempotency_prefix=...)``, else its
``idempotency_prefix`` attribute, "" by default) and never invents one; the durable executor
of chapter 11 sets ``"<run_id>:"``, so a retried or resumed call gets the same key and the
tool can refuse to write twice.
"""
from __future__ import annotations

import copy
import logging
import time
from typing import Any, Callable

from ..errors import AgentError, ToolError
from ..tools import IDEMPOTENCY_PARAM, ToolRegistry
from .calls import CallState, call_ids, own_limit
from .results import safe_str

__all__ = ["preflight"]

logger = logging.getLogger(__name__)


def preflight(state: CallState, registry: ToolRegistry, prefix: str,
              batch_deadline: float | None, timeout_manager: Any, default_timeout: float,
              check_capacity: Callable[[str], None],
              approved: frozenset = frozenset()) -> tuple[str, str] | None:
    """Check and time one call: ``(error_code, text)`` if it must not run, else None.

    ``check_capacity(name)`` raises an ``AgentError`` when the executor has no room for the
    call; on success ``state.kwargs``, ``limit_s``, ``deadline`` (and ``own_limit``) are set.
    """
    call = state.call
    call_id, name = call_ids(call)
    try:
        parse_error = getattr(call, "parse_error", None)
        if name not in registry:
            registry.validate(name, {})  # raises tool_not_found with the list
        if parse_error:
            raise ToolError("invalid_arguments", f"The arguments for '{name}' are not a "
                            f"valid JSON object ({parse_error}). Call '{name}' again with "
                            "the arguments as one JSON object.")
        # a private deep copy: what the tool mutates is not what the caller recorded
        kwargs = registry.validate(name, copy.deepcopy(getattr(call, "arguments", None)))
        options = registry.get_options(name)
        if call_id not in approved and _needs_approval(registry, name, call.arguments):
            raise ToolError("approval_required", f"'{name}' was not run: this call needs a "
                            "human's approval first.")
        if options.get("idempotency_key"):
            kwargs[IDEMPOTENCY_PARAM] = f"{prefix}{call_id}"
        check_capacity(name)
    except AgentError as exc:
        return exc.code, exc.message
    except Exception as exc:  # a bug while checking must still not escape the executor
        logger.exception("checking call %s of '%s' failed", call_id, name)
        return "invalid_arguments", (f"The arguments for '{name}' could not be checked "
                                     f"({type(exc).__name__}: {safe_str(exc)}).")
    limit = own_limit(name, options, timeout_manager, default_timeout)
    now = time.perf_counter()
    state.kwargs, state.limit_s, state.deadline = kwargs, limit, now + limit
    if batch_deadline is not None and batch_deadline < state.deadline:
        state.deadline, state.own_limit = batch_deadline, False
        if batch_deadline <= now:
            return "deadline_exceeded", (f"'{name}' was not run: the time budget for this "
                                         "step ran out before it could start. Retry it in a "
                                         "later step if it is still needed.")
    return None


def _needs_approval(registry: Any, name: str, arguments: dict) -> bool:
    needs = getattr(registry, "requires_approval", None)
    return bool(needs is not None and needs(name, arguments))

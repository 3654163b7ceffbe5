"""Errors with a contract: every failure carries code, message, retryable and details.

Taught in every chapter; the contract itself comes from the book chapter on runtimes
(an error must say *what* went wrong, in a stable machine-readable ``code``, and whether
trying again could help).

    AgentError                  code, message, retryable, details
    ├── ProviderError           the model API failed (rate_limited, provider_timeout, auth_failed, ...)
    ├── ToolError               a tool could not run (tool_not_found, invalid_arguments, tool_timeout, ...)
    ├── ConfigError             a constructor or call was misused (also a ValueError)
    ├── CheckpointError         a checkpoint is corrupt or from an unknown format version
    └── StateError              a state key or value was refused (invalid_key, not_serializable)

Codes are short snake_case strings; the ones used across the package are listed in ``CODES``.
"""
from __future__ import annotations

from typing import Any

__all__ = [
    "AgentError",
    "ProviderError",
    "ToolError",
    "ConfigError",
    "CheckpointError",
    "StateError",
    "CODES",
]

#: Error codes used by agentlab, with the meaning a reader can rely on.
CODES: dict[str, str] = {
    "rate_limited": "the provider answered 429; retry after a pause",
    "provider_timeout": "the model call did not answer in time",
    "provider_unavailable": "the provider failed (5xx) or could not be reached",
    "auth_failed": "the API key was refused (401/403)",
    "bad_request": "the provider rejected the request as malformed (400/404/422)",
    "conflict": "the provider reported a conflict (409)",
    "empty_response": "the provider answered 200 with no choice in it; retried like a 5xx",
    "bad_response": "the endpoint answered 200 with a body that is not JSON (a login page, ...)",
    "model_not_found": "the provider does not know the model (404 model_not_found)",
    "refused": "the model declined the request (its refusal text is in details['refusal'])",
    "port_in_use": "agentlab serve could not listen: the port is taken",
    "tool_not_found": "the model asked for a tool that is not registered",
    "invalid_arguments": "tool arguments did not match the tool's schema",
    "tool_failed": "a tool raised an exception",
    "tool_timeout": "a tool did not finish within its timeout",
    "dependency_failed": "a tool was not run because a call it depends on failed",
    "max_turns": "the run reached its turn limit",
    "deadline_exceeded": "the run reached its total time budget",
    "cancelled": "the run was cancelled",
    "loop_detected": "the model kept repeating the same tool calls",
    "context_overflow": "the conversation does not fit the model's context",
    "checkpoint_corrupt": "a checkpoint file could not be read",
    "checkpoint_incompatible": "a checkpoint was written by an unknown format version",
    "checkpoint_not_found": "no checkpoint with that id exists",
    "invalid_key": "a state key could escape the store or is empty",
    "not_serializable": "a value cannot be stored as JSON",
    "cycle_detected": "tool dependencies form a cycle",
    "unknown_dependency": "a tool depends on an id that is not in the batch",
    "invalid_config": "a constructor argument (timeout, budget, size, ...) was refused",
    "unsupported_type": "a tool's parameter or kind (e.g. a generator) cannot be a tool",
    "unsupported_signature": "a tool's signature cannot be described to a model (*args, ...)",
    "tool_result_unrenderable": "a tool ran but its result could not be turned into text",
    "executor_saturated": "too many timed-out tool threads are still running in this process",
    "sandbox_limit": "a sandboxed tool hit a hard limit (details['limit']: memory, cpu, ...)",
    "sandbox_crashed": "a sandboxed tool's process died; it may have done part of its work",
    "sandbox_unavailable": "a sandbox worker process could not be started",
    "result_not_json": "a sandboxed tool returned a value that cannot cross as JSON",
    "executor_error": "the executor failed before it could report a call (it may have run)",
    "state_write_failed": "the file system refused a state write; the old value is kept",
    "checkpoint_write_failed": "a checkpoint or tool result could not be written; the run goes on",
    "invalid_spec": "an experiment spec names an unknown setting, scenario or value type",
    "sweep_mismatch": "a sweep directory holds the results of another experiment",
    "journal_corrupt": "a sweep's journal has a line that is not JSON (not just a torn last line)",
    "not_a_sweep": "a directory has no sweep manifest",
    "fleet_not_configured": "fleet=True without the chapter 13 fleet (AGENTLAB_REDIS_URL)",
    "worker_died": "a sweep's worker process died; run the sweep again to resume",
    "cost_budget": "a model call was not sent: it could exceed the run's cost budget",
    "unpriced_model": "a cost cap was set for a model without prices in agentlab.models",
    "redis_unavailable": "the Redis server cannot be reached or timed out; retry once it is up",
    "redis_auth_failed": "Redis refused the user name or password of the URL",
    "permission_denied": "the Redis user may not touch these keys (another tenant's)",
    "redis_error": "Redis answered a command with an error",
    "invalid_store": "CheckpointManager(store=...) names no known backend",
    "too_many_attempts": "a fleet run's worker died on every attempt; the run is not retried",
    "lease_lost": "a fleet worker lost a run's lease to a newer holder; it stops without writing",
    "run_not_found": "the fleet has no run with that id",
    "wait_timeout": "fleet runs were still going when the wait ended",
    "worker_start_failed": "a fleet worker process did not report ready",
}


class AgentError(Exception):
    """Base of every agentlab error.

    Args:
        code: stable snake_case identifier (see ``CODES``); branch on this, not on the text.
        message: a sentence for a human (or a model) that says what to do next.
        retryable: whether the same call could succeed if tried again.
        details: structured data about the failure (status, field names, ids, ...).
    """

    def __init__(self, code: str, message: str, *, retryable: bool = False,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retryable = retryable
        self.details = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data, for logs, results and checkpoints."""
        return {"type": type(self).__name__, "code": self.code, "message": self.message,
                "retryable": self.retryable, "details": self.details}

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
                f"retryable={self.retryable!r})")


class ProviderError(AgentError):
    """The model API failed: rate limits, timeouts, auth, bad requests, 5xx."""


class ToolError(AgentError):
    """A tool could not be found, validated, run, or finished in time."""


class ConfigError(AgentError, ValueError):
    """A constructor or call was misused: a bad argument, option or combination.

    Also a ``ValueError``, so code that catches the built-in for bad arguments still works.
    """


class CheckpointError(AgentError):
    """A checkpoint is missing, corrupt, or from a format version this code does not know."""


class StateError(AgentError):
    """A state key or value was refused by a store."""

"""Credentials a held turn needs: kept in this process's memory, never on disk (chapter 11).

Chapter 11's checkpoints serving chapter 13's approvals (no notebook cell shows it yet;
``tests/test_secrets_everywhere.py`` does). A checkpoint masks
credential-named arguments (``password``, ``api_key``, ``token``, ``secret``, ...) and key-shaped
values everywhere, the ``arguments`` text of an assistant message's tool calls included
(``agentlab.redaction``, rule 4). A turn held for approval is saved that way too, so resuming
it from disk alone would run the held call with ``"[REDACTED]"`` as its password. The rule:

1. When a run pauses with a held turn whose arguments had to be masked, the assistant message
   as the model sent it is kept here, in memory, under the run id (``keep_credentials``).
2. A resume in the same process (any runtime, any ``CheckpointManager``) gets it back
   (``restore_credentials``): the approved call runs with the real values.
3. A resume anywhere else (another worker, after a restart) cannot, and never guesses: each
   held call whose arguments were masked (``masked_calls``) is answered, not run, with an
   ``invalid_arguments`` result that says its credential arguments were not saved and asks the
   model to call again, and the run records a ``credentials_not_saved`` error
   (``CredentialGuard``, inside ``agentlab.checkpoints.durable``'s executor, so a call the
   durable log answers is replayed as usual). A rejected call is still answered as rejected.

4. Before a call runs, the values of its credential-named arguments (8 characters or more)
   are registered secrets (``register_credentials``), so a tool result or a reply that echoes
   them is masked in whatever is written next.

Credentials a tool needs for every call belong in the tool's own configuration (an environment
variable, a secrets manager), not in the arguments a model writes.
"""
from __future__ import annotations

import copy
import dataclasses
import json
import threading
from types import SimpleNamespace
from typing import Any

from ..errors import AgentError
from ..executor.batch import ExecutorWrapper, ToolBatch, run_batch
from ..redaction import REDACTED, is_secret_key, redact, register_secret

__all__ = ["keep_credentials", "restore_credentials", "masked_calls", "drop_credentials",
           "forget_credentials", "CREDENTIALS_NOT_SAVED", "not_saved_reason", "CredentialGuard",
           "register_credentials"]

#: The run error of a held call that could not run because its credentials were not saved.
CREDENTIALS_NOT_SAVED = "credentials_not_saved"

_lock = threading.Lock()
_held: dict[str, dict] = {}  # run id -> the held assistant message as the model sent it


def _calls(message: dict | None) -> list[dict]:
    return [tc for tc in (message or {}).get("tool_calls") or [] if isinstance(tc, dict)]


def _arguments(tc: dict) -> Any:
    raw = (tc.get("function") or {}).get("arguments")
    try:
        return json.loads(raw) if isinstance(raw, str) and raw.strip() else raw
    except (ValueError, RecursionError):
        return raw


def keep_credentials(run_id: str, message: dict) -> bool:
    """Keep ``message`` (a held turn's assistant message) in memory when saving it masks some
    of its arguments; True if it was kept."""
    if redact([message], keys=False) == [message]:
        return False
    with _lock:
        _held[run_id] = copy.deepcopy(message)
    return True


def restore_credentials(run_id: str, held: dict | None) -> dict | None:
    """``held`` (a held turn read from a checkpoint) with the message kept in memory, when
    this process kept one for the same calls; else ``held`` as it is."""
    if not held:
        return held
    with _lock:
        kept = _held.get(run_id)
    ids = [tc.get("id") for tc in _calls(held.get("message"))]
    if kept is None or [tc.get("id") for tc in _calls(kept)] != ids:
        return held
    return {**held, "message": copy.deepcopy(kept)}


def masked_calls(message: dict | None) -> dict[str, list[str]]:
    """``{call id: [names of arguments whose saved value is masked]}`` of a held message."""
    out: dict[str, list[str]] = {}
    for tc in _calls(message):
        args = _arguments(tc)
        if isinstance(args, dict):
            names = sorted(k for k, v in args.items() if REDACTED in json.dumps(v))
        else:
            names = ["arguments"] if isinstance(args, str) and REDACTED in args else []
        if names:
            out[str(tc.get("id"))] = names
    return out


def not_saved_reason(names: list[str]) -> str:
    """The text a held call gets instead of running (``invalid_arguments``)."""
    return (f"its credential arguments ({', '.join(names)}) were masked when the run was "
            "saved: checkpoints never hold credentials, and the process that paused the run, "
            "which kept them in memory, is not this one; the call was not run")


def drop_credentials(run_id: str) -> None:
    """Forget what was kept for ``run_id`` (its held turn is finished)."""
    with _lock:
        _held.pop(run_id, None)


def forget_credentials() -> None:
    """Forget everything kept (tests; what a restart does)."""
    with _lock:
        _held.clear()


def register_credentials(arguments: Any) -> None:
    """Register the values of credential-named arguments, at any depth, as secrets (rule 4)."""
    if isinstance(arguments, dict):
        for key, value in arguments.items():
            if isinstance(value, str) and REDACTED not in value and is_secret_key(key):
                register_secret(value)  # ignored below 8 characters (agentlab.redaction)
            elif isinstance(value, (dict, list)):
                register_credentials(value)
    elif isinstance(arguments, list):
        for value in arguments:
            register_credentials(value)


class CredentialGuard(ExecutorWrapper):
    """The executor inside ``DurableExecutor``: registers each call's credential values (rule
    4); a held call whose credentials were not saved (``expect``) goes on as a call with a
    parse error saying so, so the inner executor answers
    it ``invalid_arguments`` without running the tool (an approval gate's rejection still
    comes first); the run records ``credentials_not_saved``. Other calls pass through."""

    def __init__(self, inner: Any, runtime: Any) -> None:
        self.inner, self.runtime = inner, runtime
        self.masked: dict[str, list[str]] = {}

    def expect(self, masked: dict[str, list[str]]) -> None:
        """The held calls of the run now starting whose arguments were masked on disk."""
        self.masked = dict(masked)

    def run(self, batch: ToolBatch) -> list:
        for call in batch.calls:  # echoed by a tool or a reply: masked from now on
            register_credentials(getattr(call, "arguments", None))
        refused = {i: self.masked.pop(str(c.id)) for i, c in enumerate(batch.calls)
                   if str(c.id) in self.masked}
        if not refused:
            return run_batch(self.inner, batch)
        calls = [_refused(c, refused[i]) if i in refused else c for i, c in enumerate(batch.calls)]
        results = run_batch(self.inner, batch.replace(calls=calls))
        ctx = self.runtime.context
        for i, names in refused.items():  # refused for that reason (not rejected): on record
            if results[i].error_code == "invalid_arguments" and ctx is not None:
                ctx.add_error(AgentError(
                    CREDENTIALS_NOT_SAVED, f"{calls[i].name} ({calls[i].id}): "
                    f"{not_saved_reason(names)}. Resume in the process that paused the run, or "
                    "let the model call again; tools should take credentials from their own "
                    "configuration", details={"call_id": str(calls[i].id), "arguments": names}))
        return results


def _refused(call: Any, names: list[str]) -> Any:
    """``call`` without arguments and with a parse error saying why it cannot run."""
    why = not_saved_reason(names)
    if dataclasses.is_dataclass(call):
        return dataclasses.replace(call, arguments={}, parse_error=why)
    return SimpleNamespace(id=call.id, name=call.name, arguments={}, parse_error=why)

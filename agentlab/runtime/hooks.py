"""Hooks: callbacks on the runtime's events, the first part of the seam (chapter 06).

Taught in ``notebooks/06_runtime_loop.ipynb``; the events and their payloads are listed in
``agentlab.runtime.context``. ``AgentRuntime.on``, ``declare_events`` and ``emit`` use one
``Hooks`` per runtime. Hooks of an event run in the order they were added, ``"*"`` hooks
included; a hook that raises is recorded in the run's errors (``hook_failed``) and ignored, so
a broken hook never breaks a run.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

from ..errors import AgentError, ConfigError
from .context import HOOK_EVENTS, RunContext

__all__ = ["Hooks", "Hook"]

logger = logging.getLogger(__name__)

Hook = Callable[[dict], Any]


class Hooks:
    """The callbacks of each event kind: the loop's ``HOOK_EVENTS`` and declared extension events."""

    def __init__(self) -> None:
        self._by_kind: dict[str, list[Hook]] = {kind: [] for kind in HOOK_EVENTS}
        self._every: list[Hook] = []

    def on(self, event: str, callback: Hook) -> Hook:
        """Call ``callback(event_dict)`` on ``event`` (a known kind, or ``"*"`` for all)."""
        if not callable(callback):
            raise ConfigError("invalid_hook", f"a hook must be callable, not {callback!r}")
        if event == "*":
            self._every.append(callback)
            for hooks in self._by_kind.values():
                hooks.append(callback)
        elif event in self._by_kind:
            self._by_kind[event].append(callback)
        else:
            raise ConfigError("invalid_hook", f"unknown hook event {event!r}; use one of "
                              f"{', '.join(self._by_kind)} or '*'")
        return callback

    def declare(self, *kinds: str) -> None:
        """Add extension event kinds (their ``"*"`` hooks are the ones added so far and later)."""
        for kind in kinds:
            if not isinstance(kind, str) or not kind.isidentifier() or kind == "done":
                raise ConfigError("invalid_hook", f"event names are identifiers, not {kind!r}")
            self._by_kind.setdefault(kind, list(self._every))

    def fire(self, ctx: RunContext | None, event: dict) -> None:
        """Call the hooks of ``event["type"]``; a failure is recorded in ``ctx`` (or logged)."""
        for fn in self._by_kind[event["type"]]:
            try:
                fn(event)
            except Exception as exc:  # a broken hook must not break the run
                kind = event["type"]
                error = AgentError("hook_failed", f"a {kind!r} hook raised {type(exc).__name__}: "
                                   f"{exc}", details={"event": kind})
                if ctx is None:
                    logger.error("%s", error)
                else:
                    ctx.add_error(error)

    def emit(self, ctx: RunContext | None, kind: str, **payload: Any) -> None:
        """Fire a declared extension event (the loop's own events are the loop's to fire)."""
        if kind not in self._by_kind or kind in HOOK_EVENTS:
            raise ConfigError("invalid_hook", f"{kind!r} is not a declared extension event; "
                              "call declare_events() first (the loop's own events are not emitted)")
        self.fire(ctx, {"type": kind, **payload})

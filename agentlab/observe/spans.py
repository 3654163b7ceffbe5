"""Spans: nested, timed operations of one trace, and point events (chapter 12).

Taught in ``notebooks/12_observability.ipynb``. ``SpanRecorder`` is the tracing half of
``AgentObserver``: what the article's observer got wrong, done right --

- ``start_span`` really stores the span (the article's never appended it, so ``end_span`` found
  nothing and every trace was empty), before it ends: an unfinished span is still visible;
- the current span lives in a per-recorder ``ContextVar``, so nesting (run > turn > call) is
  right per thread and per asyncio task, and ``end_span`` restores the parent;
- durations use ``time.perf_counter``, anchored once to the wall clock for timestamps;
- a seed makes trace and span ids reproducible (notebooks, tests).
"""
from __future__ import annotations

import contextlib
import contextvars
import random
import threading
import time
from typing import Any, Iterator

from ..errors import AgentError, ConfigError
from .records import ATTRIBUTE_ALIASES, Span

__all__ = ["SpanRecorder"]


class SpanRecorder:
    """Records the spans and events of one trace (``AgentObserver`` is one).

    Args:
        seed: makes trace and span ids reproducible.
    """

    def __init__(self, *, seed: int | None = None) -> None:
        self._seed = seed
        self._rng = random.Random(seed) if seed is not None else random.SystemRandom()
        self.trace_id = self._new_id(16)
        self.spans: list[Span] = []
        self.events: list[dict[str, Any]] = []
        self._t0 = time.perf_counter()
        self._wall0 = time.time()
        self._current: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
            f"agentlab_current_span_{id(self)}", default=None)
        self._open: dict[str, tuple[float, Span | None, Any]] = {}  # span id -> start, parent, token
        self._lock = threading.Lock()

    # -- ids and clocks
    def _new_id(self, nbytes: int) -> str:
        return f"{self._rng.getrandbits(nbytes * 8):0{nbytes * 2}x}"

    def _offset_ms(self, perf: float) -> float:
        return (perf - self._t0) * 1000.0

    def _wall(self, perf: float) -> float:
        return self._wall0 + (perf - self._t0)

    @property
    def start_time(self) -> float:
        """When the observer started (epoch seconds); span offsets count from here."""
        return self._wall0

    # -- events
    def record_event(self, name: str, **attrs: Any) -> None:
        """A point in time (``turn_start``, ``compression``...); also added to the current span."""
        now = time.perf_counter()
        event = {"name": name, "time": self._wall(now), "offset_ms": self._offset_ms(now),
                 "attributes": attrs}
        with self._lock:
            self.events.append(event)
        current = self._current.get()
        if current is not None:
            current.events.append(event)

    # -- spans
    def current_span(self) -> Span | None:
        """The innermost open span of this thread / task, if any."""
        return self._current.get()

    def start_span(self, name: str, *, parent: Span | None = None, **attributes: Any) -> Span:
        """Open a span (child of ``parent`` or of the current span), store it, make it current."""
        now = time.perf_counter()
        parent = parent if parent is not None else self._current.get()
        span = Span(name=name, trace_id=self.trace_id, span_id=self._new_id(8),
                    parent_id=parent.span_id if parent else None, start_time=self._wall(now),
                    start_offset_ms=self._offset_ms(now),
                    attributes={ATTRIBUTE_ALIASES.get(k, k): v for k, v in attributes.items()})
        token = self._current.set(span)
        with self._lock:
            self.spans.append(span)  # stored now: an unfinished span is still visible
            self._open[span.span_id] = (now, parent, token)
        return span

    def end_span(self, span: Span, status: str = "ok", status_message: str = "",
                 **attributes: Any) -> Span:
        """Close a span with ``ok`` or ``error``; restores its parent as the current span."""
        if span.ended:
            return span
        now = time.perf_counter()
        status = status.lower()
        if status not in ("ok", "error", "unset"):
            raise ConfigError("invalid_status", f"status must be 'ok' or 'error', not {status!r}")
        for k, v in attributes.items():
            span.set_attribute(k, v)
        span.end_time = self._wall(now)
        started, parent, token = self._open.pop(  # dict.pop is atomic: no lock needed
            span.span_id, (self._t0 + span.start_offset_ms / 1000.0, None, None))
        span.duration_ms = (now - started) * 1000.0
        span.status, span.status_message = status, status_message
        if self._current.get() is span:
            try:
                self._current.reset(token)  # type: ignore[arg-type]
            except (ValueError, TypeError):  # ended in another context: fall back to the parent
                self._current.set(parent)
        return span

    @contextlib.contextmanager
    def span(self, name: str, **attributes: Any) -> Iterator[Span]:
        """``with obs.span("turn", turn=3) as s:`` -- nested spans get this one as parent.

        An exception inside marks the span ``error`` (with ``error.type``) and propagates.
        """
        span = self.start_span(name, **attributes)
        try:
            yield span
        except BaseException as exc:
            code = exc.code if isinstance(exc, AgentError) else type(exc).__name__
            self.end_span(span, "error", str(exc), **{"error.type": code})
            raise
        else:
            self.end_span(span, "error" if span.status == "error" else "ok", span.status_message)

    def _child_span(self, name: str, duration_ms: float, start_perf: float | None,
                    parent: Span | None, attributes: dict[str, Any], error: str | None) -> Span:
        """A span for something that already happened (it lasted ``duration_ms``, ended now)."""
        parent = parent if parent is not None else self._current.get()
        end = time.perf_counter() if start_perf is None else start_perf + duration_ms / 1000.0
        start = end - duration_ms / 1000.0
        span = Span(name=name, trace_id=self.trace_id, span_id=self._new_id(8),
                    parent_id=parent.span_id if parent else None, start_time=self._wall(start),
                    end_time=self._wall(end), start_offset_ms=self._offset_ms(start),
                    duration_ms=float(duration_ms), status="error" if error else "ok",
                    status_message=error or "", attributes=attributes)
        with self._lock:
            self.spans.append(span)
        return span

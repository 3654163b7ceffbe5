"""Tracing an ``AgentRuntime`` run with an ``AgentObserver``, from the hook events (chapter 12).

Taught in ``notebooks/12_observability.ipynb``. ``attach(runtime, observer)`` (what
``AgentRuntime(..., observer=obs)`` and ``obs.attach(runtime)`` do) subscribes one
``RuntimeTracer`` per runtime to all its hook events (``runtime.on("*", tracer)``, the public
seam of ``agentlab.runtime.context``) and sets ``runtime.observer``. The tracer turns the
events into the observer's records; the loop does not know it is there:

    run_start   -> span ``run`` (``gen_ai.operation.name=invoke_agent``, model, run id)
    turn_start  -> span ``turn`` (child of run)
    llm_end     -> a ``chat <model>`` span in the turn: tokens, cost, latency, finish reason
    tool_end    -> an ``execute_tool <name>`` span in the turn: latency, success, error code
                   (a result with ``replayed=True`` did not run here: a ``tool_replayed`` event)
    error       -> a failed model call (if one was in flight) and the turn span marked error
    turn_end    -> the turn span closed; message compressions become events
    run_end     -> the run span closed (ok only for a finished run), ``finish(stopped_reason)``
    any other   -> an event of an extension (e.g. ``checkpoint_saved``, ``run_resumed`` from
                   ``agentlab.checkpoints.durable``), recorded with ``record_event`` on the
                   observer of the run it happened in. Attach the observer before other
                   extensions (the runtime's constructor does) and their events land inside the
                   run span; one that fires before the tracer saw ``run_start`` is recorded when
                   the run span opens, one after ``run_end`` (the last checkpoint) outside it.

Observers are per run. The runtime's ``observer`` is the observer of its current (or last)
run: when a run starts with an observer that already recorded a run, the tracer replaces it
with ``observer.fresh(run_id)`` (same model and prices, empty). Read ``rt.observer`` after
each run; an observer you kept a reference to still holds its own run only. At the start of
a run the observer's ``run_id`` becomes the run's (``AgentResult.run_id``, the checkpoints'
``run_id``) and its ``model`` the runtime's model.
"""
from __future__ import annotations

import time
import weakref
from typing import Any

from ..runtime.context import HOOK_EVENTS

__all__ = ["RuntimeTracer", "attach"]

#: The tracer of each runtime (one per runtime, however many observers are attached).
_TRACERS: "weakref.WeakKeyDictionary[Any, RuntimeTracer]" = weakref.WeakKeyDictionary()


def attach(runtime: Any, observer: Any) -> "RuntimeTracer":
    """Trace ``runtime``'s runs into ``observer`` (``runtime.observer`` from now on)."""
    runtime.observer = observer
    tracer = _TRACERS.get(runtime)
    if tracer is None:
        tracer = _TRACERS[runtime] = RuntimeTracer(runtime)
        runtime.on("*", tracer)
    return tracer


class RuntimeTracer:
    """A ``"*"`` hook that records one run at a time into ``runtime.observer``."""

    def __init__(self, runtime: Any) -> None:
        self.rt = runtime
        self.obs: Any = None
        self._ctx: Any = None  # the RunContext of the run being traced
        self._early: list[tuple[str, dict]] = []  # extension events of a run not started here yet
        self._reset()
        self._handlers = {"turn_start": self._turn_start, "turn_end": self._turn_end,
                          "run_end": self._run_end, "llm_start": self._llm_start,
                          "llm_end": self._llm_end, "tool_start": self._tool_start,
                          "tool_end": self._tool_end, "error": self._error}

    def _reset(self) -> None:
        self.run_span = self.turn_span = None
        self.turn: int | None = None
        self.llm_t0: float | None = None
        self.tool_t0: dict[str, float] = {}
        self.compressions = 0

    def __call__(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "run_start":
            self._run_start(event)
        elif kind not in HOOK_EVENTS:
            self._extension_event(str(kind), {k: v for k, v in event.items() if k != "type"})
        elif self.obs is not None and self.run_span is not None and kind in self._handlers:
            self._handlers[kind](event)

    def _extension_event(self, kind: str, attrs: dict) -> None:
        if self._ctx is not None and self.rt.context is self._ctx:
            if self.obs is not None:
                self.obs.record_event(kind, **attrs)  # in the run span, or after run_end
        else:  # the run has not reached this tracer's run_start yet
            self._early.append((kind, attrs))

    # -- run and turns
    def _run_start(self, event: dict) -> None:
        obs = self.rt.observer
        self._reset()
        self._ctx, early, self._early = self.rt.context, self._early, []
        if obs is None:
            self.obs = None
            return
        run_id = str(event.get("run_id"))
        if obs.used:  # one observer per run: nothing accumulates across runs
            obs = obs.fresh(run_id)
            self.rt.observer = obs
        obs.run_id = run_id
        obs.model = getattr(self.rt.llm, "model", obs.model)
        self.obs = obs
        self.run_span = obs.start_span("run", parent=None, **{
            "gen_ai.operation.name": "invoke_agent", "gen_ai.request.model": obs.model,
            "agentlab.run_id": run_id})
        self.compressions = len(getattr(self.rt.messages, "compressions", None) or [])
        for kind, attrs in early:
            obs.record_event(kind, **attrs)

    def _turn_start(self, event: dict) -> None:
        self._end_turn("ok")
        self.turn = event.get("turn")
        self.turn_span = self.obs.start_span("turn", parent=self.run_span, turn=self.turn)

    def _turn_end(self, event: dict) -> None:
        self._end_turn("ok", **{"agentlab.tool_calls": event.get("tool_calls", 0)})
        records = getattr(self.rt.messages, "compressions", None) or []
        for rec in records[self.compressions:]:
            info = rec.as_dict() if hasattr(rec, "as_dict") else {}
            self.obs.record_event("compression", **{k: v for k, v in info.items()
                                                   if isinstance(v, (int, float, str))})
        self.compressions = len(records)

    def _end_turn(self, status: str, message: str = "", **attributes: Any) -> None:
        if self.turn_span is not None:
            self.obs.end_span(self.turn_span, status, message, **attributes)
            self.turn_span = None

    def _run_end(self, event: dict) -> None:
        result = event.get("result")
        state = getattr(getattr(result, "state", None), "value", "")
        reason = getattr(result, "stopped_reason", "") or "unknown"
        ok = state == "finished"
        self._end_turn("ok" if ok else "error", reason)
        usage = getattr(result, "usage", None) or {}
        errors = getattr(result, "errors", None) or []
        if not ok and errors:
            self.run_span.set_attribute("error.type", errors[-1].get("code", "error"))
        self.obs.end_span(self.run_span, "ok" if ok else "error", "" if ok else reason, **{
            "agentlab.turns": getattr(result, "turns", 0), "agentlab.stopped_reason": reason,
            "agentlab.state": state,
            "gen_ai.usage.input_tokens": int(usage.get("prompt_tokens") or 0),
            "gen_ai.usage.output_tokens": int(usage.get("completion_tokens") or 0)})
        self.obs.finish(reason)
        self.run_span = None  # the observer stays: later extension events of this run go to it

    # -- calls
    def _llm_start(self, event: dict) -> None:
        self.llm_t0 = time.perf_counter()

    def _llm_end(self, event: dict) -> None:
        usage = event.get("usage") or {}
        self.obs.record_llm_call(
            model=getattr(self.rt.llm, "model", None), turn=self.turn, parent=self.turn_span,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            duration_ms=float(event.get("duration_ms") or 0.0),
            **{"gen_ai.response.finish_reasons": [event.get("finish_reason") or ""]})
        self.llm_t0 = None

    def _tool_start(self, event: dict) -> None:
        self.tool_t0[str(event.get("id"))] = time.perf_counter()

    def _tool_end(self, event: dict) -> None:
        call_id, name = str(event.get("id")), str(event.get("name"))
        start = self.tool_t0.pop(call_id, None)
        if event.get("replayed"):  # answered from a log: it did not run in this process
            self.obs.record_event("tool_replayed", tool=name, tool_call_id=call_id)
            return
        self.obs.record_tool_call(name, float(event.get("duration_ms") or 0.0),
                                  bool(event.get("ok")), event.get("error_code"), turn=self.turn,
                                  tool_call_id=call_id, start_perf=start, parent=self.turn_span)

    def _error(self, event: dict) -> None:
        code = str(event.get("code") or "error")
        if self.llm_t0 is not None:  # the model call in flight failed
            self.obs.record_llm_call(model=getattr(self.rt.llm, "model", None), turn=self.turn,
                                     duration_ms=(time.perf_counter() - self.llm_t0) * 1000.0,
                                     error_code=code, parent=self.turn_span)
            self.llm_t0 = None
        if self.turn_span is not None:
            self._end_turn("error", str(event.get("message") or ""), error_code=code)
        else:
            self.run_span.set_attribute("error.type", code)
            self.obs.record_event("error", code=code, message=str(event.get("message") or ""))

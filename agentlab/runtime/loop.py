"""Chapters 06-07 — ``AgentRuntime``: the agent loop with terminal states, budgets and hooks.

Taught in ``notebooks/06_runtime_loop.ipynb`` (section 4 of the article) and
``notebooks/07_streaming.ipynb`` (section 5.1). The loop is the article's: call the model; if it
asks for tools, run them, append the results and go round again; if it answers in plain text,
stop. Around that loop this module keeps the promises the article's version breaks:

* **A run always ends in a terminal state** (``RunState``): ``FINISHED`` only when the model
  answered; ``EXHAUSTED`` when a budget ran out (``max_turns``, ``max_total_time``, or an answer
  cut at the model's length limit), carrying what was done so far and the last content;
  ``CANCELLED``; ``ERROR`` with every error recorded as ``{code, message, retryable, details}``.
  Model and tool failures never escape ``run()`` as exceptions.
* **Budgets hold inside a turn.** ``max_total_time`` is a deadline: the time left bounds the
  model call (``llm.chat(..., timeout=remaining)``) and the tool batch
  (a ``ToolBatch`` carrying the run's deadline), so a slow tool cannot overshoot it.
* **Loops are stopped** (``agentlab.runtime.loop_guard``: repetition and A->B->A->B cycles,
  whatever the order of parallel calls), and the history left behind stays valid for the API:
  the stopped calls get "not executed" tool results, so a follow-up ``run()`` works.
* **Gates** (``agentlab.runtime.gates``): before each model call and before each turn's tools
  the loop asks its gates, which may end the run or pause the turn (``PAUSED``) with state of
  their own. The budgets above and the loop guard are gates; so are the cost cap
  (``max_cost_usd``) and anything a later chapter adds with ``add_gate``.
* **Hooks and cancellation.** ``.on(event, fn)`` for the events in ``HOOK_EVENTS``; a hook that
  raises is recorded and ignored. ``cancel()`` is thread-safe and never lost: sent before
  ``run()``, as it starts or during it, the run ends ``CANCELLED`` -- within about 20 ms even
  in the middle of a model call or a tool batch (``agentlab.runtime.cancel``). Each cancel is
  spent by the run it stopped (or by the run that finished as it arrived), never the next one.
* **Stopping** ``run_stream`` (``break``, ``close()``) ends the run ``CANCELLED`` too, with a
  result (``last_result``) and the same end-of-run hooks (``run_end``) as any run.
* **The history left behind is valid for a follow-up run.** A cancelled tool batch is
  *repaired*: every call gets its tool message (its result, "cancelled" or "not executed").
  A cancelled model call is *rolled back*: its reply is discarded; and a run cancelled before
  the model answered at all takes its task message back out of ``messages`` once its
  ``run_end`` hooks have run (so an extension saving the run at ``run_end`` keeps the task).
* **Streaming** (``run_stream``) is the same loop yielding event dicts, so budgets, loop
  detection and terminal states are identical in both modes.

The loop knows no later chapter. Checkpoints, observers, approval attach from outside through
the seam described in ``agentlab.runtime.context`` (hooks, a wrapped executor, the resume
phase, gates); ``checkpoints=``, ``observer=`` and ``extensions=`` are shortcuts for
``ext.attach(runtime)``. The steps of a turn are functions in ``agentlab.runtime.turn``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Iterator

from ..errors import AgentError, ConfigError
from ..executor import ToolExecutor
from ..messages import MessageManager
from ..models import DEFAULT_MODEL
from ..redaction import client_api_key, redact, register_secret
from .context import HOOK_EVENTS, LAST_RUN_KEY, STREAM_EVENTS, RunContext
from .cost import CostCap, spent_usd
from .gates import Budgets, Gate, LoopGuard, Pause, Stop, ask
from .hooks import Hook, Hooks
from .protocols import LLM, Executor, Extension, Messages, Registry, StateStoreLike
from .turn import (CUT_SHORT, assistant_message, call_model, end_turn, event, finish_held_turn,
                   finish_text, gate_tools, hold, new_turn, record, run_tools, stop_if_incomplete)
from .types import AgentResult, RunState, RuntimeConfig

__all__ = ["RunState", "RuntimeConfig", "AgentResult", "AgentRuntime", "HOOK_EVENTS",
           "STREAM_EVENTS"]

Resumer = Callable[[RunContext, str], None]


class AgentRuntime:
    """The agent loop (notebooks 06-08). See the module docstring for what it guarantees.

    Args:
        llm: an ``agentlab.llm.LLMClient`` (or anything with ``chat``/``stream``/``model``).
        registry: the ``ToolRegistry`` whose tools the model may call.
        system_prompt: first message of every request.
        config: a ``RuntimeConfig``.
        messages: a ``MessageManager`` to use instead of a fresh one (``rt.messages``).
        state: an opt-in state store; the last result is saved under ``"last_run"``.
        checkpoints: an opt-in ``CheckpointManager`` (chapter 11): ``checkpoints.attach(self)``.
        observer: an opt-in ``AgentObserver`` (chapter 12): ``observer.attach(self)``.
        executor: a tool executor to use instead of ``ToolExecutor(registry, ...)``.
        extensions: more things to ``attach(self)``, before the checkpoints (e.g. chapter 13's
            ``agentlab.approval.Approval()``).

    ``rt.context`` is the ``RunContext`` of the current (or last) run; ``rt.gates`` the gates
    asked at every turn, in order (``add_gate``).
    """

    def __init__(self, llm: LLM, registry: Registry, system_prompt: str = "You are a helpful assistant.",
                 config: RuntimeConfig | None = None, *, messages: Messages | None = None,
                 state: StateStoreLike | None = None, checkpoints: Extension | None = None,
                 observer: Extension | None = None, executor: Executor | None = None,
                 extensions: Iterable[Extension] = ()) -> None:
        self.llm = llm
        self.registry = registry
        self.config = config or RuntimeConfig()
        self.messages: Messages = messages if messages is not None else MessageManager(
            system_prompt=system_prompt, model=getattr(llm, "model", DEFAULT_MODEL))
        self.executor: Executor = executor if executor is not None else ToolExecutor(
            registry, default_timeout=self.config.tool_timeout, max_workers=self.config.max_workers)
        self.state = state              # the article's name for the state store
        self.checkpoints = checkpoints  # chapter 11, attached below
        self.observer = observer        # chapter 12, attached below
        self.run_state = RunState.IDLE
        self.last_result: AgentResult | None = None
        self.context: RunContext | None = None
        self.hooks = Hooks()
        self.gates: list[Gate] = [Budgets(self), LoopGuard(self)]
        if self.config.max_cost_usd is not None:  # a cap needs prices: CostCap checks
            self.add_gate(CostCap(self))  # follows config.max_cost_usd
        self._resume: Resumer | None = None
        self._cancel = threading.Event()
        self._busy = threading.Lock()
        named = [("observer", observer), *(("extensions", e) for e in extensions),
                 ("checkpoints", checkpoints)]
        for name, ext in named:  # the observer first, so it sees the checkpoint events in its run span
            if ext is not None:
                if not callable(getattr(ext, "attach", None)):
                    raise ConfigError("invalid_config", f"{name}= needs objects with "
                                      f"attach(runtime), e.g. an AgentObserver or a CheckpointManager; "
                                      f"got {type(ext).__name__}")
                ext.attach(self)

    # -- public API ---------------------------------------------------------------------------
    def on(self, event: str, callback: Hook) -> Hook:
        """Call ``callback(event_dict)`` on ``event`` (one of ``HOOK_EVENTS``, a declared
        extension event, or ``"*"`` for all). Hooks run in the order they were added."""
        return self.hooks.on(event, callback)

    def declare_events(self, *kinds: str) -> None:
        """Let an extension announce events of its own with ``emit`` (``on`` accepts them)."""
        self.hooks.declare(*kinds)

    def emit(self, kind: str, **payload: Any) -> None:
        """Fire the hooks of a declared extension event (not streamed; never raises for a hook)."""
        self.hooks.emit(self.context, kind, **payload)

    def add_gate(self, gate: Gate) -> Gate:
        """Ask ``gate`` before every model call and every turn's tools, after the gates added
        so far (``agentlab.runtime.gates``): it may end the run or pause the turn."""
        if not all(callable(getattr(gate, p, None)) for p in ("before_model", "before_tools")):
            raise ConfigError("invalid_config", f"a gate needs before_model(ctx) and "
                              f"before_tools(ctx, calls), e.g. a Gate subclass; got {gate!r}")
        self.gates.append(gate)
        return gate

    def approve(self, run_id: str, call_id: str) -> dict:
        """Approve a paused run's call: decided by the gate that can (chapter 13's approval)."""
        return self._decider().decide(run_id, call_id, approved=True)

    def reject(self, run_id: str, call_id: str, reason: str = "") -> dict:
        """Reject a paused run's call: it never runs; the model is told, with ``reason``."""
        return self._decider().decide(run_id, call_id, approved=False, reason=reason)

    def _decider(self) -> Any:
        for gate in self.gates:
            if callable(getattr(gate, "decide", None)):
                return gate
        raise ConfigError("not_supported", "approve/reject need a gate that decides calls, "
                          "e.g. extensions=[agentlab.approval.Approval()] (chapter 13)")

    def on_resume(self, restore: Resumer) -> Resumer:
        """Register the resume phase: ``run(task, resume_from=ref)`` calls ``restore(context, ref)``
        before the run starts (see ``agentlab.runtime.context``). One per runtime."""
        if not callable(restore):
            raise ConfigError("invalid_hook", f"the resume phase must be callable, not {restore!r}")
        if self._resume is not None:
            raise ConfigError("invalid_config", "this runtime already has a resume phase (one "
                              "extension that restores runs, e.g. one CheckpointManager)")
        self._resume = restore
        return restore

    def cancel(self) -> None:
        """Stop the current run (or, if none is running, the next one). Safe from any thread.

        The run ends ``CANCELLED`` within about 20 ms: a model call in flight is abandoned, a
        tool batch interrupted. A cancel is spent when a run ends, so one that arrives after
        the last model call (the run finishes anyway) does not cancel the next run.
        """
        self._cancel.set()

    def run(self, user_input: str, resume_from: str | None = None) -> AgentResult:
        """Run the loop on ``user_input`` until a terminal state; never raises for model or
        tool failures (they are in ``result.errors``)."""
        event: dict = {}
        for event in self._loop(user_input, stream=False, resume_from=resume_from):
            pass
        return event["result"]

    def run_stream(self, user_input: str, resume_from: str | None = None) -> Iterator[dict]:
        """The same loop, yielding event dicts (``STREAM_EVENTS``) as they happen; the last one
        is ``{"type": "done", "result": AgentResult, ...}``."""
        return self._loop(user_input, stream=True, resume_from=resume_from)

    # -- the loop -----------------------------------------------------------------------------
    def _loop(self, user_input: str, stream: bool, resume_from: str | None) -> Iterator[dict]:
        ctx = self._start_run(user_input, resume_from)  # raises before anything runs
        state, reason, error, closed = RunState.ERROR, "exception: unknown", None, False
        try:
            tools = self._offer_tools()  # once per run, before the task joins the history:
            # the budget counts the schemas (and compresses) whatever history is there
            if ctx.resumed_from is None:  # a resumed run has its history back already
                self.messages.append({"role": "user", "content": user_input})
            yield from event(self, ctx, "run_start", run_id=ctx.run_id, input=user_input,
                             resumed_from=ctx.resumed_from, turn=ctx.turns)
            if ctx.held_turn is not None:  # a turn a gate paused before its tools
                yield from finish_held_turn(self, ctx)
            while True:
                self._ask_gates_before_model(ctx)  # a safe point: may stop or pause
                ctx.turns += 1
                turn = new_turn(ctx)
                yield from event(self, ctx, "turn_start", turn=ctx.turns)
                resp, content = yield from call_model(self, ctx, tools, stream, turn)
                if not resp.tool_calls or resp.finish_reason in CUT_SHORT:  # the model is
                    # done (or cut short: then none of its tool calls runs)
                    stop = finish_text(self, ctx, resp, content)  # the answer is appended
                    yield from end_turn(self, ctx, turn, tool_calls=0)
                    raise stop
                stop_if_incomplete(resp)
                asst = assistant_message(self, resp, content)
                yield from gate_tools(self, ctx, resp.tool_calls, asst, turn)
                results = yield from run_tools(self, ctx, resp.tool_calls, asst, turn)
                yield from end_turn(self, ctx, turn, tool_calls=len(results))  # a safe point
        except Stop as stop:
            state, reason, error = stop.state, stop.reason, stop.error
        except GeneratorExit:  # the consumer stopped iterating run_stream(): the run ends here
            state, reason, closed = RunState.CANCELLED, "cancelled", True
        except Exception as exc:  # a bug or an unexpected failure: recorded, never raised
            state, reason = RunState.ERROR, f"exception: {type(exc).__name__}"
            error = exc if isinstance(exc, AgentError) else AgentError(
                "internal_error", f"{type(exc).__name__}: {exc}", details={"turn": ctx.turns})
        except BaseException:  # KeyboardInterrupt and the like: free the runtime, re-raise
            self._busy.release()
            raise
        events = self._end_run(ctx, state, reason, error)
        if not closed:  # a closed generator must not yield again
            yield from events

    def _ask_gates_before_model(self, ctx: RunContext) -> None:
        gate, verdict = ask(self.gates, "before_model", ctx)
        if isinstance(verdict, Pause):
            hold(ctx, gate, verdict, None)
            raise Stop(RunState.PAUSED, verdict.reason)
        if verdict is not None:
            raise verdict

    def _offer_tools(self) -> list | None:
        """The tool schemas sent with every request of this run; the message manager counts
        them in its budget (chapter 04: 40 tools can take 2,000 tokens)."""
        tools = self.registry.get_all_schemas() or None  # copies: safe to hand out
        set_tools = getattr(self.messages, "set_tools", None)
        if set_tools is not None:
            set_tools(tools)
        return tools

    def _start_run(self, task: str, resume_from: str | None) -> RunContext:
        """Reserve the runtime, make the run's context, and run the resume phase if asked."""
        if resume_from is not None and self._resume is None:
            raise ConfigError("not_supported", "resume_from needs something attached that can "
                              "resume a run, e.g. checkpoints= (chapter 11)")
        if self.config.max_cost_usd is not None and not any(
                isinstance(g, CostCap) and g.follows_config for g in self.gates):
            self.add_gate(CostCap(self))  # the cap was set after construction: it still holds
        if not self._busy.acquire(blocking=False):
            raise ConfigError("already_running", "this runtime is already running; use one "
                              "AgentRuntime per concurrent run")
        ctx = RunContext.start(task, self.config.max_total_time, self._cancel)
        if resume_from is not None:
            try:
                self._resume(ctx, resume_from)  # type: ignore[misc]  # restores ctx and messages
            except BaseException:
                self._busy.release()
                raise
        self.context = ctx  # a cancel sent before this point is kept: it stops this run
        self.run_state = RunState.RUNNING
        return ctx

    def _end_run(self, ctx: RunContext, state: RunState, reason: str,
                 error: AgentError | None) -> list[dict]:
        """Finish a run whose state is decided: record the error, build the result, fire
        ``run_end``, save the last run, spend the cancel, free the runtime. Returns the events
        still to stream (none is yielded here, so this completes even for a closed stream)."""
        try:
            events = list(record(self, ctx, error)) if error is not None else []
            result = self._result(ctx, state, reason)
            events += event(self, ctx, "run_end", result=result)
            self._save_last_run(ctx, result)
            if state is RunState.CANCELLED:
                self._drop_unanswered_task(ctx)
            self._cancel.clear()  # spent: it does not reach the next run
        finally:
            self._busy.release()
        return [*events, {"type": "done", "result": result, "content": result.content,
                          "state": result.state.value, "stopped_reason": result.stopped_reason}]

    def _drop_unanswered_task(self, ctx: RunContext) -> None:
        """A run cancelled before the model answered leaves its task unanswered at the end of
        the history; take it out, or the next run's model would see two tasks."""
        msgs = self.messages.get_messages()
        if ctx.resumed_from is None and msgs and msgs[-1] == {"role": "user", "content": ctx.task}:
            self.messages.restore(msgs[:-1])

    # -- results, events, errors ----------------------------------------------------------
    def _result(self, ctx: RunContext, state: RunState, reason: str) -> AgentResult:
        self.run_state = state
        result = AgentResult(
            content=ctx.content if state is RunState.FINISHED else (ctx.content or ctx.last_content),
            turns=ctx.turns, total_tokens=ctx.usage["total_tokens"],
            tool_calls_made=ctx.tool_calls_made, duration_ms=ctx.elapsed_ms(),
            stopped_reason=reason, state=state, run_id=ctx.run_id, errors=ctx.errors,
            usage=dict(ctx.usage), finish_reason=ctx.finish_reason, turn_log=ctx.turn_log,
            pending_approvals=list((ctx.held_turn or {}).get("pending", []))
            if state is RunState.PAUSED else [], cost_usd=spent_usd(self.llm, ctx))
        if ctx.turn_log and "end_ms" not in ctx.turn_log[-1]:
            ctx.turn_log[-1]["end_ms"] = result.duration_ms
        self.last_result = result
        return result

    def _save_last_run(self, ctx: RunContext, result: AgentResult) -> None:
        if self.state is not None:  # opt-in: keep the last result in the state store
            try:  # never the API key (a 401 body may echo it): agentlab.redaction
                key = client_api_key(self.llm)
                register_secret(key)
                self.state.save(LAST_RUN_KEY, redact(result.to_dict(), [key] if key else []))
            except Exception as exc:
                ctx.add_error(AgentError("state_save_failed", str(exc)))

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
  (``executor.execute(calls, timeout=remaining)``), so a slow tool cannot overshoot it.
* **Loops are stopped** (``agentlab.runtime.loop_guard``: repetition and A->B->A->B cycles,
  whatever the order of parallel calls), and the history left behind stays valid for the API:
  the stopped calls get "not executed" tool results, so a follow-up ``run()`` works.
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

The loop knows nothing of checkpoints or observers. They attach from outside through the seam
described in ``agentlab.runtime.context`` (hooks, a wrapped executor, the resume phase);
``checkpoints=`` and ``observer=`` are shortcuts for ``checkpoints.attach(runtime)`` and
``observer.attach(runtime)``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Iterator

from ..errors import AgentError, ConfigError
from ..executor import ToolExecutor
from ..messages import MessageManager
from ..models import DEFAULT_MODEL, require_prices
from ..redaction import client_api_key, redact, register_secret
from .approval import ApprovalExecutor, ApprovalSteps
from .cost import CostSteps
from .context import HOOK_EVENTS, LAST_RUN_KEY, STREAM_EVENTS, RunContext
from .hooks import Hook, Hooks
from .loop_guard import LoopDetector
from .protocols import LLM, Executor, Extension, Messages, Registry, StateStoreLike
from .steps import StopRun, TurnSteps
from .types import AgentResult, RunState, RuntimeConfig

__all__ = ["RunState", "RuntimeConfig", "AgentResult", "AgentRuntime", "HOOK_EVENTS",
           "STREAM_EVENTS"]

Resumer = Callable[[RunContext, str], None]


class AgentRuntime(TurnSteps, ApprovalSteps, CostSteps):
    """The agent loop (notebooks 06-08). See the module docstring for what it guarantees.

    The steps of a turn (model call, tool batch) are in ``TurnSteps`` (``steps.py``); holding
    a turn for a human's approval, ``approve`` and ``reject`` in ``ApprovalSteps`` (``approval.py``);
    the cost cap in ``CostSteps`` (``cost.py``).

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

    ``rt.context`` is the ``RunContext`` of the current (or last) run.
    """

    def __init__(self, llm: LLM, registry: Registry, system_prompt: str = "You are a helpful assistant.",
                 config: RuntimeConfig | None = None, *, messages: Messages | None = None,
                 state: StateStoreLike | None = None, checkpoints: Extension | None = None,
                 observer: Extension | None = None, executor: Executor | None = None) -> None:
        self.llm = llm
        self.registry = registry
        self.config = config or RuntimeConfig()
        if self.config.max_cost_usd is not None:  # a cap needs prices (chapter 13)
            require_prices(getattr(llm, "model", DEFAULT_MODEL))
        self.messages: Messages = messages if messages is not None else MessageManager(
            system_prompt=system_prompt, model=getattr(llm, "model", DEFAULT_MODEL))
        self.executor: Executor = ApprovalExecutor(executor if executor is not None else ToolExecutor(
            registry, default_timeout=self.config.tool_timeout, max_workers=self.config.max_workers),
            self)  # a call that needs approval never runs without it (chapter 13)
        self.state = state              # the article's name for the state store
        self.checkpoints = checkpoints  # chapter 11, attached below
        self.observer = observer        # chapter 12, attached below
        self.run_state = RunState.IDLE
        self.last_result: AgentResult | None = None
        self.context: RunContext | None = None
        self._hooks = Hooks()
        self._resume: Resumer | None = None
        self._cancel = threading.Event()
        self._busy = threading.Lock()
        for name, ext in (("observer", observer), ("checkpoints", checkpoints)):
            if ext is not None:  # the observer first, so it sees the checkpoint events in its run span
                if not callable(getattr(ext, "attach", None)):
                    raise ConfigError("invalid_config", f"{name}= needs an object with "
                                      f"attach(runtime), e.g. an AgentObserver or a CheckpointManager; "
                                      f"got {type(ext).__name__}")
                ext.attach(self)

    # -- public API ---------------------------------------------------------------------------
    def on(self, event: str, callback: Hook) -> Hook:
        """Call ``callback(event_dict)`` on ``event`` (one of ``HOOK_EVENTS``, a declared
        extension event, or ``"*"`` for all). Hooks run in the order they were added."""
        return self._hooks.on(event, callback)

    def declare_events(self, *kinds: str) -> None:
        """Let an extension announce events of its own with ``emit`` (``on`` accepts them)."""
        self._hooks.declare(*kinds)

    def emit(self, kind: str, **payload: Any) -> None:
        """Fire the hooks of a declared extension event (not streamed; never raises for a hook)."""
        self._hooks.emit(self.context, kind, **payload)

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
            if ctx.resumed_from is None:  # a resumed run has its history back already
                self.messages.append({"role": "user", "content": user_input})
            yield from self._event(ctx, "run_start", run_id=ctx.run_id, input=user_input,
                                   resumed_from=ctx.resumed_from, turn=ctx.turns)
            tools = self._offer_tools()  # once per run; the message budget counts them
            detector = LoopDetector(self.config.loop_detection_window,
                                    self.config.loop_detection_threshold)
            yield from self._finish_held_turn(ctx)  # a turn held for approval, decided since
            while True:
                self._check_budgets(ctx)  # safe point: before a model call
                self._check_cost(ctx, tools)
                turn = self._new_turn(ctx)
                yield from self._event(ctx, "turn_start", turn=ctx.turns)
                resp, content = yield from self._call_model(ctx, tools, stream, turn)
                yield from self._stop_if_refused(ctx, resp, content, turn)
                if not resp.tool_calls or self._cut_short(resp):  # the model is done (or was
                    # cut short: then none of its tool calls runs)
                    stop = self._finish_text(ctx, resp, content)  # the answer is appended
                    yield from self._end_turn(ctx, turn, tool_calls=0)
                    raise stop
                self._stop_if_incomplete(resp)
                asst = self._assistant_message(resp, content)
                self._stop_if_looping(ctx, detector, resp.tool_calls, asst)
                yield from self._hold_for_approval(ctx, resp.tool_calls, asst, turn)
                results = yield from self._run_tools(ctx, resp.tool_calls, asst, turn)
                yield from self._end_turn(ctx, turn, tool_calls=len(results))  # a safe point
        except StopRun as stop:
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

    def _start_run(self, task: str, resume_from: str | None) -> RunContext:
        """Reserve the runtime, make the run's context, and run the resume phase if asked."""
        if resume_from is not None and self._resume is None:
            raise ConfigError("not_supported", "resume_from needs something attached that can "
                              "resume a run, e.g. checkpoints= (chapter 11)")
        if not self._busy.acquire(blocking=False):
            raise ConfigError("already_running", "this runtime is already running; use one "
                              "AgentRuntime per concurrent run")
        ctx = RunContext.start(task, self.config.max_total_time)
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
            events = list(self._record(ctx, error)) if error is not None else []
            result = self._result(ctx, state, reason)
            events += self._event(ctx, "run_end", result=result)
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

    def _check_budgets(self, ctx: RunContext) -> None:
        if self._cancel.is_set():
            raise StopRun(RunState.CANCELLED, "cancelled")
        if ctx.remaining() <= 0:
            raise self._timeout(ctx)
        if ctx.turns >= self.config.max_turns:
            raise StopRun(RunState.EXHAUSTED, f"max_turns ({self.config.max_turns})", AgentError(
                "max_turns", f"the run used its {self.config.max_turns} model calls before the "
                "model answered; raise max_turns or narrow the task", retryable=True))

    def _new_turn(self, ctx: RunContext) -> dict:
        ctx.turns += 1
        turn = {"turn": ctx.turns, "start_ms": ctx.elapsed_ms(), "tool_calls": 0,
                "prompt_tokens": 0, "completion_tokens": 0}
        ctx.turn_log.append(turn)
        return turn

    def _end_turn(self, ctx: RunContext, turn: dict, tool_calls: int) -> Iterator[dict]:
        now = ctx.elapsed_ms()
        if tool_calls:  # a text turn ends when its answer is appended (_finish_text)
            turn["end_ms"] = now
        yield from self._event(ctx, "turn_end", turn=ctx.turns, tool_calls=tool_calls,
                               duration_ms=now - turn["start_ms"])

    # -- results, events, errors ----------------------------------------------------------
    def _result(self, ctx: RunContext, state: RunState, reason: str) -> AgentResult:
        self.run_state = state
        result = AgentResult(
            content=ctx.content if state is RunState.FINISHED else (ctx.content or ctx.last_content),
            turns=ctx.turns, total_tokens=ctx.usage["total_tokens"],
            tool_calls_made=ctx.tool_calls_made, duration_ms=ctx.elapsed_ms(),
            stopped_reason=reason, state=state, run_id=ctx.run_id, errors=ctx.errors,
            usage=dict(ctx.usage), finish_reason=ctx.finish_reason, turn_log=ctx.turn_log,
            pending_approvals=list(ctx.held_turn["pending"]) if state is RunState.PAUSED else [],
            cost_usd=self._spent_usd(ctx))
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

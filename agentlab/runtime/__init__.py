"""Chapters 06-08 — the agent runtime: the loop, the records of a run, the loop guard.

Taught in ``notebooks/06_runtime_loop.ipynb`` and ``notebooks/07_streaming.ipynb``:

- ``loop.py``: ``AgentRuntime``, the article's loop with terminal states, budgets and hooks;
- ``context.py``: ``RunContext`` and the hook events, the seam chapters 11-12 plug into;
- ``types.py``: ``RunState``, ``RuntimeConfig``, ``AgentResult``;
- ``protocols.py``: what the runtime needs from its collaborators (``LLM``, ``Executor``, ...);
- ``loop_guard.py``: ``LoopDetector`` (repetition and A->B->A->B cycles);
- ``cancel.py``: how ``cancel()`` interrupts a model call or a tool batch at once;
- ``approval.py`` (chapter 13): a turn held for a human's approval (``RunState.PAUSED``),
  ``approve``/``reject``, ``record_decision``;
- ``cost.py`` (chapter 13): the cost cap ``RuntimeConfig(max_cost_usd=...)``.
"""
from .approval import AWAITING_APPROVAL, ApprovalExecutor, record_decision
from .context import HOOK_EVENTS, LAST_RUN_KEY, STREAM_EVENTS, RunContext
from .loop import AgentRuntime
from .cost import COST_BUDGET
from .loop_guard import LoopDetector, call_signature, turn_signature
from .protocols import LLM, Executor, Extension, Messages, Registry, StateStoreLike
from .types import AgentResult, RunState, RuntimeConfig

__all__ = ["AgentRuntime", "RunState", "RuntimeConfig", "AgentResult", "RunContext",
           "HOOK_EVENTS", "STREAM_EVENTS", "LAST_RUN_KEY", "LoopDetector", "call_signature",
           "turn_signature", "LLM", "Registry", "Executor", "Messages", "StateStoreLike",
           "Extension", "record_decision", "ApprovalExecutor", "AWAITING_APPROVAL", "COST_BUDGET"]

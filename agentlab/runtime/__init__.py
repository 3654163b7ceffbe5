"""Chapters 06-08 — the agent runtime: the loop, the records of a run, the loop guard.

Taught in ``notebooks/06_runtime_loop.ipynb`` and ``notebooks/07_streaming.ipynb``:

- ``loop.py``: ``AgentRuntime``, the article's loop with terminal states, budgets and hooks;
- ``types.py``: ``RunState``, ``RuntimeConfig``, ``AgentResult``;
- ``loop_guard.py``: ``LoopDetector`` (repetition and A->B->A->B cycles).
"""
from .loop import HOOK_EVENTS, STREAM_EVENTS, AgentRuntime
from .loop_guard import LoopDetector, call_signature, turn_signature
from .types import AgentResult, RunState, RuntimeConfig

__all__ = ["AgentRuntime", "RunState", "RuntimeConfig", "AgentResult", "HOOK_EVENTS",
           "STREAM_EVENTS", "LoopDetector", "call_signature", "turn_signature"]

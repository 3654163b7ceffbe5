"""Chapters 06-08 — the agent runtime: the loop, its turn, its gates, the records of a run.

Taught in ``notebooks/06_runtime_loop.ipynb`` and ``notebooks/07_streaming.ipynb``:

- ``loop.py``: ``AgentRuntime``, the article's loop with terminal states, budgets and hooks;
- ``turn.py``: the steps of one turn (model call, streamed reply, tool batch) as functions;
- ``gates.py``: ``Gate``, ``Stop``, ``Pause``: how the budgets, the loop guard and any
  extension end a run or pause a turn (``add_gate``);
- ``context.py``: ``RunContext`` and the hook events, the seam later chapters plug into;
- ``types.py``: ``RunState``, ``RuntimeConfig``, ``AgentResult``;
- ``protocols.py``: what the runtime needs from its collaborators (``LLM``, ``Executor``, ...);
- ``loop_guard.py``: ``LoopDetector`` (repetition and A->B->A->B cycles);
- ``cancel.py``: how ``cancel()`` interrupts a model call at once;
- ``cost.py``: the cost cap ``RuntimeConfig(max_cost_usd=...)`` as a gate (taught in chapter 13).

Nothing here imports a later chapter (checked on the import graph by ``tests/test_import_graph.py``);
chapter 13's approval is ``agentlab.approval``, a gate attached from outside.
"""
from .context import HOOK_EVENTS, LAST_RUN_KEY, STREAM_EVENTS, RunContext
from .cost import COST_BUDGET, CostCap
from .gates import Gate, Pause, Stop
from .loop import AgentRuntime
from .loop_guard import LoopDetector, call_signature, turn_signature
from .protocols import LLM, Executor, Extension, Messages, Registry, StateStoreLike
from .types import AgentResult, RunState, RuntimeConfig

__all__ = ["AgentRuntime", "RunState", "RuntimeConfig", "AgentResult", "RunContext",
           "HOOK_EVENTS", "STREAM_EVENTS", "LAST_RUN_KEY", "LoopDetector", "call_signature",
           "turn_signature", "LLM", "Registry", "Executor", "Messages", "StateStoreLike",
           "Extension", "Gate", "Stop", "Pause", "CostCap", "COST_BUDGET"]

"""agentlab: build an LLM agent runtime from scratch, one chapter at a time.

The chapter classes are importable from here (``import agentlab as al; al.AgentRuntime``).
Importing ``agentlab`` does no work: each name is imported from its chapter module the first
time it is used, so ``import agentlab`` is fast and never touches the network.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

# name -> module that defines it (one module per chapter of the article)
_EXPORTS: dict[str, str] = {
    # errors
    "AgentError": "errors", "ProviderError": "errors", "ToolError": "errors",
    "ConfigError": "errors", "CheckpointError": "errors", "StateError": "errors",
    # 01 LLM client
    "LLMClient": "llm", "LLMResponse": "llm", "ToolCall": "llm",
    # 02-03 tools
    "ToolRegistry": "tools", "ToolExecutor": "executor", "ToolResult": "executor",
    # 04-05 messages and state
    "MessageManager": "messages", "StateStore": "state", "SQLiteStateStore": "state",
    "MemoryStateStore": "state",
    # 06-08 runtime
    "AgentRuntime": "runtime", "RuntimeConfig": "runtime", "AgentResult": "runtime",
    "RunState": "runtime",
    # 09-10 scheduling
    "AdaptiveTimeoutManager": "timeouts", "DependencyGraph": "dag",
    "DependencyAwareExecutor": "dag",
    # 11-12 durability and observability
    "CheckpointManager": "checkpoints", "AgentObserver": "observe", "RunReport": "observe",
    # 13 the fleet
    "RedisStateStore": "fleet",
    # the simulator
    "Simulator": "sim",
    # 14 experiments
    "Experiment": "experiments",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentlab' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"agentlab.{module}"), name)
    globals()[name] = value  # cache: the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_EXPORTS))

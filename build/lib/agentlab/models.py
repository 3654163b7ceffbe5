"""The models agentlab knows about, and the one it uses when none is named.

``DEFAULT_MODEL`` is the model every constructor defaults to (``LLMClient``, ``MessageManager``,
``AgentObserver``, ``Simulator.llm``); ``AGENTLAB_MODEL`` overrides it for ``LLMClient.from_env``.
"""
from __future__ import annotations

__all__ = ["DEFAULT_MODEL"]

#: The model used when none is given (an OpenAI model name; the simulator answers as it).
DEFAULT_MODEL = "gpt-4o"

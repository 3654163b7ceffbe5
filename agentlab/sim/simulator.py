"""``Simulator``: the simulated API plus the chapter-01 shortcut to an ``LLMClient`` on it.

The endpoint itself (requests, policies, faults, latency, strict checks) is ``SimulatedAPI`` in
``core.py``; this subclass only adds ``.llm()``. It lives in its own module because it needs
``agentlab.llm``, while ``agentlab.llm`` needs the endpoint for its offline default
(``LLMClient.from_env``): the two depend on ``core`` and never on each other in a circle.
"""
from __future__ import annotations

from typing import Any

from ..llm import LLMClient
from ..models import DEFAULT_MODEL
from .core import SimulatedAPI

__all__ = ["Simulator"]


class Simulator(SimulatedAPI):
    __doc__ = SimulatedAPI.__doc__

    def llm(self, model: str = DEFAULT_MODEL, **llm_kwargs: Any) -> LLMClient:
        """An ``agentlab.llm.LLMClient`` talking to this simulator (chapter 01)."""
        return LLMClient(model=model, client=self.client(), **llm_kwargs)

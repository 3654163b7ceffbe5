"""``Simulator``: the simulated API plus the chapter-01 shortcut to an ``LLMClient`` on it.

The endpoint itself (requests, policies, faults, latency, strict checks) is ``SimulatedAPI`` in
``core.py``, which chapter 01 does not need; this subclass adds ``.llm()``, the one place the
simulator depends on the client. The arrow points from ``agentlab.sim`` to ``agentlab.llm`` only:
``LLMClient.from_env`` reaches the simulator through the ``agentlab.offline_endpoints`` entry
point (``agentlab/llm/offline.py``), not an import.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import DEFAULT_MODEL
from .core import SimulatedAPI

if TYPE_CHECKING:
    from ..llm import LLMClient

__all__ = ["Simulator"]


class Simulator(SimulatedAPI):
    __doc__ = SimulatedAPI.__doc__

    def llm(self, model: str = DEFAULT_MODEL, **llm_kwargs: Any) -> "LLMClient":
        """An ``agentlab.llm.LLMClient`` talking to this simulator (chapter 01)."""
        from ..llm import LLMClient  # lazy: heavy (the client loads openai on first use)

        return LLMClient(model=model, client=self.client(), **llm_kwargs)

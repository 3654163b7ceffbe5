"""The endpoint ``LLMClient.from_env`` falls back to when the environment names none (notebook 00).

With no ``OPENAI_API_KEY`` and no ``OPENAI_BASE_URL`` the client talks to an offline endpoint
in-process: agentlab's simulator. Chapter 01 does not import the simulator to get it. The
simulator is built *on* the client (``Simulator.llm()`` returns an ``LLMClient``), so the arrow
points from ``agentlab.sim`` to ``agentlab.llm`` and never back; instead the simulator declares
itself in ``pyproject.toml`` under the entry-point group ``agentlab.offline_endpoints``, the way
chapter 13's Redis store declares itself for ``redis://`` URLs (``agentlab.checkpoints.store``).
Another package can declare its own endpoint there; ``register_offline_endpoint`` does the same
at run time (a test, a notebook). An endpoint is any object with ``.client() -> openai.OpenAI``.
"""
from __future__ import annotations

from importlib.metadata import distributions
from typing import Any, Callable

from ..errors import ConfigError

__all__ = ["OFFLINE_ENTRY_POINT", "offline_endpoint", "register_offline_endpoint"]

#: The entry-point group that names the offline endpoint (``sim = "agentlab.sim:SimulatedAPI"``).
OFFLINE_ENTRY_POINT = "agentlab.offline_endpoints"
_factory: list[Callable[[], Any]] = []  # the one registered or found, once looked up


def register_offline_endpoint(factory: Callable[[], Any]) -> None:
    """Make ``LLMClient.from_env()`` use ``factory()`` when the environment names no endpoint."""
    _factory[:] = [factory]


def offline_endpoint() -> Any:
    """A new instance of the offline endpoint: the registered one, else the first declared under
    ``OFFLINE_ENTRY_POINT`` (agentlab's ``SimulatedAPI`` with its default policy)."""
    if not _factory:
        # every installed distribution's declarations, not ``entry_points(group=)``: that one
        # keeps only the first copy of a distribution on sys.path, and a stale
        # ``agentlab.egg-info`` left in a checkout would hide the installed one's
        found = sorted((ep for dist in distributions() for ep in dist.entry_points
                        if ep.group == OFFLINE_ENTRY_POINT), key=lambda ep: ep.name != "sim")
        if not found:
            raise ConfigError("no_offline_endpoint", "no OPENAI_API_KEY or OPENAI_BASE_URL is set "
                              f"and no offline endpoint is declared under {OFFLINE_ENTRY_POINT!r}: "
                              "reinstall agentlab (pip install -e .), or pass "
                              "from_env(simulator=agentlab.sim.Simulator())")
        _factory.append(found[0].load())
    return _factory[0]()

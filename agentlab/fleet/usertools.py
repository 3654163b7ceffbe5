"""Your own tools on the fleet: a worker loads them by import string, a run names the ones it needs.

Taught in ``notebooks/13_fleet.ipynb``. By default a fleet run uses the research agent's tools
(``agentlab.research.research_tools``). A run submitted with ``tools="mypkg.tools:make_registry"``
(``agentlab submit --tools ...``) records that import string in its ``RunSpec``; a worker
started with the same string (``agentlab worker --tools mypkg.tools:make_registry``, i.e.
``AGENTLAB_FLEET_TOOLS``; several separated by commas) builds the run's ``ToolRegistry`` by
calling it:

- ``make_registry()`` or ``make_registry(output_dir)`` (a ``pathlib.Path``: the run's own folder
  for files) returns a ``ToolRegistry``. A side-effecting tool registered with
  ``side_effects=True`` and an ``idempotency_key`` parameter gets ``<run_id>:<call id>``, the
  same key on every attempt of the run.
- A worker imports its ``--tools`` at start-up and refuses to start (non-zero exit) when one
  cannot be imported, so a typo shows at once, not at the first run.
- A worker that does not offer a run's tools does not guess: the run ends ``error`` with code
  ``tools_missing``, naming the import string and how to start a worker that has it.
"""
from __future__ import annotations

import importlib
import inspect
import os
from pathlib import Path
from typing import Any, Callable

from ..errors import AgentError, ConfigError

__all__ = ["ENV", "offered_tools", "load_factory", "build_registry", "ToolsMissingError"]

#: The environment variable that lists the tool factories a worker offers.
ENV = "AGENTLAB_FLEET_TOOLS"


class ToolsMissingError(AgentError):
    """This worker does not offer the tools the run was submitted with."""

    def __init__(self, wanted: str, offered: list[str]) -> None:
        super().__init__("tools_missing", f"the run needs the tools {wanted!r}, which this worker "
                         f"does not offer ({', '.join(offered) or 'only the built-in research tools'}"
                         f"); start a worker with `agentlab worker --tools {wanted}` (its module on "
                         "the worker's PYTHONPATH) and submit the run again",
                         details={"tools": wanted, "offered": offered})


def offered_tools(env: dict | None = None) -> list[str]:
    """The import strings this worker offers (``AGENTLAB_FLEET_TOOLS``, comma-separated)."""
    text = (os.environ if env is None else env).get(ENV) or ""
    return [t.strip() for t in text.split(",") if t.strip()]


def load_factory(spec: str) -> Callable[..., Any]:
    """The callable named by ``"module:attribute"``; ``ConfigError`` saying what went wrong."""
    module_name, _, attr = str(spec).partition(":")
    if not module_name or not attr:
        raise ConfigError("invalid_config", f"tools {spec!r}: use MODULE:FUNCTION, e.g. "
                          "mypkg.tools:make_registry")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError("invalid_config", f"tools {spec!r}: cannot import {module_name!r} "
                          f"({exc}); is its folder on PYTHONPATH?") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError("invalid_config", f"tools {spec!r}: {module_name} has no callable "
                          f"{attr!r}")
    return factory


def build_registry(spec: str, output_dir: Path) -> Any:
    """The run's ``ToolRegistry`` from the factory ``spec`` (see the module docstring)."""
    factory = load_factory(spec)
    takes_folder = any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                       for p in inspect.signature(factory).parameters.values())
    registry = factory(output_dir) if takes_folder else factory()
    if not hasattr(registry, "get_all_schemas"):
        raise ConfigError("invalid_config", f"tools {spec!r} returned {type(registry).__name__}, "
                          "not a ToolRegistry")
    return registry

"""Your own tools on the fleet: an example module outside the package (chapter 13, README).

    PYTHONPATH=examples agentlab worker --tools fleet_tools:make_registry
    agentlab submit "Research asyncio" --tools fleet_tools:make_registry

``make_registry(output_dir)`` returns the research tools with a ``write_file`` of our own: a
side-effecting tool (``side_effects=True``) with an ``idempotency_key`` parameter, which the
fleet fills with ``<run_id>:<call id>``, the same on every attempt of the run. Each execution
appends ``<key> <file name>`` to ``$AGENTLAB_EXAMPLE_EFFECTS`` (default ``effects.txt`` in the
output folder), so the side effect can be counted outside agentlab.
"""
from __future__ import annotations

import os
from pathlib import Path

from agentlab.research import research_tools


def make_registry(output_dir: Path):
    registry = research_tools(output_dir, answers={"*": "Use your judgement."})
    write = registry.get_function("write_file")
    effects = Path(os.environ.get("AGENTLAB_EXAMPLE_EFFECTS") or Path(output_dir) / "effects.txt")

    def write_file(filename: str, content: str, idempotency_key: str = "") -> str:
        """Write a text file into the output folder.

        Args:
            filename: File name inside the output folder, e.g. 'report.md'.
            content: The text to write.
        """
        out = write(filename, content)
        effects.parent.mkdir(parents=True, exist_ok=True)
        with open(effects, "a") as fh:  # the side effect, counted by the tool itself
            fh.write(f"{idempotency_key} {filename}\n")
        return out

    registry.register(write_file, name="write_file", replace=True, side_effects=True)
    return registry

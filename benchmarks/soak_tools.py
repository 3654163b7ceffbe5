"""The soak's own tools: a module outside the package, as a user's would be (``--tools
soak_tools:make_registry``, with ``benchmarks/`` on the workers' PYTHONPATH).

The research tools, except that ``write_file`` and ``read_url`` are side-effecting: each
execution appends ``<idempotency key> <tool> <started> <ended>`` (wall-clock seconds) to
``$AGENTLAB_SOAK_EFFECTS`` once the tool's work is done, so ``fleet_soak.py`` counts the
executions outside the fleet's ledger and can tell whether one started after the call's result
had been recorded.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from agentlab.research import read_url as _read_url, research_tools


def _effect(key: str, tool: str, started: float) -> None:
    with open(Path(os.environ["AGENTLAB_SOAK_EFFECTS"]), "a") as fh:
        fh.write(f"{key} {tool} {started:.6f} {time.time():.6f}\n")


def make_registry(output_dir: Path):
    registry = research_tools(output_dir, answers={"*": "Use your judgement."})
    write = registry.get_function("write_file")

    def write_file(filename: str, content: str, idempotency_key: str = "") -> str:
        """Write a text file into the output folder.

        Args:
            filename: File name inside the output folder, e.g. 'report.md'.
            content: The text to write.
        """
        started = time.time()
        out = write(filename, content)
        _effect(idempotency_key, "write_file", started)
        return out

    def read_url(url: str, idempotency_key: str = "") -> str:
        """Read the text of a web page.

        Args:
            url: The page address, as returned by web_search.
        """
        started = time.time()
        out = _read_url(url)
        _effect(idempotency_key, "read_url", started)
        return out

    registry.register(write_file, name="write_file", replace=True, side_effects=True)
    registry.register(read_url, name="read_url", replace=True, side_effects=True)
    return registry

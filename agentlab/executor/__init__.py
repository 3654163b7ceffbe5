"""Chapter 03 — the tool executor: run the model's calls with enforced timeouts.

Taught in ``notebooks/03_tool_executor.ipynb``. Seven files, read in this order:

- ``executor.py``: ``ToolExecutor``, the batch loop (serial and parallel), timeouts, the
  error contract;
- ``preflight.py``: what is checked before a call starts, and the time it is given;
- ``calls.py``: one call's book-keeping, its own time limit, reporting to a timeout manager;
- ``results.py``: ``ToolResult``, ``to_text`` and the error codes, a result made text inside
  its own boundary, ``not_run`` (the one text for a call that did not run);
- ``batch.py``: ``ToolBatch``, a turn's calls with the options that travel through every
  executor wrapper (deadline, cancel, result callback, key prefix, approvals), and
  ``run_batch`` for executors that only have ``execute``/``execute_parallel``;
- ``aio.py``: the event loop that runs ``async def`` tools (and cancels them on timeout);
- ``threads.py``: worker threads for sync tools and the process-wide cap on abandoned ones.
"""
from .batch import ToolBatch, run_batch
from .executor import ToolExecutor
from .results import ToolResult, not_run, render_result, safe_str, to_text
from .threads import (DEFAULT_ABANDONED_LIMIT, abandoned_calls, abandoned_limit,
                      abandoned_threads, set_abandoned_limit)

__all__ = ["ToolExecutor", "ToolResult", "ToolBatch", "run_batch", "not_run", "to_text",
           "render_result", "safe_str",
           "abandoned_threads", "abandoned_calls", "abandoned_limit", "set_abandoned_limit",
           "DEFAULT_ABANDONED_LIMIT"]

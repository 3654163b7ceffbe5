"""A naive tool executor written the way the article's step 3 writes it, defects included.

Used by ``notebooks/03_tool_executor.ipynb`` and ``benchmarks/bench_executor.py`` to measure
against ``agentlab.executor.ToolExecutor``. What goes wrong here, on purpose:

* ``execute_parallel`` waits inside ``with ThreadPoolExecutor(...)``: leaving the block calls
  ``shutdown(wait=True)``, which joins every worker, so one hung tool holds the whole batch
  for as long as it hangs, whatever the timeout says;
* the futures are read one by one with ``result(timeout)``: each wait gets a fresh timeout,
  so several slow calls add their timeouts up instead of sharing one deadline;
* ``execute`` (serial) has no timeout at all;
* arguments go straight into ``func(**arguments)``: no validation, a wrong type surfaces as
  whatever the tool happens to raise; results have no error code.

Do not use this in real code.
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

__all__ = ["NaiveToolResult", "NaiveToolExecutor"]


@dataclass
class NaiveToolResult:
    tool_call_id: str
    name: str
    result: str
    success: bool
    duration_ms: float = 0.0


class NaiveToolExecutor:
    def __init__(self, registry, default_timeout=30.0, max_workers=4):
        self.registry = registry
        self.default_timeout = default_timeout
        self.max_workers = max_workers

    def execute(self, tool_calls):
        return [self._run_one(tc) for tc in tool_calls]

    def execute_parallel(self, tool_calls):
        if len(tool_calls) <= 1:
            return self.execute(tool_calls)
        results = []
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            futures = [(pool.submit(self._run_one, tc), tc) for tc in tool_calls]
            for fut, tc in futures:
                try:
                    results.append(fut.result(timeout=self.default_timeout))
                except FutureTimeout:
                    results.append(NaiveToolResult(
                        tc.id, tc.name, f"Error: {tc.name} timed out after "
                        f"{self.default_timeout}s", False))
        return results  # only reached once every worker thread has finished

    def _run_one(self, tc):
        start = time.monotonic()
        func = self.registry.get_function(tc.name)
        if func is None:
            return NaiveToolResult(tc.id, tc.name, f"Error: unknown tool {tc.name}. "
                                   f"Available: {self.registry.list_tools()}", False)
        try:
            out = func(**tc.arguments)
            if not isinstance(out, str):
                out = json.dumps(out, ensure_ascii=False, default=str)
            return NaiveToolResult(tc.id, tc.name, out, True, (time.monotonic() - start) * 1000)
        except Exception as exc:
            return NaiveToolResult(tc.id, tc.name, f"Error: {type(exc).__name__}: {exc}", False,
                                   (time.monotonic() - start) * 1000)

    @staticmethod
    def results_to_messages(results):
        return [{"role": "tool", "tool_call_id": r.tool_call_id, "content": r.result}
                for r in results]

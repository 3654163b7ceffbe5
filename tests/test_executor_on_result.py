"""ToolExecutor(on_result=...): each result is reported the moment it is known, so a durable
log (chapter 11) holds a finished call even while a slower one of its batch still runs."""
import threading
import time

from agentlab.executor import ToolExecutor
from agentlab.llm import ToolCall
from agentlab.tools import ToolRegistry


def _registry(gate: threading.Event) -> ToolRegistry:
    reg = ToolRegistry()

    @reg.tool()
    def quick(n: int) -> str:
        """Answer at once.

        Args:
            n: a number.
        """
        return f"quick {n}"

    @reg.tool()
    def waits(n: int) -> str:
        """Answer when the test opens the gate.

        Args:
            n: a number.
        """
        gate.wait(5)
        return f"waits {n}"
    return reg


def test_on_result_hears_each_result_as_it_completes_and_a_failing_listener_loses_nothing():
    gate = threading.Event()
    seen: list[tuple[str, bool]] = []

    def listener(result):
        seen.append((result.name, gate.is_set()))
        if result.name == "quick":
            threading.Timer(0.05, gate.set).start()
            raise RuntimeError("listener bug")

    ex = ToolExecutor(_registry(gate), default_timeout=5)
    calls = [ToolCall(id="c1", name="waits", arguments={"n": 1}),
             ToolCall(id="c2", name="quick", arguments={"n": 2}),
             ToolCall(id="c3", name="nope", arguments={})]
    t0 = time.monotonic()
    results = ex.execute_parallel(calls, on_result=listener)
    assert time.monotonic() - t0 < 3
    assert [r.tool_call_id for r in results] == ["c1", "c2", "c3"] and type(results) is list
    assert results[0].success and results[1].success and results[2].error_code == "tool_not_found"
    # quick was heard before the gate opened, i.e. while waits was still running
    assert ("quick", False) in seen and ("waits", True) in seen and len(seen) == 3

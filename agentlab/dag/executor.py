"""``DependencyAwareExecutor``: run a batch as a DAG (chapter 10, ``notebooks/10_dag_execution``).

A call starts the moment its own dependencies have finished, on a bounded pool; every call goes
through ``ToolExecutor.execute([call])``, so learned timeouts are enforced and fed back.
"""
from __future__ import annotations

import inspect
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import replace
from typing import Any

from ..errors import AgentError, ConfigError
from ..executor import ToolExecutor, ToolResult
from ..knobs import positive_int, positive_number
from .graph import DependencyGraph, build_graph
from .schedule import Plan, Schedule, ScheduledCall

__all__ = ["DependencyAwareExecutor"]


class DependencyAwareExecutor:
    """Runs tool calls as soon as their own dependencies finish (see the module docstring).

    Args:
        registry: the ``ToolRegistry`` holding the tools.
        timeout_manager: an ``AdaptiveTimeoutManager``; its timeouts are enforced and fed.
        max_workers: calls running at the same time.
        default_timeout: seconds, when there is no manager and no per-tool timeout.
        strategy: ``"ready"`` (default) or ``"levels"`` (barrier per level, for comparison).
        priority: order among ready calls, ``"critical_path"`` (default) or ``"fifo"``.
        executor: a ``ToolExecutor`` to use instead of building one.
        inputs_param: name of the parameter through which dependency outputs are passed.
    """

    def __init__(self, registry: Any, timeout_manager: Any = None, max_workers: int = 8, *,
                 default_timeout: float = 30.0, strategy: str = "ready",
                 priority: str = "critical_path", executor: Any = None,
                 inputs_param: str = "dependency_results") -> None:
        max_workers = positive_int("max_workers", max_workers)
        default_timeout = positive_number("default_timeout", default_timeout)
        if strategy not in ("ready", "levels") or priority not in ("critical_path", "fifo"):
            raise ConfigError("invalid_config", "need strategy 'ready' or 'levels' and priority "
                              f"'critical_path' or 'fifo', got {strategy!r}, {priority!r}")
        if executor is None:
            executor = ToolExecutor(registry, default_timeout=default_timeout,
                                    max_workers=max_workers, timeout_manager=timeout_manager)
        self.registry, self.timeout_manager, self.max_workers = registry, timeout_manager, max_workers
        self.strategy, self.priority, self.executor = strategy, priority, executor
        self.inputs_param = inputs_param
        self.last_schedule: Schedule | None = None

    def execute_with_dependencies(self, tool_calls: list, dependencies: dict[str, list[str]]
                                  | None = None, *, timeout: float | None = None) -> list:
        """Run ``tool_calls``; ``dependencies`` maps a call id to the call ids it needs first.

        Returns one ``ToolResult`` per call, in call order. Raises ``AgentError`` before running
        anything for a cycle (``cycle_detected``), an unknown id (``unknown_dependency``) or a
        repeated call id (``duplicate_call_id``). ``timeout`` bounds every call (seconds).
        """
        timeout = positive_number("timeout", timeout, allow_none=True)
        calls = {c.id: c for c in tool_calls}
        if len(calls) != len(tool_calls):
            dup = next(c.id for i, c in enumerate(tool_calls) if c.id in
                       {d.id for d in tool_calls[:i]})
            raise AgentError("duplicate_call_id", f"call id {dup!r} appears twice in the batch")
        graph = build_graph(list(calls), dependencies)
        plan = Plan(graph, self.strategy, self.priority, self._estimates(tool_calls))
        results: dict[str, Any] = {}
        sched = Schedule(self.strategy, self.max_workers)
        t0 = time.perf_counter()

        def run(call: Any) -> tuple[Any, float, float, int]:
            worker = int(threading.current_thread().name.rsplit("_", 1)[-1] or 0)
            start = time.perf_counter()
            try:
                res = self.executor.execute([call], timeout=timeout)[0]
            except Exception as exc:  # the executor should not raise; never lose a result
                res = ToolResult(call.id, call.name, f"Error: {type(exc).__name__}: {exc}",
                                 False, 0.0, "tool_failed")
            return res, start, time.perf_counter(), worker

        roots: dict[str, str] = {}   # skipped call -> the call whose own failure started it

        def skip(doomed: list[tuple[str, str]]) -> None:
            for cid, dep in doomed:  # 3. dependents of a failure: a result, never a run
                c, d = calls[cid], results[dep]
                root = roots[cid] = roots.get(dep, dep)
                cause = "" if root == dep else (f"; it was skipped because call {root!r} "
                                                f"({calls[root].name}) failed "
                                                f"({results[root].error_code or 'failed'})")
                results[cid] = ToolResult(
                    cid, c.name, f"Error: not run because call {dep!r} ({calls[dep].name}), "
                    f"which it depends on, did not succeed ({d.error_code or 'failed'}{cause}). "
                    f"Fix or retry {root!r} first.", False, 0.0, "dependency_failed")
                now = (time.perf_counter() - t0) * 1000
                sched.calls.append(ScheduledCall(cid, c.name, now, now, "skipped"))

        pool = ThreadPoolExecutor(max_workers=min(self.max_workers, max(1, len(calls))),
                                  thread_name_prefix="agentlab-dag")
        running: dict[Any, str] = {}
        try:
            while plan.ready or running:
                # 1. fill free workers from the ready queue
                while plan.ready and len(running) < self.max_workers:
                    cid = plan.pop()
                    running[pool.submit(run, self._with_inputs(calls[cid], graph, results))] = cid
                # 2. block until some call finishes (no spin), then release its dependents
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    cid = running.pop(fut)
                    res, start, end, worker = fut.result()
                    results[cid] = res
                    sched.calls.append(ScheduledCall(
                        cid, res.name, (start - t0) * 1000, (end - t0) * 1000,
                        "ok" if res.success else "failed", worker))
                    skip(plan.finish(cid, bool(res.success)))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        self.last_schedule = sched
        return [results[c.id] for c in tool_calls]

    def _estimates(self, tool_calls: list) -> dict[str, float]:
        """Expected duration (ms) per call for the priority: the tool's p50, else 1."""
        out, get_stats = {}, getattr(self.timeout_manager, "get_stats", None)
        for c in tool_calls:
            stats = get_stats(c.name) if get_stats is not None else None
            out[c.id] = max(stats.p50, 1e-3) if stats is not None else 1.0
        return out

    def _with_inputs(self, call: Any, graph: DependencyGraph, results: dict) -> Any:
        """Hand dependency outputs to a tool that declares ``inputs_param`` (else unchanged)."""
        deps = graph.edges[call.id]
        if not deps or self.inputs_param in call.arguments or not self._declares(call.name):
            return call
        inputs = {d: results[d].result for d in deps}
        return replace(call, arguments={**call.arguments, self.inputs_param: inputs})

    def _declares(self, tool_name: str) -> bool:
        try:
            fn = self.registry.get_function(tool_name)
            return fn is not None and self.inputs_param in inspect.signature(fn).parameters
        except Exception:  # unknown tool or no signature: the executor reports it
            return False

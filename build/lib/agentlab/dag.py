"""Dependency-aware tool execution: a DAG of calls run at the pace of its critical path.

Taught in ``notebooks/10_dag_execution.ipynb`` (article section 8).

``DependencyGraph`` holds "call X depends on calls Y, Z". ``topological_sort`` returns levels
with dependencies first (Kahn's algorithm: a node joins a level when its last dependency is
placed), ``detect_cycles`` returns a cycle's path (``["a", "b", "a"]``: a waits for b waits
for a) and a dependency on an id that is not in the graph is an ``unknown_dependency`` error.

``DependencyAwareExecutor`` runs a batch of ``ToolCall``s with a **ready queue**: a call is
started the moment its own dependencies have finished, on a bounded pool; the scheduler thread
blocks on "some call finished" (no spin-waiting), and a call only ever occupies a worker while
it runs (so any ``max_workers``, including 1, makes progress). Level-by-level execution, where
a whole level waits for its slowest member, is kept as ``strategy="levels"`` for comparison.
Among ready calls the one with the longest chain of work still behind it goes first
(``priority="critical_path"``, estimated from the timeout manager's p50 when it has one).

Every call goes through ``agentlab.executor.ToolExecutor.execute([call])``, so the timeout
learned by the ``AdaptiveTimeoutManager`` is enforced and every outcome is fed back to it.
A call whose dependency failed or timed out is not run: it gets ``error_code="dependency_failed"``
with a message naming that dependency, and so do its own dependents (transitively).

Dependency outputs reach a tool only through a parameter it declares: when the tool function
has a parameter named ``dependency_results`` (configurable), a dependent's arguments get
``{dependency_call_id: result_text}`` there. Nothing is kept between batches except
``last_schedule`` (start/end of every call of the last batch, for Gantt charts).
"""
from __future__ import annotations

import heapq
import inspect
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .errors import AgentError

__all__ = ["DependencyGraph", "DependencyAwareExecutor", "ScheduledCall", "Schedule",
           "critical_path", "simulate_schedule"]


class DependencyGraph:
    """Tool calls (vertices) and what each depends on (edges), in insertion order."""

    def __init__(self) -> None:
        self.edges: dict[str, list[str]] = {}      # tool_id -> its dependencies
        self.metadata: dict[str, dict] = {}

    def add_tool(self, tool_id: str, depends_on: Iterable[str] | None = None, **meta: Any) -> None:
        """Add ``tool_id`` (or add dependencies to it). Dependencies may be added later."""
        deps = self.edges.setdefault(tool_id, [])
        for dep in depends_on or ():
            if dep not in deps:
                deps.append(dep)
        self.metadata.setdefault(tool_id, {}).update(meta)

    @property
    def vertices(self) -> list[str]:
        return list(self.edges)

    def dependents(self) -> dict[str, list[str]]:
        """The reverse edges: ``{tool_id: [calls that depend on it]}``."""
        out: dict[str, list[str]] = {v: [] for v in self.edges}
        for v, deps in self.edges.items():
            for d in deps:
                out.setdefault(d, []).append(v)
        return out

    def check_known(self) -> None:
        """Raise ``unknown_dependency`` if some edge points at an id that was never added."""
        for v, deps in self.edges.items():
            missing = [d for d in deps if d not in self.edges]
            if missing:
                raise AgentError("unknown_dependency",
                                 f"call {v!r} depends on {missing[0]!r}, which is not in this "
                                 f"batch (known ids: {', '.join(map(repr, self.edges))})",
                                 details={"tool_id": v, "unknown": missing})

    def detect_cycles(self) -> list[str] | None:
        """A cycle as a closed path ``[a, b, ..., a]`` (each waits for the next), or None.

        Iterative depth-first search with three colours (so a long chain cannot hit the
        recursion limit); unknown dependencies are ignored here.
        """
        WHITE, GREY, BLACK = 0, 1, 2
        colour = dict.fromkeys(self.edges, WHITE)
        for root in self.edges:
            if colour[root] != WHITE:
                continue
            path, stack = [root], [iter(self.edges[root])]
            colour[root] = GREY
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:                       # all dependencies of path[-1] done
                    colour[path.pop()] = BLACK
                    stack.pop()
                elif colour.get(nxt, BLACK) == GREY:  # back edge: nxt is on the path
                    return path[path.index(nxt):] + [nxt]
                elif colour.get(nxt, BLACK) == WHITE:
                    colour[nxt] = GREY
                    path.append(nxt)
                    stack.append(iter(self.edges[nxt]))
        return None

    def raise_if_cyclic(self) -> None:
        cycle = self.detect_cycles()
        if cycle:
            raise AgentError("cycle_detected",
                             "tool dependencies form a cycle: " + " -> ".join(cycle)
                             + " (each waits for the next); remove one of these dependencies",
                             details={"cycle": cycle})

    def topological_sort(self) -> list[list[str]]:
        """Levels in execution order, dependencies first (Kahn's algorithm).

        Level 0 holds calls with no dependencies; a call is in level k+1 when its last
        dependency is in level k. Raises ``AgentError`` (``cycle_detected`` naming the path,
        or ``unknown_dependency``).
        """
        self.check_known()
        waiting = {v: len(deps) for v, deps in self.edges.items()}   # in-degree
        dependents = self.dependents()
        order = {v: i for i, v in enumerate(self.edges)}
        level = [v for v, n in waiting.items() if n == 0]
        levels, placed = [], 0
        while level:
            levels.append(level)
            placed += len(level)
            nxt = []
            for v in level:
                for w in dependents[v]:
                    waiting[w] -= 1
                    if waiting[w] == 0:
                        nxt.append(w)
            level = sorted(nxt, key=order.__getitem__)
        if placed < len(self.edges):                  # what is left sits on a cycle
            self.raise_if_cyclic()
        return levels


def critical_path(durations: dict[str, float], dependencies: dict[str, list[str]]
                  ) -> tuple[float, list[str]]:
    """The longest chain of dependent work: ``(total duration, [ids from first to last])``.

    With unlimited workers no schedule can finish sooner; it is the bar for makespans.
    """
    graph = _graph(list(durations), dependencies)
    finish: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for level in graph.topological_sort():
        for v in level:
            best = max(graph.edges[v], key=finish.__getitem__, default=None)
            finish[v] = durations[v] + (finish[best] if best else 0.0)
            via[v] = best
    end = max(finish, key=finish.__getitem__, default=None)
    path = []
    while end is not None:
        path.append(end)
        end = via[end]
    return (finish[path[0]] if path else 0.0), path[::-1]


def _graph(ids: list[str], dependencies: dict[str, list[str]] | None) -> DependencyGraph:
    graph = DependencyGraph()
    for cid in ids:
        graph.add_tool(cid, (dependencies or {}).get(cid))
    unknown = [k for k in (dependencies or {}) if k not in graph.edges]
    if unknown:
        raise AgentError("unknown_dependency", f"dependencies name call {unknown[0]!r}, "
                         "which is not in this batch", details={"unknown": unknown})
    graph.check_known()
    return graph


@dataclass
class ScheduledCall:
    """When one call ran, in ms since the batch started; status ok/failed/skipped."""

    call_id: str
    name: str
    start_ms: float
    end_ms: float
    status: str
    worker: int | None = None


@dataclass
class Schedule:
    """Every call of a batch with its start and end (for Gantt charts)."""

    strategy: str
    max_workers: int
    calls: list[ScheduledCall] = field(default_factory=list)

    @property
    def makespan_ms(self) -> float:
        return max((c.end_ms for c in self.calls), default=0.0)


class _Plan:
    """Bookkeeping shared by the real executor and the simulator: who waits for whom."""

    def __init__(self, graph: DependencyGraph, strategy: str, priority: str,
                 estimate: dict[str, float]) -> None:
        if strategy not in ("ready", "levels"):
            raise ValueError("strategy must be 'ready' or 'levels'")
        if priority not in ("critical_path", "fifo"):
            raise ValueError("priority must be 'critical_path' or 'fifo'")
        levels = graph.topological_sort()              # raises on cycles / unknown ids
        self.deps = {v: set(d) for v, d in graph.edges.items()}
        self.wait_for = {v: set(d) for v, d in graph.edges.items()}
        if strategy == "levels":                       # a barrier: wait for the whole level above
            for above, below in zip(levels, levels[1:]):
                for v in below:
                    self.wait_for[v] |= set(above)
        self.waiters: dict[str, list[str]] = {v: [] for v in graph.edges}
        for v, ws in self.wait_for.items():
            for d in ws:
                self.waiters[d].append(v)
        index = {v: i for i, v in enumerate(graph.edges)}
        dependents = graph.dependents()
        rank: dict[str, float] = {}                    # work still ahead, this call included
        for level in reversed(levels):
            for v in level:
                rank[v] = estimate.get(v, 1.0) + max(
                    (rank[w] for w in dependents[v]), default=0.0)
        self._key = ((lambda v, seq: (-rank[v], index[v])) if priority == "critical_path"
                     else (lambda v, seq: (seq, index[v])))
        self._seq = 0
        self.ready: list = []
        self.done: dict[str, bool] = {}
        self.failed_root: dict[str, str] = {}
        for v in graph.edges:
            if not self.wait_for[v]:
                self._push(v)

    def _push(self, v: str) -> None:
        self._seq += 1
        heapq.heappush(self.ready, (self._key(v, self._seq), v))

    def pop(self) -> str:
        return heapq.heappop(self.ready)[1]

    def finish(self, cid: str, ok: bool) -> list[tuple[str, str]]:
        """Mark ``cid`` done; returns ``[(call, failed dependency)]`` doomed by it, transitively."""
        doomed, stack = [], [(cid, ok)]
        while stack:
            v, v_ok = stack.pop()
            self.done[v] = v_ok
            for w in self.waiters[v]:
                if w in self.done:
                    continue
                self.wait_for[w].discard(v)
                if not v_ok and v in self.deps[w]:     # a real dependency failed: skip w now
                    self.done[w] = False
                    doomed.append((w, v))
                    stack.append((w, False))
                elif not self.wait_for[w]:
                    self._push(w)
        return doomed


def simulate_schedule(durations: dict[str, float], dependencies: dict[str, list[str]] | None,
                      max_workers: int, strategy: str = "ready",
                      priority: str = "critical_path") -> Schedule:
    """The schedule the executor would produce if each call took exactly ``durations[id]`` ms.

    A discrete-event simulation (no sleeping), used by the benchmark on large random DAGs.
    """
    graph = _graph(list(durations), dependencies)
    plan = _Plan(graph, strategy, priority, durations)
    sched, now, running = Schedule(strategy, max_workers), 0.0, []
    free = list(range(max_workers))                    # worker lanes, lowest first
    while plan.ready or running:
        while plan.ready and len(running) < max_workers:
            v, lane = plan.pop(), heapq.heappop(free)
            heapq.heappush(running, (now + durations[v], v, lane))
            sched.calls.append(ScheduledCall(v, v, now, now + durations[v], "ok", lane))
        now, v, lane = heapq.heappop(running)
        heapq.heappush(free, lane)
        plan.finish(v, True)
    return sched


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
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        if executor is None:
            from .executor import ToolExecutor
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
        from .executor import ToolResult
        calls = {c.id: c for c in tool_calls}
        if len(calls) != len(tool_calls):
            dup = next(c.id for i, c in enumerate(tool_calls) if c.id in
                       {d.id for d in tool_calls[:i]})
            raise AgentError("duplicate_call_id", f"call id {dup!r} appears twice in the batch")
        graph = _graph(list(calls), dependencies)
        plan = _Plan(graph, self.strategy, self.priority, self._estimates(tool_calls))
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

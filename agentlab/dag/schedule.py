"""The ready queue of a batch and its simulation (chapter 10, ``notebooks/10_dag_execution``).

``Plan`` is the bookkeeping shared by ``DependencyAwareExecutor`` and ``simulate_schedule``: who
waits for whom, which calls are ready (ordered by the work still behind them), and which are
doomed by a failed dependency.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from ..errors import ConfigError
from ..knobs import positive_int
from .graph import DependencyGraph, build_graph

__all__ = ["ScheduledCall", "Schedule", "Plan", "simulate_schedule"]


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


class Plan:
    """Bookkeeping shared by the real executor and the simulator: who waits for whom."""

    def __init__(self, graph: DependencyGraph, strategy: str, priority: str,
                 estimate: dict[str, float]) -> None:
        if strategy not in ("ready", "levels"):
            raise ConfigError("invalid_config", "strategy must be 'ready' or 'levels'")
        if priority not in ("critical_path", "fifo"):
            raise ConfigError("invalid_config", "priority must be 'critical_path' or 'fifo'")
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
    graph = build_graph(list(durations), dependencies)
    plan = Plan(graph, strategy, priority, durations)
    max_workers = positive_int("max_workers", max_workers)
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

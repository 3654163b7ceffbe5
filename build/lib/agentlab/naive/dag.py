"""Naive dependency-aware execution in the article's style, defects kept (chapter 10 pitfall).

Compare with ``agentlab.dag``. What goes wrong here:

1. Kahn's algorithm counts in-degrees along "depends on" edges, i.e. it counts *dependents*:
   the levels come out reversed (the final summary first, the search last).
2. Each worker spin-waits (``sleep(0.01)`` in a loop) inside the pool for its dependencies.
   With the level barrier of the article, level 0 waits for calls that are only submitted
   after level 0 finishes: it hangs at any ``max_workers``. Without the barrier
   (``barrier=False``) it works only while there are more workers than waiting calls.
3. Cycle detection returns just two nodes; unknown dependencies are dropped from the graph
   but still waited for; results are kept on the executor between batches.

``run_with_watchdog`` runs any of this in a thread with a deadline, so a notebook cannot hang;
``stop`` (an Event) makes the spinning workers give up after the demonstration.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Callable

__all__ = ["NaiveDependencyGraph", "NaiveDependencyExecutor", "run_with_watchdog"]


class NaiveDependencyGraph:
    """Edges ``tool -> its dependencies``; levels by a Kahn loop over the wrong direction."""

    def __init__(self) -> None:
        self.edges: dict[str, set[str]] = defaultdict(set)
        self.vertices: list[str] = []

    def add_tool(self, tool_id: str, depends_on: list[str] | None = None) -> None:
        self.vertices.append(tool_id)
        self.edges[tool_id].update(depends_on or [])

    def detect_cycles(self) -> list[str] | None:
        seen, on_path, found = set(), set(), []

        def dfs(v: str) -> None:
            seen.add(v)
            on_path.add(v)
            for w in sorted(self.edges[v]):
                if w not in seen:
                    dfs(w)
                elif w in on_path:
                    found[:] = [v, w]                # defect 3: only one edge of the cycle
            on_path.discard(v)

        for v in self.vertices:
            if v not in seen:
                dfs(v)
        return found or None

    def topological_sort(self) -> list[list[str]] | None:
        if self.detect_cycles():
            return None
        indeg = {v: 0 for v in self.vertices}
        for u in self.vertices:
            for d in sorted(self.edges[u]):
                indeg[d] += 1                        # defect 1: counts dependents, not deps
        levels, level = [], [v for v in self.vertices if indeg[v] == 0]
        while level:
            levels.append(level)
            nxt = []
            for u in level:
                for d in sorted(self.edges[u]):
                    indeg[d] -= 1
                    if indeg[d] == 0:
                        nxt.append(d)
            level = nxt
        return levels


class NaiveDependencyExecutor:
    """Level by level on a pool, each worker spin-waiting for its dependencies."""

    def __init__(self, registry, max_workers: int = 8, *, barrier: bool = True,
                 stop: threading.Event | None = None) -> None:
        self.registry = registry
        self.max_workers = max_workers
        self.barrier = barrier
        self.stop = stop or threading.Event()
        self._results: dict[str, dict] = {}          # defect 3: survives between batches
        self.log: list[tuple[str, str, float]] = []  # (event, call id, seconds since start)
        self._t0 = time.perf_counter()

    def execute_with_dependencies(self, tool_calls: list, dependencies: dict) -> list[dict]:
        self._t0 = time.perf_counter()
        graph = NaiveDependencyGraph()
        ids = {tc.id for tc in tool_calls}
        for tc in tool_calls:
            graph.add_tool(tc.id, [d for d in dependencies.get(tc.id, []) if d in ids])
        levels = graph.topological_sort()
        if levels is None:
            raise ValueError(f"Circular dependency: {graph.detect_cycles()}")
        by_id = {tc.id: tc for tc in tool_calls}
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            pending = []
            for level in levels:
                futures = {pool.submit(self._run, by_id[c], dependencies): c for c in level}
                pending.extend(futures)
                if self.barrier:                     # wait for this level before the next
                    for fut in as_completed(futures):
                        self._results[futures[fut]] = fut.result()
            for fut in as_completed(pending):
                fut.result()
        return [self._results.get(tc.id, {"success": False, "error": "no result"})
                for tc in tool_calls]

    def _run(self, tc: Any, dependencies: dict) -> dict:
        self.log.append(("wait", tc.id, time.perf_counter() - self._t0))
        for dep in dependencies.get(tc.id, []):
            while dep not in self._results:          # defect 2: a worker held while spinning
                if self.stop.is_set():
                    return {"success": False, "error": f"gave up waiting for {dep}"}
                time.sleep(0.01)
        self.log.append(("start", tc.id, time.perf_counter() - self._t0))
        try:
            out = {"success": True, "result": self.registry.get_function(tc.name)(**tc.arguments)}
        except Exception as exc:
            out = {"success": False, "error": str(exc)}
        self._results[tc.id] = out
        self.log.append(("end", tc.id, time.perf_counter() - self._t0))
        return out


def run_with_watchdog(fn: Callable[[], Any], deadline_s: float,
                      stop: threading.Event | None = None) -> dict:
    """Run ``fn()`` in a daemon thread; give up after ``deadline_s`` seconds.

    Returns ``{"finished": bool, "elapsed_s": float, "value": ..., "error": ...}``. When the
    deadline passes, ``stop`` is set so cooperative code (the spinning workers) can exit.
    """
    box: dict[str, Any] = {"value": None, "error": None}

    def target() -> None:
        try:
            box["value"] = fn()
        except Exception as exc:
            box["error"] = exc

    t0 = time.perf_counter()
    thread = threading.Thread(target=target, daemon=True, name="watchdog-target")
    thread.start()
    thread.join(deadline_s)
    finished = not thread.is_alive()
    if not finished and stop is not None:
        stop.set()
    return {"finished": finished, "elapsed_s": time.perf_counter() - t0,
            "value": box["value"], "error": box["error"], "thread": thread}

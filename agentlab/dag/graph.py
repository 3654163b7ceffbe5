"""The DAG of one batch of tool calls (chapter 10, ``notebooks/10_dag_execution.ipynb``).

``DependencyGraph`` holds "call X depends on calls Y, Z"; ``topological_sort`` returns levels with
dependencies first (Kahn's algorithm) and ``detect_cycles`` a cycle's path.
"""
from __future__ import annotations

from typing import Any, Iterable

from ..errors import AgentError

__all__ = ["DependencyGraph", "critical_path", "build_graph"]


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
    graph = build_graph(list(durations), dependencies)
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


def build_graph(ids: list[str], dependencies: dict[str, list[str]] | None) -> DependencyGraph:
    graph = DependencyGraph()
    for cid in ids:
        graph.add_tool(cid, (dependencies or {}).get(cid))
    unknown = [k for k in (dependencies or {}) if k not in graph.edges]
    if unknown:
        raise AgentError("unknown_dependency", f"dependencies name call {unknown[0]!r}, "
                         "which is not in this batch", details={"unknown": unknown})
    graph.check_known()
    return graph

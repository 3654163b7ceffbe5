"""Checks for exercise 10, Kahn's algorithm (``notebooks/exercises/10_kahn.ipynb``).

The student writes ``kahn_levels(deps)`` for ``deps = {node: [nodes it depends on]}`` and
returns levels, dependencies first: level 0 holds the nodes without dependencies, and a node
sits one level below its deepest dependency. A cycle raises ``ValueError`` naming the nodes on
it. The order inside a level is free (levels are compared as sorted lists).
"""
from __future__ import annotations

import random
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_kahn"]


def _norm(levels) -> list[list[str]]:
    return [sorted(level) for level in levels]


def _reference(deps: dict[str, list[str]]) -> list[list[str]]:
    from ..dag import DependencyGraph  # lazy: heavy
    g = DependencyGraph()
    for k, v in deps.items():
        g.add_tool(k, v)
    return _norm(g.topological_sort())


def _random_dag(n: int, seed: int) -> dict[str, list[str]]:
    rng = random.Random(seed)
    ids = [f"t{i:02d}" for i in range(n)]
    rng.shuffle(ids)
    return {v: rng.sample(ids[:i], min(i, rng.randint(0, 3))) for i, v in enumerate(ids)}


def _cycle_error(fn: Callable, deps: dict) -> str:
    try:
        got = fn(deps)
    except ValueError as exc:
        return f"ValueError: {exc}"
    return f"no error, returned {got!r}"


def check_kahn(fn: Callable) -> str:
    """Check ``fn(deps) -> list[list[str]]`` on chains, diamonds, random DAGs and cycles."""
    big = _random_dag(40, 3)
    cyc = {"plan": [], "fetch": ["plan", "parse"], "parse": ["store"], "store": ["fetch"]}
    return run_cases("Kahn levels", [
        Case("no nodes", lambda: _norm(fn({})), [], hint="nothing to sort: return []."),
        Case("independent nodes share level 0", lambda: _norm(fn({"a": [], "b": []})),
             [["a", "b"]], hint="every node with no dependencies starts in level 0."),
        Case("chain c -> b -> a runs a first", lambda: _norm(fn({"c": ["b"], "b": ["a"], "a": []})),
             [["a"], ["b"], ["c"]],
             hint="count each node's dependencies (its in-degree), not its dependents."),
        Case("diamond", lambda: _norm(fn({"summarize": ["read1", "read2"], "read1": ["search"],
                                          "read2": ["search"], "search": []})),
             [["search"], ["read1", "read2"], ["summarize"]],
             hint="a node joins the next level when its LAST dependency is placed."),
        Case("a node waits for its deepest dependency",
             lambda: _norm(fn({"a": [], "b": ["a"], "c": ["a", "b"]})), [["a"], ["b"], ["c"]],
             hint="c depends on a (level 0) and b (level 1): it belongs to level 2."),
        Case("random DAG of 40 nodes", lambda: _norm(fn(big)), _reference(big),
             hint="compare with agentlab.dag.DependencyGraph().topological_sort()."),
        Case("a cycle raises ValueError naming its nodes", lambda: _cycle_error(fn, cyc),
             check=lambda got: got.startswith("ValueError") and all(
                 n in got for n in ("fetch", "parse", "store")) and "plan" not in got,
             hint="nodes still waiting after the loop are on a cycle (or wait for one): "
                  "name them in the error; plan was placed, so it is not one of them."),
    ])

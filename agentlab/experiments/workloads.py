"""Seeded workloads for the built-in scenarios: latency tools and random DAGs (notebook 14).

A sweep must give the same table twice, also when calls run in parallel threads. The latency
models of ``agentlab.sim.tool_latency`` draw in sequence, so "the next draw" depends on which
thread asked first. ``KeyedTool`` fixes that: the draw is chosen by the call's own number
``n`` (an argument the scripted model sends), so call ``web_search(n=3)`` of seed 7 takes the
same simulated time in every configuration and on every run. That is also what makes paired
comparisons possible: two timeout policies see exactly the same latencies.

Workloads are named (``WORKLOADS``) so that a TOML spec can refer to them; each entry builds
fresh seeded models for one seed.
"""
from __future__ import annotations

import math
import random
import threading
import time
from typing import Callable

from ..errors import ConfigError
from ..sim.tool_latency import Bimodal, Constant, Hanging, LatencyModel, LogNormal, Slowdown

__all__ = ["WORKLOADS", "workload_models", "KeyedTool", "random_dag"]


def _heavy_tail(seed: int, warmup: bool = False) -> dict[str, LatencyModel]:
    # the shapes of notebook 09: a cached query, a lognormal search with a heavy tail, and an
    # API that becomes 6x slower from its 3rd call on (a dependency degrading mid-run; its
    # warm-up history is from before, when it was healthy)
    api = LogNormal(300, 0.4, seed=seed * 10 + 5)
    return {"db_query": Hanging(Bimodal(5, 300, hit_rate=0.8, seed=seed * 10 + 1),
                                hang_rate=0.01, seed=seed * 10 + 2),
            "web_search": Hanging(LogNormal(800, sigma=0.9, seed=seed * 10 + 3),
                                  hang_rate=0.02, seed=seed * 10 + 4),
            "flaky_api": Hanging(api if warmup else Slowdown(api, start_call=2, factor=6),
                                 hang_rate=0.02, seed=seed * 10 + 6)}


def _steady(seed: int, warmup: bool = False) -> dict[str, LatencyModel]:
    # constant latencies far below any timeout: outcomes cannot depend on machine load
    return {"lookup": Constant(20), "fetch": Constant(50)}


#: Named workloads: ``name -> (seed, warmup) -> {tool name: latency model in ms}``; with
#: ``warmup=True``, the tools as they behaved before the run (what a timeout manager learned).
WORKLOADS: dict[str, Callable[[int, bool], dict[str, LatencyModel]]] = {
    "heavy_tail": _heavy_tail, "steady": _steady}


def workload_models(name: str, seed: int, warmup: bool = False) -> dict[str, LatencyModel]:
    """Fresh latency models of workload ``name`` for ``seed`` (its warm-up history if asked)."""
    if name not in WORKLOADS:
        raise ConfigError("invalid_spec", f"unknown workload {name!r}; use one of "
                          f"{', '.join(sorted(WORKLOADS))}")
    return WORKLOADS[name](seed, warmup)


class KeyedTool:
    """A simulated tool whose n-th call always takes the n-th draw of its latency model.

    Calling it sleeps ``draw(n) * time_scale`` (a hung call, ``inf``, sleeps ``hang_s`` scaled);
    ``draw(n)`` is the true simulated duration in ms, known even for calls that were killed.
    """

    def __init__(self, name: str, model: LatencyModel, *, time_scale: float, hang_s: float) -> None:
        self.name, self.model = name, model
        self.time_scale, self.hang_s = time_scale, hang_s
        self._draws: list[float] = []
        self._lock = threading.Lock()
        self.function = self._make_function()

    def draw(self, n: int) -> float:
        """True duration (simulated ms) of call number ``n``; ``inf`` for a call that hangs."""
        n = max(0, int(n))
        with self._lock:  # extend in order, whatever thread asks first
            while len(self._draws) <= n:
                self._draws.append(self.model.sample())
            return self._draws[n]

    def _make_function(self) -> Callable[..., str]:
        name, tool = self.name, self

        def function(query: str = "", n: int = 0) -> str:
            ms = tool.draw(n)
            time.sleep((tool.hang_s * 1000 if math.isinf(ms) else ms) * tool.time_scale / 1000)
            return f"{name} result #{n} for {query!r}"

        function.__name__ = function.__qualname__ = name
        function.__doc__ = (f"Simulated tool {name!r} with seeded latency.\n\nArgs:\n"
                            "    query: free text, echoed in the result.\n"
                            "    n: the call's number; its simulated latency is keyed by it.\n")
        return function


def random_dag(n: int, seed: int, *, max_deps: int = 3, reach: int = 12
               ) -> dict[str, list[str]]:
    """A seeded random DAG of ``n`` calls: each depends on up to ``max_deps`` of the ``reach``
    calls before it (so the graph is acyclic by construction and has long chains)."""
    rng = random.Random(seed)
    ids = [f"t{i:03d}" for i in range(n)]
    return {v: sorted(rng.sample(ids[max(0, i - reach):i], min(i, rng.randint(0, max_deps))))
            for i, v in enumerate(ids)}

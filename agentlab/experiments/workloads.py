"""Seeded workloads for the built-in scenarios: latency tools and random DAGs (notebook 14).

A sweep must give the same table twice, also when calls run in parallel threads. The latency
models of ``agentlab.sim.tool_latency`` draw in sequence, so "the next draw" depends on which
thread asked first. ``KeyedTool`` fixes that: the draw is chosen by the call's own number
``n`` (an argument the scripted model sends), so call ``web_search(n=3)`` of seed 7 takes the
same simulated time in every configuration and on every run. That is also what makes paired
comparisons possible: two timeout policies see exactly the same latencies.

Workloads are named (``WORKLOADS``) so that a TOML spec can refer to them; each entry builds
fresh seeded models for one seed.

**Timeouts on the simulated clock.** At ``time_scale=0.01`` a 1 s timeout is 10 ms of real
time, and a busy machine delays threads by that much: a timer on the real clock would kill
fast calls because of the machine's load, not the policy, and the tool messages, tokens and
cost of the run would change with them. So a ``KeyedTool`` given ``SimulatedTimeouts`` decides
itself, on the simulated clock: it knows its true duration and the timeout in force, and a call
that would outlast the timeout sleeps the (scaled) timeout and fails with ``tool_timeout``
as the executor would, else it sleeps its own duration and returns. The same seed gives the
same outcomes at any load; the executor's own timeout stays as a backstop far above it.
"""
from __future__ import annotations

import math
import random
import threading
import time
from typing import Any, Callable

from ..errors import ConfigError, ToolError
from ..sim.tool_latency import Bimodal, Constant, Hanging, LatencyModel, LogNormal, Slowdown

__all__ = ["WORKLOADS", "workload_models", "KeyedTool", "SimulatedTimeouts", "random_dag"]


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


class SimulatedTimeouts:
    """The timeout in force for each call, and whether it kills the call, on the simulated clock.

    ``policy`` is a fixed limit in simulated seconds, or an object with ``get_timeout(name)``
    (simulated seconds) and ``record_execution(name, ms, success=, timed_out=)``, e.g. an
    ``AdaptiveTimeoutManager`` whose limits are in simulated seconds. ``decide`` reads the
    limit, kills the call when its true duration exceeds it (the rule of
    ``agentlab.sim.tool_latency.replay``) and records what the policy learns: the true duration,
    or the limit for a killed call (censored, as the executor records it). Nothing here reads a
    clock, so the decisions are the same at any machine load.

    Invariant: the learned limit of a tool depends on the order of its own calls only, so the
    scripted model must call each tool at most once per parallel batch (the built-in scenarios
    do); calls of different tools may decide in any thread order.
    """

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.decisions: dict[tuple[str, int], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def timeout_s(self, name: str) -> float:
        """The limit in force for the next call of ``name`` (simulated seconds)."""
        if isinstance(self.policy, (int, float)):
            return float(self.policy)
        return float(self.policy.get_timeout(name))

    def decide(self, name: str, n: int, true_ms: float) -> tuple[float, bool]:
        """``(timeout_s, killed)`` for call ``n`` of ``name`` that truly takes ``true_ms``."""
        with self._lock:
            limit_s = self.timeout_s(name)
            killed = true_ms > limit_s * 1000.0
            if not isinstance(self.policy, (int, float)):
                self.policy.record_execution(name, limit_s * 1000.0 if killed else true_ms,
                                             success=not killed, timed_out=killed)
            self.decisions[(name, int(n))] = (limit_s, killed)
            return limit_s, killed

    def decision(self, name: str, n: int) -> tuple[float, bool] | None:
        """What ``decide`` said for call ``n`` of ``name`` (None if it never ran)."""
        with self._lock:
            return self.decisions.get((name, int(n)))


class KeyedTool:
    """A simulated tool whose n-th call always takes the n-th draw of its latency model.

    Calling it sleeps ``draw(n) * time_scale``; ``draw(n)`` is the true simulated duration in
    ms (``inf`` for a call that hangs), known even for calls that were killed. With
    ``timeouts`` (``SimulatedTimeouts``) the call decides on the simulated clock whether its
    timeout kills it (see the module docstring); without, a hung call sleeps ``hang_s`` scaled
    and the executor's real-clock timeout decides.
    """

    def __init__(self, name: str, model: LatencyModel, *, time_scale: float, hang_s: float = 0.0,
                 timeouts: SimulatedTimeouts | None = None) -> None:
        self.name, self.model = name, model
        self.time_scale, self.hang_s, self.timeouts = time_scale, hang_s, timeouts
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
            if tool.timeouts is not None:
                limit_s, killed = tool.timeouts.decide(name, n, ms)
                if killed:  # the same text as the executor's for an abandoned sync call
                    time.sleep(limit_s * tool.time_scale)
                    raise ToolError("tool_timeout", f"Tool '{name}' did not finish within "
                                    f"{limit_s:.1f} s and was abandoned. Try a smaller request, "
                                    "or continue without this result.",
                                    details={"timeout_s": limit_s, "clock": "simulated"})
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

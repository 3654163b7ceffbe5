"""Seeded tool-latency models and simulated tools for timeout and scheduling experiments.

Used by ``notebooks/09_adaptive_timeouts.ipynb``, ``notebooks/10_dag_execution.ipynb`` and the
benchmarks. A latency model draws durations in **milliseconds** from a seeded generator, so a
workload is the same on every run:

    * ``LogNormal(median_ms, sigma)``: most calls near the median, a long right tail;
    * ``Bimodal(hit_ms, miss_ms, hit_rate)``: a cache in front of a slow backend;
    * ``Slowdown(base, start_call, factor)``: a tool that gets ``factor`` times slower from
      call ``start_call`` on (a degraded dependency mid-run);
    * ``Hanging(base, hang_rate)``: some calls never return (duration ``inf``);
    * ``Constant(ms)``: a fixed duration (DAG examples).

``latency_tool(name, model, time_scale=...)`` turns a model into a tool function that really
sleeps ``duration * time_scale`` (so a 2 s tail becomes 20 ms with ``time_scale=0.01``).
``replay(manager, durations_ms, ...)`` plays a trace against a timeout policy without sleeping:
which calls would be killed, how long we would have waited.
"""
from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["LatencyModel", "LogNormal", "Bimodal", "Slowdown", "Hanging", "Constant",
           "latency_tool", "register_latency_tools", "ReplayResult", "replay"]


class LatencyModel:
    """Base: ``sample()`` draws the next duration in ms; ``samples(n)`` draws n of them.

    Each model owns a ``random.Random(seed)`` and a lock, so draws are reproducible and
    safe from several threads (the order of draws across threads is then up to the OS).
    """

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.reset()

    def reset(self) -> None:
        """Start the sequence again from the seed."""
        self._rng = random.Random(self.seed)
        self._lock = threading.Lock()
        self.calls = 0

    def sample(self) -> float:
        with self._lock:
            value = self._draw(self._rng, self.calls)
            self.calls += 1
            return value

    def samples(self, n: int) -> list[float]:
        return [self.sample() for _ in range(n)]

    def _draw(self, rng: random.Random, i: int) -> float:  # pragma: no cover - abstract
        raise NotImplementedError


class Constant(LatencyModel):
    """Always ``ms`` milliseconds."""

    def __init__(self, ms: float) -> None:
        self.ms = float(ms)
        super().__init__(0)

    def _draw(self, rng: random.Random, i: int) -> float:
        return self.ms


class LogNormal(LatencyModel):
    """Lognormal durations: median ``median_ms``; ``sigma`` sets the tail (1.0 is heavy)."""

    def __init__(self, median_ms: float, sigma: float = 0.5, seed: int = 0) -> None:
        self.median_ms, self.sigma = float(median_ms), float(sigma)
        super().__init__(seed)

    def _draw(self, rng: random.Random, i: int) -> float:
        return self.median_ms * math.exp(rng.gauss(0.0, self.sigma))


class Bimodal(LatencyModel):
    """A cache: ``hit_ms`` with probability ``hit_rate``, else ``miss_ms`` (each +-``jitter``)."""

    def __init__(self, hit_ms: float, miss_ms: float, hit_rate: float = 0.8,
                 jitter: float = 0.2, seed: int = 0) -> None:
        self.hit_ms, self.miss_ms = float(hit_ms), float(miss_ms)
        self.hit_rate, self.jitter = hit_rate, jitter
        super().__init__(seed)

    def _draw(self, rng: random.Random, i: int) -> float:
        base = self.hit_ms if rng.random() < self.hit_rate else self.miss_ms
        return base * (1.0 + rng.uniform(-self.jitter, self.jitter))


class Slowdown(LatencyModel):
    """``base`` until call ``start_call``; from then on ``factor`` times slower."""

    def __init__(self, base: LatencyModel, start_call: int, factor: float = 5.0) -> None:
        self.base, self.start_call, self.factor = base, start_call, factor
        super().__init__(base.seed)

    def reset(self) -> None:
        super().reset()
        self.base.reset()

    def _draw(self, rng: random.Random, i: int) -> float:
        value = self.base.sample()
        return value * self.factor if i >= self.start_call else value


class Hanging(LatencyModel):
    """``base``, except that a fraction ``hang_rate`` of calls never return (``inf`` ms)."""

    def __init__(self, base: LatencyModel, hang_rate: float = 0.02, seed: int = 1) -> None:
        self.base, self.hang_rate = base, hang_rate
        super().__init__(seed)

    def reset(self) -> None:
        super().reset()
        self.base.reset()

    def _draw(self, rng: random.Random, i: int) -> float:
        value = self.base.sample()  # draw anyway, so the base sequence does not shift
        return math.inf if rng.random() < self.hang_rate else value


def latency_tool(name: str, model: LatencyModel | float, *, time_scale: float = 1.0,
                 hang_s: float = 60.0, result: str | None = None,
                 fail_rate: float = 0.0, seed: int = 0) -> Callable[..., str]:
    """A tool function that sleeps one draw of ``model`` (ms) times ``time_scale``.

    Args:
        model: a latency model, or a number of milliseconds (constant).
        time_scale: 0.01 turns 2 s into 20 ms, so notebooks and tests run fast.
        hang_s: real seconds a "hung" call (``inf``) sleeps before giving up.
        result: the text returned (default ``"<name> done in <ms> ms"``).
        fail_rate: probability that a call raises ``RuntimeError`` after sleeping.

    The function takes an optional ``query: str`` (so a model can call it) and an optional
    ``dependency_results: dict[str, str]`` (filled by the DAG executor when declared).
    """
    latency = model if isinstance(model, LatencyModel) else Constant(float(model))
    rng, lock = random.Random(seed), threading.Lock()

    def tool(query: str = "", dependency_results: dict[str, str] | None = None) -> str:
        ms = latency.sample()
        time.sleep(hang_s if math.isinf(ms) else ms * time_scale / 1000.0)
        with lock:
            fail = rng.random() < fail_rate
        if fail:
            raise RuntimeError(f"{name} failed (simulated)")
        if result is not None:
            return result
        return f"{name} done in {ms:.0f} ms" + (f" for {query!r}" if query else "")

    tool.__name__ = name
    tool.__qualname__ = name
    tool.__doc__ = (f"Simulated tool {name!r} with seeded latency.\n\nArgs:\n"
                    f"    query: free text, echoed in the result.\n"
                    f"    dependency_results: outputs of the calls this one depends on.\n")
    return tool


def register_latency_tools(registry: Any, models: dict[str, LatencyModel | float],
                           **tool_kw: Any) -> Any:
    """Register one ``latency_tool`` per entry of ``models`` on a ``ToolRegistry``."""
    for name, model in models.items():
        registry.register(latency_tool(name, model, **tool_kw), name=name)
    return registry


@dataclass
class ReplayResult:
    """Outcome of ``replay``: what a timeout policy would have done to a trace (times in ms)."""

    timeouts_s: list[float] = field(default_factory=list)   # timeout in force for each call
    killed: list[bool] = field(default_factory=list)        # cut off by its timeout
    false_kills: int = 0        # killed although the call would have finished
    hung_killed: int = 0        # killed a call that never returns (a good kill)
    wasted_ms: float = 0.0      # time spent waiting on calls that were then killed
    wall_ms: float = 0.0        # total waiting time (successes + kills)

    @property
    def calls(self) -> int:
        return len(self.killed)

    @property
    def false_kill_rate(self) -> float:
        """False kills over the calls that would have finished (hung calls excluded)."""
        return self.false_kills / max(1, self.calls - self.hung_killed)


def replay(policy: Any, durations_ms: list[float], tool_name: str = "tool", *,
           learn: str = "censored") -> ReplayResult:
    """Play a latency trace against a timeout policy, without sleeping.

    Args:
        policy: a number (a fixed timeout in seconds) or an object with ``get_timeout(name)``
            (seconds) and ``record_execution(name, duration_ms, success=..., timed_out=...)``.
        durations_ms: true durations; ``inf`` marks a call that never returns.
        learn: ``"censored"`` records a killed call as its timeout (what agentlab does);
            ``"success_only"`` records only calls that finished (the spiral-down pitfall).
    """
    if learn not in ("censored", "success_only"):
        raise ValueError("learn must be 'censored' or 'success_only'")
    out = ReplayResult()
    fixed = isinstance(policy, (int, float))
    for d in durations_ms:
        t_s = float(policy) if fixed else policy.get_timeout(tool_name)
        t_ms = t_s * 1000.0
        killed = d > t_ms
        out.timeouts_s.append(t_s)
        out.killed.append(killed)
        if killed:
            out.wasted_ms += t_ms
            out.wall_ms += t_ms
            if math.isinf(d):
                out.hung_killed += 1
            else:
                out.false_kills += 1
        else:
            out.wall_ms += d
        if fixed:
            continue
        if not killed:
            policy.record_execution(tool_name, d, success=True)
        elif learn == "censored":
            policy.record_execution(tool_name, t_ms, success=False, timed_out=True)
    return out

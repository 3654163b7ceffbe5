"""Naive adaptive timeouts in the article's style, defects kept on purpose (chapter 09 pitfall).

Compare with ``agentlab.timeouts``. What goes wrong here:

1. Units: durations are kept in milliseconds, but the learned value is clamped to
   ``[5, 120]`` and returned as if it were seconds, so a 20 ms tool gets a 30 s "adaptive"
   timeout (the ms number read as s) and a 200 ms tool gets 120 s.
2. Percentile index ``int(n * q) - 1``: for small n it picks a value below the true
   percentile (with 10 samples p95 and p99 are both the 9th value: the maximum is never seen).
3. The alert compares a duration with stats that already include it, and only for successes.
4. ``NaiveToolExecutor`` asks for the timeout and then never uses it: a hung tool is waited
   for as long as it takes.
"""
from __future__ import annotations

import time
from collections import defaultdict

__all__ = ["NaiveTimeoutManager", "NaiveToolExecutor"]


class NaiveTimeoutManager:
    """Per-tool history and a p95/p99 timeout, article style. Do not use in real code."""

    def __init__(self, initial_timeout: float = 30.0, alert_threshold: float = 3.0,
                 multiplier: float = 1.5) -> None:
        self.initial_timeout = initial_timeout
        self.alert_threshold = alert_threshold
        self.multiplier = multiplier
        self.history: dict[str, list[float]] = defaultdict(list)
        self.p95: dict[str, float] = {}
        self.p99: dict[str, float] = {}
        self.slow_log: list[dict] = []

    def record_execution(self, tool_name: str, duration_ms: float, success: bool = True) -> None:
        hist = self.history[tool_name]
        hist.append(duration_ms)
        if len(hist) > 100:
            hist.pop(0)
        self._update(tool_name)                  # defect 3: stats now include this sample
        if success and duration_ms > self.p95[tool_name] * self.alert_threshold:
            self.slow_log.append({"tool": tool_name, "duration_ms": duration_ms,
                                  "p95_ms": self.p95[tool_name]})

    def _update(self, tool_name: str) -> None:
        data = sorted(self.history[tool_name])
        n = len(data)
        self.p95[tool_name] = data[max(0, int(n * 0.95) - 1)]   # defect 2: low for small n
        self.p99[tool_name] = data[max(0, int(n * 0.99) - 1)]

    def get_timeout(self, tool_name: str) -> float:
        if not self.p95.get(tool_name):
            return self.initial_timeout
        p95, p99 = self.p95[tool_name], self.p99[tool_name]
        adaptive = p95 + (p99 - p95) * 2                          # milliseconds ...
        return max(5.0, min(120.0, adaptive * self.multiplier))   # defect 1: ... clamped as s

    def get_slow_queries(self, limit: int = 50) -> list[dict]:
        return self.slow_log[-limit:]


class NaiveToolExecutor:
    """Runs each call directly; the timeout is computed and then ignored (defect 4)."""

    def __init__(self, registry, timeout_manager: NaiveTimeoutManager | None = None) -> None:
        self.registry = registry
        self.timeout_manager = timeout_manager or NaiveTimeoutManager()

    def execute(self, tool_calls: list) -> list[dict]:
        results = []
        for tc in tool_calls:
            start = time.monotonic()
            timeout = self.timeout_manager.get_timeout(tc.name)   # noqa: F841 (never used)
            try:
                out = self.registry.get_function(tc.name)(**tc.arguments)
                ok = True
            except Exception as exc:
                out, ok = f"Error: {exc}", False
            duration_ms = (time.monotonic() - start) * 1000
            self.timeout_manager.record_execution(tc.name, duration_ms, ok)
            results.append({"id": tc.id, "success": ok, "result": str(out),
                            "duration_ms": duration_ms})
        return results

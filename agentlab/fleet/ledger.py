"""What the fleet actually did, counted in Redis: the evidence behind "nothing ran twice".

Taught in ``notebooks/13_fleet.ipynb``; read by the tests, ``benchmarks/fleet_soak.py`` and the
notebook's plots. Workers write it as they go; nothing here decides anything.

- **Tool calls.** Every call that really executes (not one answered from the durable log) is
  counted under its idempotency key ``<run_id>:<tool_call_id>`` when it starts, and marked
  *recorded* once its result is in the durable tool log (``guarded.FencedBackend`` reports
  it). A call that starts although its result was recorded before is a *re-executed recorded
  call*: the thing chapter 11's log and chapter 13's lease exist to prevent, and what the
  fleet promises never happens. (A call whose worker died after it returned but before its
  result was logged may run again: that is allowed, and counted apart, with every other
  call that had returned, as ``rerun_after_return``.)
- **Steps.** Every ``turn_start``/``turn_end`` of a run with the attempt's fencing token and
  worker. A turn that ends twice was executed twice; a token change is a takeover, and the
  time from the old holder's last event to the new holder's first is the kill-to-resume gap.
- **Metrics.** Tool durations per tool, and when each run reached a terminal state.

Keys (``prefix`` = ``agentlab:default:fleet:``): ``ledger:calls:<run_id>`` (hash key -> starts),
``ledger:done:<run_id>`` (hash: recorded), ``ledger:returned:<run_id>`` (hash),
``ledger:reexec`` and ``ledger:rerun`` (counters), ``ledger:tools`` (set), ``ledger:steps:<run_id>``
(list of JSON), ``ledger:tool_spans:<tool>`` (list of "start end"), ``ledger:finished`` (zset).
"""
from __future__ import annotations

import json
import time
from collections import Counter
from typing import Any

__all__ = ["Ledger", "takeover_gaps", "max_overlap"]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Ledger:
    """Write and read the fleet's execution evidence (see the module docstring)."""

    def __init__(self, client: Any, prefix: str = "agentlab:default:fleet:") -> None:
        self.client, self.p = client, f"{prefix}ledger:"

    # -- tool calls
    def call_started(self, run_id: str, key: str) -> bool:
        """Count a real execution of the call ``key``; True if its result had been recorded."""
        pipe = self.client.pipeline()
        pipe.hexists(f"{self.p}done:{run_id}", key)
        pipe.hexists(f"{self.p}returned:{run_id}", key)
        pipe.hincrby(f"{self.p}calls:{run_id}", key, 1)
        was_done, had_returned, _ = pipe.execute()
        if had_returned:
            self.client.incr(f"{self.p}rerun")
        if was_done:
            self.client.incr(f"{self.p}reexec")
        return bool(was_done)

    def call_recorded(self, run_id: str, key: str) -> None:
        """The call's result is in the durable tool log: running it again would break the promise."""
        self.client.hset(f"{self.p}done:{run_id}", key, "1")

    def call_finished(self, run_id: str, key: str, tool: str, started: float, ended: float) -> None:
        """Keep when the call ran (wall-clock seconds) and that it returned."""
        pipe = self.client.pipeline()
        pipe.hset(f"{self.p}returned:{run_id}", key, "1")
        pipe.rpush(f"{self.p}tool_spans:{tool}", f"{started:.6f} {ended:.6f} {run_id}")
        pipe.sadd(f"{self.p}tools", tool)  # (a tenant may not SCAN for the span lists)
        pipe.execute()

    def executions(self, run_id: str) -> dict[str, int]:
        """``{idempotency key: times it really executed}`` for one run."""
        raw = self.client.hgetall(f"{self.p}calls:{run_id}")
        return {_text(k): int(v) for k, v in raw.items()}

    def recorded(self, run_id: str) -> set[str]:
        """The idempotency keys of the run's calls whose result is in the durable log."""
        return {_text(k) for k in self.client.hkeys(f"{self.p}done:{run_id}")}

    def reexecuted(self) -> int:
        """Calls whose result was recorded and that ran again, fleet-wide (0 is the promise)."""
        return int(self.client.get(f"{self.p}reexec") or 0)

    def rerun_after_return(self) -> int:
        """Calls that had returned (recorded or not) and ran again, fleet-wide: what a fleet
        without a durable log does to every completed call of a redelivered run."""
        return int(self.client.get(f"{self.p}rerun") or 0)

    def tool_spans(self, run_ids: Any = None) -> dict[str, list[tuple[float, float]]]:
        """``{tool: [(started, ended), ...]}`` of completed calls, fleet-wide (or of ``run_ids``)."""
        wanted = None if run_ids is None else set(run_ids)
        out = {}
        for name in map(_text, self.client.smembers(f"{self.p}tools")):
            rows = [_text(x).split() for x in self.client.lrange(f"{self.p}tool_spans:{name}", 0, -1)]
            out[name] = [(float(a), float(b)) for a, b, run in rows
                         if wanted is None or run in wanted]
        return dict(sorted(out.items()))

    def tool_durations_ms(self, run_ids: Any = None) -> dict[str, list[float]]:
        """Every completed call's duration per tool (for p95/p99 across the fleet)."""
        return {name: [(b - a) * 1000 for a, b in spans]
                for name, spans in self.tool_spans(run_ids).items()}

    # -- steps
    def step(self, run_id: str, turn: int, event: str, token: int | None, worker: str) -> None:
        """Record a ``turn_start`` / ``turn_end`` of an attempt."""
        entry = {"turn": turn, "event": event, "token": token, "worker": worker, "t": time.time()}
        self.client.rpush(f"{self.p}steps:{run_id}", json.dumps(entry))

    def steps(self, run_id: str) -> list[dict]:
        return [json.loads(x) for x in self.client.lrange(f"{self.p}steps:{run_id}", 0, -1)]

    def steps_twice(self, run_id: str) -> list[int]:
        """Turns of the run that ended more than once (0 such turns is the promise)."""
        ends = Counter(s["turn"] for s in self.steps(run_id) if s["event"] == "turn_end")
        return sorted(turn for turn, n in ends.items() if n > 1)

    # -- metrics
    def run_finished(self, run_id: str) -> None:
        self.client.zadd(f"{self.p}finished", {run_id: time.time()})

    def finish_times(self) -> list[float]:
        """Wall-clock times at which runs reached a terminal state, in order."""
        return [s for _, s in self.client.zrange(f"{self.p}finished", 0, -1, withscores=True)]


def takeover_gaps(steps: list[dict]) -> list[float]:
    """Seconds from an attempt's last step event to the next attempt's first (one per takeover)."""
    gaps, last = [], None
    for s in steps:
        if last is not None and s["token"] != last["token"]:
            gaps.append(s["t"] - last["t"])
        last = s
    return gaps


def max_overlap(spans: list[tuple[float, float]]) -> int:
    """The most intervals that were open at the same moment."""
    edges = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans])
    most = now = 0
    for _, step in edges:  # at equal times an end (-1) sorts first: touching is not overlapping
        now += step
        most = max(most, now)
    return most

"""Chapter 13's Redis stores against SQLite: per-turn checkpoint overhead and state-store calls.

    python benchmarks/bench_redis.py [--turns 30] [--repeat 5]

Starts its own throwaway ``redis-server`` (``agentlab.fleet.RedisServer``: loopback, persistence
off) and measures, in the same run:

Part 1: ms per turn of ``AgentRuntime.run`` (a ``--turns``-turn run on the simulator, one tool
call per turn, no simulated latency, so the stores' own work shows): no checkpoints; SQLite
checkpoints (WAL, synchronous=FULL); Redis checkpoints. Each setup twice: a checkpoint every
turn (``auto_save_interval=1``) and every 3 turns (the default); every tool result is logged
durably in all of them. Overhead = ms per turn minus the runtime alone; ratio Redis / SQLite.
Part 2: median µs of one ``save`` and one ``load`` of a 1 KB value: ``SQLiteStateStore`` vs
``RedisStateStore``.

The comparison is not of like with like in one respect: SQLite fsyncs every commit to disk,
while this Redis server keeps everything in memory (a fleet's Redis would add ``appendonly``).
What a worker pays per turn is what this measures.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.fleet import RedisServer, RedisStateStore
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.state import SQLiteStateStore
from agentlab.tools import ToolRegistry


def registry() -> ToolRegistry:
    reg = ToolRegistry()
    reg.register(lambda key: f"value of {key}: " + "data " * 40, name="lookup",
                 description="Look a key up.")
    return reg


def per_turn_ms(turns: int, repeat: int, make_cm) -> float:
    """Median over ``repeat`` runs of ms per turn, with ``make_cm(i)`` as checkpoints (or None)."""
    script = [sim.call("lookup", {"key": f"k{i}"}) for i in range(turns - 1)] + [sim.text("done")]
    times = []
    for i in range(repeat):
        cm = make_cm(i)
        rt = AgentRuntime(sim.Simulator(sim.Script(script)).llm(), registry(),
                          config=RuntimeConfig(max_turns=turns + 1),
                          **({"checkpoints": cm} if cm is not None else {}))
        t0 = time.perf_counter()
        result = rt.run("look up the keys")
        times.append((time.perf_counter() - t0) * 1000.0 / result.turns)
        assert result.ok and not result.errors, result.errors
    return statistics.median(times)


def op_us(fn, n: int = 300) -> float:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-redis-"))
    with RedisServer.start() as server:
        per_turn_ms(5, 1, lambda i: None)  # warm up imports and encodings
        alone = per_turn_ms(args.turns, args.repeat, lambda i: None)
        print(f"Part 1: ms per turn, {args.turns}-turn runs, median of {args.repeat}")
        print(f"{'setup':<34}{'ms/turn':>9}{'overhead':>10}")
        print(f"{'runtime alone':<34}{alone:>9.2f}{'':>10}")
        results = {}
        for every in (1, 3):
            for kind in ("sqlite", "redis"):
                def make(i, kind=kind, every=every):
                    store = "sqlite" if kind == "sqlite" else f"{server.url}?tenant=b{every}x{i}"
                    return CheckpointManager(folder / f"{kind}-{every}-{i}", store=store,
                                             auto_save_interval=every)
                ms = per_turn_ms(args.turns, args.repeat, make)
                results[kind, every] = ms - alone
                print(f"{f'+ checkpoints ({kind}, every {every})':<34}{ms:>9.2f}"
                      f"{ms - alone:>9.2f}ms")
        for every in (1, 3):
            ratio = results["redis", every] / results["sqlite", every]
            print(f"overhead Redis / SQLite, a checkpoint every {every} turn(s): {ratio:.2f}x")

        value = {"text": "x" * 1000}
        sqlite_store = SQLiteStateStore(folder / "state.db")
        redis_store = RedisStateStore(server.url, tenant="bench")
        print("\nPart 2: state store, median µs per call (1 KB value)")
        print(f"{'store':<12}{'save':>10}{'load':>10}")
        for name, store in (("SQLite", sqlite_store), ("Redis", redis_store)):
            save = op_us(lambda i: store.save(f"k{i % 20}", value))
            load = op_us(lambda i: store.load(f"k{i % 20}"))
            print(f"{name:<12}{save:>10.0f}{load:>10.0f}")


if __name__ == "__main__":
    main()

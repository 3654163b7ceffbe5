"""Checkpoint save/load cost against history length, and the observer's cost per turn.

    python benchmarks/bench_checkpoints.py [--turns 2000]

Part 1: one checkpoint of a history of 10, 100, 1000 messages (a research-agent mix of user,
assistant tool_calls, tool results of ~600 characters and answers), saved and loaded with the
article-style manager (in-place ``write_text``, indent=2, no fsync), agentlab's JSON backend
(temp file + fsync + rename + directory fsync) and agentlab's SQLite backend (WAL,
synchronous=FULL). Median of several saves into a store that keeps 10 checkpoints.
Part 2: listing 10 checkpoints of 1000 messages (agentlab reads one header line per file).
Part 3: the observer's cost per recorded turn (a turn span, one model call, two tool calls),
agentlab vs the article-style observer, and the cost of the report and exports after 2000 turns.
Part 4: the same inside ``AgentRuntime``: time per turn of a 20-turn run on the simulator (no
simulated latency, so the runtime's own work shows) without and with ``observer=``, and with
``checkpoints=`` on each backend (every tool result logged durably, a checkpoint every 3 turns).
Part 5 (issue 13): one long run of ``--turns`` turns (2,000 by default) per setup, the cost of
each turn from one ``turn_end`` to the next: the mean of the first 100 and of the last 100
turns and their ratio. Setups: no checkpoints; the article-style manager saving every 3 turns
from a hook; agentlab's JSON and SQLite backends. A flat ratio (about 1) means the cost of a
turn does not grow with the run.
"""
from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path


from agentlab import sim
from agentlab.checkpoints import CheckpointManager
from agentlab.messages import MessageManager
from agentlab.naive.checkpoints import NaiveCheckpointManager
from agentlab.naive.observe import NaiveObserver
from agentlab.observe import AgentObserver
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.tools import ToolRegistry

WORDS = ("agent runtime checkpoint token latency tool search result page model answer "
         "state resume crash durable atomic replay revision idempotent").split()


def history(n: int, seed: int = 0) -> list[dict]:
    """n messages shaped like a research-agent run (every tool_calls message answered)."""
    rng = random.Random(seed)
    text = lambda k: " ".join(rng.choice(WORDS) for _ in range(k))  # noqa: E731
    msgs = [{"role": "system", "content": text(40)}, {"role": "user", "content": text(20)}]
    i = 0
    while len(msgs) < n:
        i += 1
        cid = f"call_{i:05d}"
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function",
             "function": {"name": "web_search", "arguments": f'{{"query": "{text(4)}"}}'}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": text(90)})
        if i % 3 == 0:
            msgs.append({"role": "assistant", "content": text(60)})
            msgs.append({"role": "user", "content": text(15)})
    msgs = msgs[:n]
    while msgs[-1]["role"] == "assistant" and msgs[-1].get("tool_calls"):
        msgs.pop()  # end at a safe point
    return msgs


def timed(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000.0


def make(kind: str, folder: Path):
    if kind == "article":
        return NaiveCheckpointManager(folder / "naive", max_checkpoints=10)
    return CheckpointManager(folder / kind, max_checkpoints=10,
                             store="sqlite" if kind == "sqlite" else None, run_id="bench")


def size_of(kind: str, cm, cid: str) -> int:
    if kind == "article":
        return (cm.checkpoint_dir / f"{cid}.json").stat().st_size
    return next(c["size_bytes"] for c in cm.list_checkpoints() if c["id"] == cid)


def bench_save_load(folder: Path) -> list[tuple]:
    rows = []
    for n in (10, 100, 1000):
        msgs = history(n)
        state = {"notes": ["x" * 50] * 5, "total_tokens": 1234}
        calls = [{"name": "web_search", "id": f"c{i}", "success": True} for i in range(n // 4)]
        repeat = 15 if n < 1000 else 7
        for kind in ("article", "json", "sqlite"):
            cm = make(kind, folder / f"n{n}")
            turn = iter(range(10**6))
            save_ms = timed(lambda: cm.save(next(turn), msgs, state, calls), repeat)
            if kind == "article":
                time.sleep(0.002)  # its ms ids collide on fast saves; give the last one its own
            cid = cm.save(next(turn), msgs, state, calls)
            load_ms = timed(lambda: cm.load(cid), repeat)
            rows.append((n, kind, save_ms, load_ms, size_of(kind, cm, cid)))
    return rows


def bench_listing(folder: Path) -> tuple[float, float]:
    msgs = history(1000)
    naive, ours = make("article", folder / "list"), make("json", folder / "list")
    for t in range(10):
        naive.save(t, msgs, {}, [])
        time.sleep(0.002)
        ours.save(t, msgs, {}, [])
    return timed(naive.list_checkpoints, 7), timed(ours.list_checkpoints, 7)


def bench_observer(turns: int = 2000) -> dict[str, float]:
    ours, naive = AgentObserver("bench", seed=0), NaiveObserver("bench")

    def run_ours():
        with ours.span("run"):
            for t in range(turns):
                with ours.span("turn", turn=t):
                    ours.record_llm_call(prompt_tokens=1000, completion_tokens=50,
                                         duration_ms=300.0, turn=t)
                    ours.record_tool_call("web_search", 40.0, True, turn=t, tool_call_id=f"a{t}")
                    ours.record_tool_call("read_url", 80.0, t % 7 != 0, "tool_timeout", turn=t)

    def run_naive():
        naive.start_span("run", "run")
        for t in range(turns):
            naive.start_span(f"turn{t}", "turn")
            naive.record_llm_call(1000, 50)
            naive.record_tool_call("web_search", 40.0, True)
            naive.record_tool_call("read_url", 80.0, t % 7 != 0)
            naive.end_span(f"turn{t}")
        naive.end_span("run")

    out = {"ours_us": timed(run_ours, 1) * 1000.0 / turns,
           "naive_us": timed(run_naive, 1) * 1000.0 / turns}
    out["report_ms"] = timed(ours.generate_report, 3)
    out["prometheus_ms"] = timed(ours.export_prometheus_metrics, 3)
    out["json_ms"] = timed(ours.export_json, 3)
    out["spans"], out["naive_spans"] = len(ours.spans), len(naive.traces)
    return out


def lookup_registry() -> ToolRegistry:
    """The one tool the runtime benchmarks call: a lookup with a 20-word answer."""
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: what to look up.
        """
        return f"value of {key}: " + " ".join(WORDS[:20])
    return reg


def bench_runtime_turns(folder: Path, turns: int = 20, repeat: int = 5) -> dict[str, float]:
    """ms per turn of ``AgentRuntime.run`` with and without an observer / checkpoints."""
    reg = lookup_registry()

    script = [sim.call("lookup", {"key": f"k{i}"}) for i in range(turns - 1)] + [sim.text("done")]
    config = RuntimeConfig(max_turns=turns + 1)
    setups = {
        "runtime alone": lambda i: {},
        "+ observer": lambda i: {"observer": AgentObserver("bench")},
        "+ checkpoints (json)": lambda i: {"checkpoints": CheckpointManager(folder / f"rt-json{i}")},
        "+ checkpoints (sqlite)": lambda i: {"checkpoints": CheckpointManager(
            folder / f"rt-sqlite{i}", store="sqlite")},
        "+ both (sqlite)": lambda i: {"observer": AgentObserver("bench"), "checkpoints":
                                      CheckpointManager(folder / f"rt-both{i}", store="sqlite")},
    }
    out: dict[str, float] = {}
    AgentRuntime(sim.Simulator(sim.Script(script)).llm(), reg, config=config).run("warm up")
    for name, extra in setups.items():
        times = []
        for i in range(repeat):
            rt = AgentRuntime(sim.Simulator(sim.Script(script)).llm(), reg, config=config, **extra(i))
            t0 = time.perf_counter()
            result = rt.run("look up the keys")
            times.append((time.perf_counter() - t0) * 1000.0 / result.turns)
            assert result.ok, result.errors
        out[name] = statistics.median(times)
    return out


#: The long run's context budget: the history is compressed to fit, as in any long run, so
#: what is left to grow with the run is what checkpointing keeps (the tool log, the call list).
CONTEXT_TOKENS = 1500


def long_run(folder: Path, turns: int, setup: str) -> list[float]:
    """ms of each turn of one ``turns``-turn run (``turn_end`` to ``turn_end``)."""
    reg = lookup_registry()

    asked = iter(range(turns))  # the history is compressed: a Script could not count turns

    def policy(messages, tools):
        i = next(asked)
        return sim.call("lookup", {"key": f"k{i}"}) if i < turns - 1 else sim.text("done")
    extra = {}
    if setup in ("json", "sqlite"):
        extra["checkpoints"] = CheckpointManager(folder / f"long-{setup}",
                                                 store="sqlite" if setup == "sqlite" else None)
    llm = sim.Simulator(sim.Function(policy)).llm()
    window = MessageManager("You look keys up.", model=llm.model, max_tokens=CONTEXT_TOKENS)
    rt = AgentRuntime(llm, reg, config=RuntimeConfig(max_turns=turns + 1), messages=window,
                      **extra)
    if setup == "article":  # the article's manager, saving every 3 turns from a hook
        naive = NaiveCheckpointManager(str(folder / "long-article"))
        rt.on("turn_end", lambda e: naive.should_save(e["turn"]) and naive.save(
            e["turn"], rt.messages.get_messages(), {}, rt.context.tool_calls_made))
    stamps: list[tuple[float, float]] = []
    rt.on("turn_end", lambda e: stamps.append((time.perf_counter(), time.process_time())))
    t0 = (time.perf_counter(), time.process_time())
    result = rt.run("look up the keys")
    assert result.ok and not result.errors, result.errors
    marks = [t0, *stamps]
    return ([(b[0] - a[0]) * 1000.0 for a, b in zip(marks, marks[1:])],
            [(b[1] - a[1]) * 1000.0 for a, b in zip(marks, marks[1:])])


def bench_long_runs(folder: Path, turns: int) -> list[tuple]:
    """(setup, wall first, wall last, CPU first, CPU last) in ms per turn, means over windows."""
    rows = []
    window = max(1, min(100, turns // 4))
    for setup in ("none", "article", "json", "sqlite"):
        wall, cpu = long_run(folder, turns, setup)
        rows.append((setup, statistics.mean(wall[:window]), statistics.mean(wall[-window:]),
                     statistics.mean(cpu[:window]), statistics.mean(cpu[-window:])))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000, help="turns of the long run (part 5)")
    ap.add_argument("--only-long", action="store_true", help="run part 5 only")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        long_rows = bench_long_runs(folder, args.turns)
        if not args.only_long:
            rows = bench_save_load(folder)
            list_naive, list_ours = bench_listing(folder)
            per_turn = bench_runtime_turns(folder)
    window = max(1, min(100, args.turns // 4))
    print(f"One {args.turns}-turn run per setup: ms per turn (mean), first {window} vs last "
          f"{window} turns; wall clock, and CPU time of this process (not slowed by other ones)")
    print(f"  {'setup':<28} {'first':>7} {'last':>7} {'ratio':>6}   {'CPU first':>9} {'last':>7} "
          f"{'ratio':>6}")
    names = {"none": "no checkpoints", "article": "article manager (every 3)",
             "json": "agentlab JSON", "sqlite": "agentlab SQLite"}
    for setup, w0, w1, c0, c1 in long_rows:
        print(f"  {names[setup]:<28} {w0:>7.2f} {w1:>7.2f} {w1 / w0:>5.2f}x   {c0:>9.2f} {c1:>7.2f} "
              f"{c1 / c0:>5.2f}x")
    print(f"  (target: agentlab's last turns within 1.5x of its first ones. The history is kept to"
          f" {CONTEXT_TOKENS} tokens;\n   a checkpoint holds chunk ids and < 256 call records,"
          " the tool log is read incrementally)")
    if args.only_long:
        return
    print()
    obs = bench_observer()

    print("Checkpoint save/load vs history length (median; store keeps 10 checkpoints)")
    print(f"{'messages':>8}  {'backend':<8} {'save ms':>8} {'load ms':>8} {'size KB':>8}"
          f"  {'save vs article':>15}")
    by = {(n, k): (s, l, b) for n, k, s, l, b in rows}
    for n, kind, save_ms, load_ms, size in rows:
        ratio = save_ms / by[(n, "article")][0]
        print(f"{n:>8}  {kind:<8} {save_ms:>8.2f} {load_ms:>8.2f} {size / 1024:>8.1f}"
              f"  {ratio:>14.1f}x")
    print("  (article = in-place write_text, indent=2, no fsync: fast, and torn by a crash;"
          " json/sqlite pay for fsync)")
    print()
    print("Listing 10 checkpoints of 1000 messages")
    print(f"  article (parses every file): {list_naive:8.2f} ms")
    print(f"  agentlab (one header line):  {list_ours:8.2f} ms   ({list_naive / list_ours:.0f}x faster)")
    print()
    print("Observer cost per recorded turn (turn span + 1 model call + 2 tool calls), 2000 turns")
    print(f"  article observer:  {obs['naive_us']:7.1f} us/turn   spans stored: {obs['naive_spans']}")
    print(f"  AgentObserver:     {obs['ours_us']:7.1f} us/turn   spans stored: {obs['spans']}")
    print(f"  after 2000 turns: generate_report {obs['report_ms']:.1f} ms, "
          f"export_prometheus_metrics {obs['prometheus_ms']:.1f} ms, export_json {obs['json_ms']:.1f} ms")
    print(f"  overhead vs a 300 ms model call: {obs['ours_us'] / 3000:.3f}% of a turn")
    print()
    print("AgentRuntime, ms per turn (20-turn run, simulator without latency, median of 5 runs)")
    base = per_turn["runtime alone"]
    for name, ms in per_turn.items():
        extra = "" if name == "runtime alone" else f"   +{ms - base:6.2f} ms/turn"
        print(f"  {name:<24} {ms:7.2f} ms/turn{extra}")
    print("  (checkpoints pay an fsync per tool result and per checkpoint; a real model call"
          " takes 300-3000 ms)")


if __name__ == "__main__":
    main()

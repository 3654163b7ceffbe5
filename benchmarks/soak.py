"""Soak test: many research-agent runs under injected faults of every kind, strict simulator.

    python benchmarks/soak.py [--runs 500] [--fault-rate 0.2] [--seed 0]

``--seed`` picks the whole soak: run i draws its faults, simulator ids and tool failures from
``seed * 1_000_003 + i``, so the same seed replays the same runs and another seed soaks others.
Each run is the research agent (``Researcher`` policy, the four research tools) on a fresh
strict simulator. Faults, each with probability fault_rate split evenly across kinds:
  model requests: 429 (with Retry-After), 5xx, timeouts, malformed tool arguments, truncated
                  streams (half the runs stream, half do not);
  tool calls:     exceptions, and hung tools (stuck far past their short timeout).
Prints the distribution of terminal states, the recorded error codes, exceptions that escaped
``run()`` / ``run_stream()`` (must be 0) and protocol 400s from the strict simulator (must be 0),
then one verdict line:

    soak: 1000 runs, finished X / error Y, 0 escaped exceptions, 0 protocol 400s
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time

from tqdm import tqdm

from agentlab import research, sim
from agentlab.executor import abandoned_threads
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.sim.researcher import Researcher

# Wall-clock, so far apart and far above a normal call (1-10 ms): with 0.05 s a write_file on a
# loaded machine timed out now and then, and the same seed replayed another run (issue 24).
HANG_S = 2.0      # how long a hung tool sleeps (its timeout is TOOL_TIMEOUT_S)
TOOL_TIMEOUT_S = 0.5


def one_run(i: int, rate: float, out: str, seed: int = 0) -> tuple[str, list, list]:
    """(terminal state or 'escaped:<Type>', error codes, HTTP statuses of the run)."""
    out, i = f"{out}/run{i}", seed * 1_000_003 + i  # one folder per run; the run's own seed
    each = rate / 5
    faults = sim.Faults(rate_limit=each, server_error=each, timeout=each,
                        malformed_arguments=each, truncated_stream=each, retry_after=0.001,
                        seed=i)
    s = sim.Simulator(Researcher(), faults=faults, seed=i, strict=True)
    llm = s.llm(max_retries=2, retry_base_delay=0.001, max_retry_delay=0.01, timeout=2.0, seed=i)
    tools = research.with_tool_faults(research.research_tools(out), rate, seed=i,
                                      hang_s=HANG_S, timeout=TOOL_TIMEOUT_S)
    rt = AgentRuntime(llm, tools,
                      system_prompt=research.SYSTEM_PROMPT,
                      config=RuntimeConfig(max_turns=12, max_total_time=10.0,
                                           tool_timeout=TOOL_TIMEOUT_S))
    try:
        if i % 2:
            result = list(rt.run_stream(research.DEMO_TASK))[-1]["result"]
        else:
            result = rt.run(research.DEMO_TASK)
        state = result.state.value
        codes = [e["code"] for e in result.errors]
    except Exception as exc:  # must never happen
        state, codes = f"escaped:{type(exc).__name__}", []
    return state, codes, [r["status"] for r in s.requests]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0, help="which runs to soak (reproducible)")
    args = ap.parse_args(argv)
    states, codes, statuses = collections.Counter(), collections.Counter(), collections.Counter()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as out:
        for i in tqdm(range(args.runs), desc="soak", unit="run", file=sys.stderr):
            state, errs, sts = one_run(i, args.fault_rate, out, args.seed)
            states[state] += 1
            codes.update(errs)
            statuses.update(sts)
        settle = time.monotonic() + 4 * HANG_S  # hung tools still write into `out`: let them end
        while abandoned_threads() and time.monotonic() < settle:
            time.sleep(0.05)
    escaped = sum(n for s, n in states.items() if s.startswith("escaped"))
    print(f"Soak: {args.runs} research-agent runs, fault rate {args.fault_rate:.0%} per model "
          f"request and per tool call, strict simulator, seed {args.seed}, "
          f"{time.monotonic() - t0:.1f} s")
    print("\nTerminal states:")
    for s, n in states.most_common():
        print(f"  {s:<12} {n:4d}  {n / args.runs:6.1%}")
    print("\nRecorded errors by code:")
    for c, n in codes.most_common():
        print(f"  {c:<22} {n:4d}")
    print("\nHTTP statuses seen by the simulator:", dict(sorted(statuses.items())))
    print(f"\nEscaped exceptions: {escaped} (must be 0)")
    print(f"Protocol 400s:      {statuses.get(400, 0)} (must be 0)")
    others = "".join(f" / {s} {n}" for s, n in sorted(states.items())
                     if s not in ("finished", "error"))  # exhausted, cancelled, escaped
    print(f"\nsoak: {args.runs} runs, finished {states.get('finished', 0)} / error "
          f"{states.get('error', 0)}{others}, {escaped} escaped exceptions, "
          f"{statuses.get(400, 0)} protocol 400s")
    return 0 if escaped == 0 and statuses.get(400, 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

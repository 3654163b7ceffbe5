"""Cancel soak: research-agent runs cancelled from another thread at a random moment.

    python benchmarks/cancel_soak.py [--runs 100] [--seed 0] [--time-scale 1.0]

Each run is the research agent (``Researcher`` policy, the four research tools, each tool
slowed by 20-80 ms) on a strict simulator with latency, streamed or not (every other run). A
timer thread calls ``rt.cancel()`` at a moment drawn uniformly over the first 90 % of the
fastest of three uncancelled runs, so it lands in a model call, a tool batch or between them.

Each run must end ``CANCELLED``, or ``FINISHED`` only when the cancel arrived after the last
model call had returned (the chapter's contract: a cancel is honoured until then). Its history
must then be valid: the real API's rules hold (``agentlab.sim.strict.check_request``: roles,
every assistant ``tool_calls`` answered, tool messages after their call), no task is left
unanswered at the end, and a follow-up ``run()`` on the same runtime finishes against the
strict simulator. The last line is the verdict:

    cancel_soak: 100 runs, N CANCELLED, M FINISHED (cancel after last model call), 0 invalid histories
"""
from __future__ import annotations

import argparse
import collections
import inspect
import random
import sys
import tempfile
import threading
import time
from typing import Any

from tqdm import tqdm

from agentlab import research, sim
from agentlab.runtime import AgentRuntime, RunState, RuntimeConfig
from agentlab.sim.researcher import Researcher
from agentlab.sim.strict import SimulatorHTTPError, check_request
from agentlab.tools import ToolRegistry


def slowed(registry: ToolRegistry, seed: int, time_scale: float) -> ToolRegistry:
    """Every tool of ``registry`` (in place) sleeps 20-80 ms (seeded, times ``time_scale``)."""
    rng, lock = random.Random(seed), threading.Lock()
    for name in registry.list_tools():
        fn, opts = registry.get_function(name), registry.get_options(name)

        def wrapped(*args: Any, _fn: Any = fn, **kwargs: Any) -> Any:
            with lock:
                delay = rng.uniform(0.02, 0.08) * time_scale
            threading.Event().wait(delay)
            return _fn(*args, **kwargs)

        wrapped.__signature__ = inspect.signature(fn)  # type: ignore[attr-defined]
        wrapped.__doc__, wrapped.__annotations__ = fn.__doc__, getattr(fn, "__annotations__", {})
        registry.register(wrapped, name=name, replace=True, side_effects=opts["side_effects"],
                          timeout=opts["timeout"])
    return registry


def make_runtime(i: int, out: str, time_scale: float) -> AgentRuntime:
    latency = sim.Latency(first_token_ms=60, tokens_per_second=800, time_scale=time_scale)
    s = sim.Simulator(Researcher(), latency=latency, seed=i, strict=True)
    tools = slowed(research.research_tools(f"{out}/run{i}", answers=["fine"]), i, time_scale)
    return AgentRuntime(s.llm(seed=i, timeout=30.0), tools, system_prompt=research.SYSTEM_PROMPT,
                        config=RuntimeConfig(max_turns=12, max_total_time=60.0))


def start(rt: AgentRuntime, stream: bool):
    """The run's result (``run()`` or the last event of ``run_stream()``)."""
    if stream:
        return list(rt.run_stream(research.DEMO_TASK))[-1]["result"]
    return rt.run(research.DEMO_TASK)


def history_problem(rt: AgentRuntime) -> str | None:
    """Why the history left behind is not valid for a follow-up run (None if it is)."""
    msgs = rt.messages.get_messages()
    try:
        check_request({"model": "gpt-4o", "messages": [*msgs, {"role": "user", "content": "x"}]})
    except SimulatorHTTPError as exc:
        return f"API rules: {exc.message}"
    if msgs[-1]["role"] == "user":
        return "the task is left unanswered"
    rt.llm = sim.Simulator(["Thanks, noted."], strict=True).llm()
    follow = rt.run("Summarise what you did in one sentence.")
    return None if follow.state is RunState.FINISHED else f"follow-up run {follow.state.value}"


#: What the run was doing, from its hook events (where a cancel lands).
PHASES = {"run_start": "before a model call", "llm_start": "in a model call",
          "llm_end": "between steps", "tool_start": "in a tool batch", "turn_end": "between steps"}


def one_run(i: int, out: str, window_s: float, time_scale: float, rng: random.Random,
            landed: collections.Counter) -> str:
    """``cancelled``, ``finished_late`` (cancel after the last model call), or what went wrong;
    counts in ``landed`` what the run was doing when the cancel was sent."""
    rt = make_runtime(i, out, time_scale)
    last_reply, phase, sent = [0.0], ["before the run"], [0.0]
    rt.on("llm_end", lambda e: last_reply.__setitem__(0, time.monotonic()))
    rt.on("*", lambda e: phase.__setitem__(0, PHASES.get(e["type"], phase[0])))

    def cancel() -> None:
        sent[0] = time.monotonic()
        landed[phase[0]] += 1
        rt.cancel()

    timer = threading.Timer(rng.uniform(0.0, window_s), cancel)
    timer.start()
    try:
        result = start(rt, stream=bool(i % 2))
    except Exception as exc:  # must never happen
        timer.cancel()
        return f"escaped:{type(exc).__name__}"
    ended = time.monotonic()
    timer.join()
    if sent[0] > ended:
        return "late (the cancel came after the run ended)"
    if result.state is RunState.CANCELLED:
        verdict = "cancelled"
    elif result.state is RunState.FINISHED and sent[0] >= last_reply[0]:
        verdict = "finished_late"
    else:
        return f"{result.state.value} ({result.stopped_reason}) despite the cancel"
    problem = history_problem(rt)
    return verdict if problem is None else f"invalid history: {problem}"


def calibrate(out: str, time_scale: float) -> float:
    """The fastest of three uncancelled runs, in seconds."""
    times = []
    for k in range(3):
        rt = make_runtime(-1 - k, out, time_scale)
        t0 = time.monotonic()
        start(rt, stream=bool(k % 2))
        times.append(time.monotonic() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="cancel times and simulator seeds")
    ap.add_argument("--time-scale", type=float, default=1.0, help="scales every latency")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    outcomes: collections.Counter = collections.Counter()
    landed: collections.Counter = collections.Counter()
    t0 = time.monotonic()
    # abandoned (cancelled) tool threads may still write into `out` as it is removed
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as out:
        window = 0.9 * calibrate(out, args.time_scale)
        for i in tqdm(range(args.runs), desc="cancel_soak", unit="run", file=sys.stderr):
            outcomes[one_run(args.seed * 1_000_003 + i, out, window, args.time_scale, rng,
                             landed)] += 1
    cancelled, late = outcomes["cancelled"], outcomes["finished_late"]
    invalid = sum(n for k, n in outcomes.items() if k.startswith("invalid"))
    print(f"Cancel soak: {args.runs} research-agent runs, cancel at a random moment within "
          f"{window * 1000:.0f} ms of the start, {time.monotonic() - t0:.1f} s")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:<50} {n:4d}")
    print("Where the cancels landed: " + ", ".join(f"{k} {n}" for k, n in landed.most_common()))
    print(f"\ncancel_soak: {args.runs} runs, {cancelled} CANCELLED, {late} FINISHED (cancel after "
          f"last model call), {invalid} invalid histories")
    return 0 if cancelled + late == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())

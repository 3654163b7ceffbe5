"""The built-in scenarios a sweep can run, each built from plain settings (notebook 14).

A *scenario* turns ``(settings, seed, task)`` into a ``CellOutput``. It runs inside a worker
process, so it builds everything there from plain data, with the package's public parts only:

- ``tools`` (chapters 03, 06, 09): an ``AgentRuntime`` on the simulator whose scripted model
  calls every tool of a latency workload once per turn, for ``turns`` turns; the tools really
  sleep (scaled by ``time_scale``) under a fixed timeout or the one an
  ``AdaptiveTimeoutManager`` learned from ``warmup_calls`` earlier calls of the same tools.
  Which calls the timeout kills is decided on the simulated clock (``SimulatedTimeouts``), so
  every column outside ``results.MEASURED`` is the same at any machine load; the
  ``ToolExecutor``'s real-clock timeout is a backstop far above it.
- ``research`` (chapters 04, 08): the article's research agent (``Researcher`` policy, the
  offline corpus) under a ``MessageManager`` with a small ``context_tokens`` budget; the
  simulator garbles some tool arguments (``malformed_arguments``), so seeds differ. Success:
  the run finished and the report was written.
- ``dag`` (chapter 10): a seeded random DAG of sleeping tool calls run by the
  ``DependencyAwareExecutor`` (``strategy`` "ready" or "levels"); the measured makespan, the
  one ``simulate_schedule`` predicts from the true durations (deterministic), and the
  critical path.

``SCENARIOS[name].defaults`` lists every setting a scenario reads, with its default; a spec
that names any other setting is refused. ``register_scenario`` adds one (see notebook 14).
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from .. import sim
from ..dag import DependencyAwareExecutor, critical_path, simulate_schedule
from ..errors import ConfigError
from ..executor import ToolExecutor
from ..llm import LLMClient, ToolCall
from ..messages import MessageManager
from ..models import DEFAULT_MODEL
from ..research import SYSTEM_PROMPT, research_tools
from ..runtime import AgentRuntime, RuntimeConfig
from ..sim.tool_latency import LogNormal, replay
from ..timeouts import AdaptiveTimeoutManager
from ..tools import ToolRegistry
from .ratelimit import LimitedLLM, RateLimiter
from .rows import CellOutput, TimeoutProbe, agent_run_row, tool_call_rows
from .workloads import KeyedTool, SimulatedTimeouts, random_dag, workload_models

__all__ = ["Scenario", "SCENARIOS", "register_scenario", "build_llm", "agent_config"]

_LLM = {"model": DEFAULT_MODEL, "endpoint": "sim", "max_turns": 20, "max_total_time_s": 300.0,
        "context_tokens": 16000, "compression_threshold": 0.75, "compression": "sliding_window",
        "max_output_tokens": 1024, "rate_limit": 0.0, "server_error": 0.0,
        "malformed_arguments": 0.0, "retry_base_delay_s": 0.01, "max_retries": 3}


@dataclass(frozen=True)
class Scenario:
    """A named way to run one cell: ``run(settings, seed, task, *, limiter, budget_usd)``.

    ``run`` returns a ``CellOutput``; ``settings`` holds every key of ``defaults`` (resolved),
    ``task`` is ``{"name", "scenario", "prompt"}``, and the keywords are the worker's
    ``RateLimiter`` (or None) and the cell's budget in USD (or None): pass both to
    ``build_llm`` so that the rate limits and the cost cap hold. ``uses_llm``: whether cells
    make model calls (and so cost money on a real endpoint).
    """

    name: str
    run: Callable[[dict, int, dict], CellOutput]
    defaults: dict[str, Any] = field(default_factory=dict)
    uses_llm: bool = True
    prompt: str = ""


SCENARIOS: dict[str, Scenario] = {}


def register_scenario(name: str, run: Callable[[dict, int, dict], CellOutput],
                      defaults: dict[str, Any] | None = None, *, uses_llm: bool = False,
                      prompt: str = "") -> Scenario:
    """Make ``run`` available to specs as ``scenario = name`` (in this process).

    A process pool starts fresh interpreters, so a scenario registered in a notebook exists
    only for ``workers=1``; for a pool, refer to it as ``"package.module:function"``.
    """
    SCENARIOS[name] = Scenario(name, run, dict(defaults or {}), uses_llm, prompt)
    return SCENARIOS[name]


# -- shared pieces ---------------------------------------------------------------------------
def build_llm(s: dict, seed: int, policy: Any, limiter: RateLimiter | None = None,
              budget_usd: float | None = None) -> tuple[Any, Any]:
    """The model client of a cell and its simulator: ``endpoint="sim"`` (offline) or ``"env"``
    (``LLMClient.from_env``: a real endpoint when ``OPENAI_API_KEY`` is set)."""
    rates = {k: s[k] for k in ("rate_limit", "server_error", "malformed_arguments") if s[k]}
    simulator = sim.Simulator(policy, faults=sim.Faults(seed=seed, **rates) if rates else None,
                              seed=seed)
    kw = {"model": s["model"], "retry_base_delay": s["retry_base_delay_s"],
          "max_retries": s["max_retries"], "seed": seed}
    if s["endpoint"] == "sim":
        llm = simulator.llm(**kw)
    elif s["endpoint"] == "env":
        llm = LLMClient.from_env(simulator=simulator, **kw)
    else:
        raise ConfigError("invalid_spec", f"endpoint must be 'sim' or 'env', got {s['endpoint']!r}")
    return LimitedLLM(llm, limiter, max_output_tokens=s["max_output_tokens"],
                      budget_usd=budget_usd), simulator


def agent_config(s: dict, budget_usd: float | None = None, **overrides: Any) -> RuntimeConfig:
    """The ``RuntimeConfig`` of a cell; ``max_cost_usd`` (chapter 13) when this runtime has it."""
    kw = {"max_turns": s["max_turns"], "max_total_time": s["max_total_time_s"], **overrides}
    if budget_usd is not None and hasattr(RuntimeConfig, "max_cost_usd"):
        kw["max_cost_usd"] = budget_usd
    return RuntimeConfig(**kw)


def _messages(s: dict, system_prompt: str, llm: Any) -> MessageManager:
    return MessageManager(system_prompt, model=s["model"], max_tokens=s["context_tokens"],
                          compression_threshold=s["compression_threshold"],
                          strategy=s["compression"], llm=llm)


def _run_agent(s: dict, llm: Any, simulator: Any, registry: ToolRegistry, executor: Any,
               probe: TimeoutProbe | None, config: RuntimeConfig, system_prompt: str,
               prompt: str, time_scale: float, true_ms: Callable | None = None,
               success: Callable[[Any], bool] | None = None,
               decision: Callable | None = None) -> CellOutput:
    messages = _messages(s, system_prompt, llm)
    runtime = AgentRuntime(llm, registry, system_prompt, config, messages=messages,
                           executor=executor)
    if probe is not None:
        runtime.on("tool_start", probe.on_tool_start)
    result = runtime.run(prompt)
    rows = tool_call_rows(result.tool_calls_made, time_scale=time_scale, probe=probe,
                          true_ms=true_ms, decision=decision)
    requests = simulator.requests if s["endpoint"] == "sim" else None
    run = agent_run_row(result, model=s["model"], tool_rows=rows, requests=requests,
                        success=success(result) if success else None,
                        compressions=len(messages.compressions))
    return CellOutput(run, rows)


# -- tools: timeouts under a latency workload ------------------------------------------------
_TOOLS = {**_LLM, "workload": "heavy_tail", "turns": 6, "time_scale": 0.01,
          "timeouts": "adaptive", "fixed_timeout_s": 30.0, "initial_timeout_s": 30.0,
          "multiplier": 1.5, "min_timeout_s": 1.0, "max_timeout_s": 120.0,
          "timeout_rule": "censoring_aware", "warmup_calls": 100, "parallel_tool_calls": True,
          "tool_workers": 4}
_WARMUP_SEED = 1_000_003  # warm-up draws come from other seeds than the measured calls


def _timeout_policy(s: dict, seed: int) -> Any:
    """The policy in simulated seconds: a fixed limit, or a manager warmed up on earlier traffic."""
    if s["timeouts"] == "fixed":
        return float(s["fixed_timeout_s"])
    if s["timeouts"] != "adaptive":
        raise ConfigError("invalid_spec", f"timeouts must be 'fixed' or 'adaptive', got "
                          f"{s['timeouts']!r}")
    manager = AdaptiveTimeoutManager(
        initial_timeout=s["initial_timeout_s"], multiplier=s["multiplier"],
        min_timeout=s["min_timeout_s"], max_timeout=s["max_timeout_s"], rule=s["timeout_rule"])
    warm = workload_models(s["workload"], seed + _WARMUP_SEED, warmup=True)
    for name, model in warm.items():  # what the manager learned from earlier traffic
        replay(manager, model.samples(int(s["warmup_calls"])), name)
    return manager


def tools_scenario(s: dict, seed: int, task: dict, *, limiter: RateLimiter | None = None,
                   budget_usd: float | None = None) -> CellOutput:
    scale = float(s["time_scale"])
    # 1. the timeout of each call is decided on the simulated clock (workloads.py), so the
    # outcomes, the tool messages, the tokens and the cost are the same at any machine load
    timeouts = SimulatedTimeouts(_timeout_policy(s, seed))
    tools = {name: KeyedTool(name, model, time_scale=scale, timeouts=timeouts)
             for name, model in workload_models(s["workload"], seed).items()}
    registry = ToolRegistry()
    for tool in tools.values():
        registry.register(tool.function, name=tool.name)
    # 2. the executor's real-clock timeout is only a backstop: twice the longest sleep a
    # decision can ask for, plus 10 s; a call it kills shows up as `clock_override`
    longest_s = max(s["fixed_timeout_s"], s["initial_timeout_s"], s["max_timeout_s"]) * scale
    backstop_s = 2 * longest_s + 10.0
    executor = ToolExecutor(registry, default_timeout=backstop_s, max_workers=s["tool_workers"])
    prompt = task.get("prompt") or SCENARIOS["tools"].prompt
    script = [[sim.call(name, {"query": f"step {t}", "n": t}) for name in tools]
              for t in range(int(s["turns"]))] + [sim.text("Done: every step has its results.")]
    llm, simulator = build_llm(s, seed, sim.Script(script), limiter, budget_usd)
    config = agent_config(s, budget_usd, parallel_tool_calls=s["parallel_tool_calls"],
                          max_workers=s["tool_workers"], tool_timeout=backstop_s)

    def number(call: dict) -> int:
        return int((call.get("arguments") or {}).get("n", 0))

    def true_ms(call: dict) -> float:
        tool = tools.get(call.get("name"))
        return tool.draw(number(call)) if tool else math.nan

    def decision(call: dict) -> tuple[float, bool] | None:
        return timeouts.decision(str(call.get("name")), number(call))

    return _run_agent(s, llm, simulator, registry, executor, None, config,
                      "You run tools step by step.", prompt, scale, true_ms, decision=decision)


# -- research: compression vs tokens and success ---------------------------------------------
_RESEARCH = {**_LLM, "context_tokens": 3000, "max_turns": 12, "malformed_arguments": 0.1}


def research_scenario(s: dict, seed: int, task: dict, *, limiter: RateLimiter | None = None,
                      budget_usd: float | None = None) -> CellOutput:
    with tempfile.TemporaryDirectory(prefix="agentlab-sweep-") as out:
        registry = research_tools(out, answers={"*": "Use your judgement."})
        executor = ToolExecutor(registry, default_timeout=30.0)
        llm, simulator = build_llm(s, seed, sim.Researcher(), limiter, budget_usd)

        def wrote_report(result: Any) -> bool:
            return getattr(result.state, "value", "") == "finished" and any(
                c["name"] == "write_file" and c["success"] for c in result.tool_calls_made)

        return _run_agent(s, llm, simulator, registry, executor,
                          TimeoutProbe(registry, None, 30.0), agent_config(s, budget_usd),
                          SYSTEM_PROMPT, task.get("prompt") or SCENARIOS["research"].prompt,
                          1.0, success=wrote_report)


# -- dag: ready queue vs levels --------------------------------------------------------------
_DAG = {"dag_calls": 20, "dag_max_deps": 3, "dag_workers": 4, "strategy": "ready",
        "priority": "fifo", "time_scale": 0.02, "median_ms": 100.0, "sigma": 0.8}


def dag_scenario(s: dict, seed: int, task: dict, **_: Any) -> CellOutput:
    scale = float(s["time_scale"])
    deps = random_dag(int(s["dag_calls"]), seed, max_deps=int(s["dag_max_deps"]))
    tool = KeyedTool("step", LogNormal(s["median_ms"], s["sigma"], seed=seed),
                     time_scale=scale, hang_s=0.0)
    registry = ToolRegistry()
    registry.register(tool.function, name="step")
    calls = [ToolCall(v, "step", {"query": v, "n": i}) for i, v in enumerate(deps)]
    durations = {c.id: tool.draw(c.arguments["n"]) for c in calls}
    timeout_s = 10.0 + 10 * sum(durations.values()) * scale / 1000  # never the limiting factor
    executor = DependencyAwareExecutor(registry, max_workers=int(s["dag_workers"]),
                                       default_timeout=timeout_s, strategy=s["strategy"],
                                       priority=s["priority"])
    results = executor.execute_with_dependencies(calls, deps)
    predicted = simulate_schedule(durations, deps, int(s["dag_workers"]), s["strategy"],
                                  s["priority"]).makespan_ms
    cp_ms, _ = critical_path(durations, deps)
    made = [{"turn": 1, "id": r.tool_call_id, "name": r.name, "success": r.success,
             "duration_ms": r.duration_ms, "error_code": r.error_code, "timeout_s": timeout_s}
            for r in results]
    rows = tool_call_rows(made, time_scale=scale, true_ms=lambda c: durations[c["id"]])
    ok = all(r.success for r in results)
    measured = executor.last_schedule.makespan_ms / scale
    run = {"state": "finished" if ok else "error", "stopped_reason": "completed" if ok else
           "tool_failed", "success": ok, "turns": 1, "tool_calls": len(rows),
           "tool_failures": sum(not r.success for r in results), "cost_usd": 0.0,
           "makespan_ms": measured, "sim_makespan_ms": predicted, "critical_path_ms": cp_ms,
           "work_ms": sum(durations.values()), "sim_makespan_ratio": predicted / cp_ms,
           "makespan_ratio": measured / cp_ms}
    return CellOutput(run, rows)


register_scenario("tools", tools_scenario, _TOOLS, uses_llm=True,
                  prompt="Run every tool once per step and report when all steps are done.")
register_scenario("research", research_scenario, _RESEARCH, uses_llm=True,
                  prompt="Research Python asyncio best practices and write them up as a "
                         "technical report saved to a file.")
register_scenario("dag", dag_scenario, _DAG, uses_llm=False)

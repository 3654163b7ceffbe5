"""The runtime a fleet worker builds for one attempt of a run: chapter 08's agent, unchanged.

Taught in ``notebooks/13_fleet.ipynb``. A worker does not run a different agent: it builds the
same ``AgentRuntime`` as ``agentlab demo`` (the research assistant; the simulator plays the
model unless the environment names an endpoint), with chapter 11's checkpoints on a store all
workers share, and plugs the fleet in at the runtime's public seams only:

- the tools: the research agent's, or the run's own (``RunSpec.tools``, ``usertools.py``) when
  this worker offers them (else ``ToolsMissingError``: the run ends ``tools_missing``);
- the executor: ``GuardedExecutor`` around the ``ToolExecutor`` (lease, ledger, tool limits);
- a gate: chapter 13's ``Approval`` (calls that need a human pause the run);
- the checkpoint store: ``FencedBackend`` around the shared backend (writes need the lease);
- the bill: every model call of every attempt is charged to the run's record (``cost.py``),
  and ``RunSpec.max_cost_usd`` is a gate on that bill;
- hooks: ``turn_start`` / ``turn_end`` go to the ledger (a turn's end only while the lease
  holds), and ``turn_start`` is a safe point at which a cancel flag or a lost lease turns into
  ``runtime.cancel()``.

``start_reference`` gives the attempt its ``resume_from``: the run's newest checkpoint, or, on
its first attempt, a checkpoint of the run's opening (system prompt and task) written under
the fleet's run id, so every attempt, the first included, is a resume of the same run.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ..approval import Approval
from ..checkpoints import CheckpointManager
from ..checkpoints.durable import run_metadata
from ..checkpoints.store import make_backend
from ..executor import ToolExecutor
from ..llm import LLMClient
from ..research import SYSTEM_PROMPT, research_tools
from ..runtime import AgentRuntime, RuntimeConfig
from ..sim.core import SimulatedAPI
from ..sim.faults import Latency
from ..sim.researcher import Researcher
from .cost import FleetCostCap, FleetSpend
from .guarded import FencedBackend, GuardedExecutor
from .ledger import Ledger
from .runs import RunSpec
from .usertools import ToolsMissingError, build_registry, offered_tools

__all__ = ["Attempt", "build_runtime", "start_reference", "fleet_llm"]


@dataclass
class Attempt:
    """What one attempt of a run needs from the worker that executes it."""

    run_id: str
    spec: RunSpec
    client: Any                      # redis.Redis
    ledger: Ledger
    lease_ok: Callable[[], bool]     # RunLease.check
    token: int | None                # the lease's fencing token (for the ledger)
    worker: str
    checkpoints: str                 # the shared store: a redis:// URL or a .db path
    output_dir: Path
    should_stop: Callable[[], bool] = lambda: False   # the cancel flag
    prefix: str = "agentlab:default:fleet:"
    on_unreachable: Callable[[], Any] = lambda: None  # Redis did not answer: the lease is lost


def fleet_llm(spec: RunSpec) -> LLMClient:
    """The model of a fleet run: the environment's endpoint, else the simulated researcher."""
    sim = SimulatedAPI(Researcher(), latency=Latency(first_token_ms=40, tokens_per_second=400,
                                                  time_scale=spec.time_scale), seed=0)
    return LLMClient.from_env(simulator=sim)


def build_runtime(at: Attempt) -> AgentRuntime:
    """The attempt's ``AgentRuntime`` (see the module docstring for what is plugged in)."""
    spec = at.spec
    if spec.tools is None:
        registry = research_tools(at.output_dir / at.run_id, answers={"*": "Use your judgement."})
    elif spec.tools in offered_tools():
        registry = build_registry(spec.tools, at.output_dir / at.run_id)
    else:
        raise ToolsMissingError(spec.tools, offered_tools())
    for name in spec.approve_tools:  # these calls wait for a human (chapter 13's approval)
        opts = registry.get_options(name)
        registry.register(registry.get_function(name), name=name, replace=True,
                          side_effects=opts["side_effects"], timeout=opts["timeout"],
                          requires_approval=True)
    inner = ToolExecutor(registry, default_timeout=30.0, max_workers=4)
    rt: AgentRuntime | None = None

    def lost() -> None:
        if rt is not None:
            rt.cancel()

    guarded = GuardedExecutor(inner, at.run_id, at.lease_ok, at.ledger, limits=spec.tool_limits,
                              client=at.client, tool_latency_s=spec.tool_latency_s,
                              crash_on_tool=spec.crash_on_tool, on_lost=lost, prefix=at.prefix,
                              should_stop=at.should_stop)
    folder = at.output_dir.parent / "checkpoints"  # used only by file-based stores
    store = FencedBackend(make_backend(at.checkpoints, folder), at.run_id, at.lease_ok,
                          on_lost=lost, on_unreachable=at.on_unreachable,
                          on_recorded=lambda rec: at.ledger.call_recorded(
                              at.run_id, f"{at.run_id}:{rec.get('tool_call_id')}"))
    cm = CheckpointManager(folder, auto_save_interval=1,
                           max_checkpoints=None, store=store, run_id=at.run_id)
    config = RuntimeConfig(max_turns=spec.max_turns, max_total_time=600.0)
    rt = AgentRuntime(fleet_llm(spec), registry, SYSTEM_PROMPT, config, executor=guarded,
                      extensions=[Approval()], checkpoints=cm)

    def turn_start(event: dict) -> None:  # a safe point: stop here if asked to, or superseded
        if not at.lease_ok():  # (False too when Redis does not answer: then nothing is written)
            rt.cancel()
            return
        at.ledger.step(at.run_id, event["turn"], "turn_start", at.token, at.worker)
        if at.should_stop():
            rt.cancel()

    def turn_end(event: dict) -> None:  # a step counts as done only under a valid lease: a
        if at.lease_ok():                  # superseded holder's turn ran none of its tools
            at.ledger.step(at.run_id, event["turn"], "turn_end", at.token, at.worker)

    rt.on("turn_start", turn_start)
    rt.on("turn_end", turn_end)
    record = f"{at.prefix}run:{at.run_id}"  # the bill of every attempt (fleet/cost.py)
    FleetSpend(rt, at.client, record, f"{at.prefix}ledger:model:{at.run_id}")
    if spec.max_cost_usd is not None:
        rt.add_gate(FleetCostCap(rt, at.client, record, spec.max_cost_usd, at.on_unreachable))
    return rt


def start_reference(rt: AgentRuntime, run_id: str, task: str) -> str:
    """The checkpoint an attempt resumes from: the run's newest, else its opening (written now)."""
    cm: CheckpointManager = rt.checkpoints
    saved = cm.list_checkpoints(run_id)
    if saved:
        return saved[-1]["id"]
    messages = rt.messages.get_messages() + [{"role": "user", "content": task}]
    meta = run_metadata("start", task, model=getattr(rt.llm, "model", None),
                        tools=rt.registry.list_tools())
    return cm.save(0, messages, {}, [], meta, run_id=run_id)

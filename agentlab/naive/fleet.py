"""A fleet the way a first attempt writes it, defects included (chapter 13's pitfall).

Shown and measured in ``notebooks/13_fleet.ipynb`` beside ``agentlab.fleet``. Do not use it.
It is the same research agent on the same Celery and Redis, with the defaults a tutorial
leaves in place:

- **acks early** (Celery's default ``task_acks_late=False``, prefetch 4): the broker forgets a
  message the moment a worker takes it, so a worker killed mid-run takes its run, and the
  three it prefetched, with it. Nothing ever runs them: they are lost, silently.
- with ``acks_late=True`` (the half-fix, ``AGENTLAB_NAIVE_ACKS_LATE=1``) the message comes
  back, but there is **no lease and no checkpoint or durable log**: the redelivered run starts
  over and every tool call it had completed runs again (a report written twice, an email
  sent twice), and a run longer than the visibility timeout runs on two workers at once.

Tool calls are counted by the same ledger as the real fleet's, so the two are measured alike.
"""
from __future__ import annotations

import os
import socket
from typing import Any

from celery import Celery

from ..executor import ToolExecutor
from ..fleet.agent import fleet_llm
from ..fleet.app import FleetConfig, broker_url
from ..fleet.connection import RedisTarget
from ..fleet.guarded import GuardedExecutor
from ..fleet.ledger import Ledger
from ..fleet.runs import RunRecords, RunSpec, new_fleet_run_id
from ..research import SYSTEM_PROMPT, research_tools
from ..runtime import AgentRuntime, RuntimeConfig

__all__ = ["NAIVE_APP", "NAIVE_TASK", "NAIVE_QUEUE", "naive_settings", "naive_books",
           "naive_submit", "app"]

NAIVE_APP = "agentlab.naive.fleet"
NAIVE_TASK = "agentlab.naive.fleet.run"
#: Its own queue, so the naive fleet and the real one can share a Redis.
NAIVE_QUEUE = "agentlab_naive"


def naive_settings(cfg: FleetConfig, acks_late: bool = False) -> dict:
    """Celery's defaults (acks early, prefetch 4), JSON, and the same restore check as the fleet."""
    return {"broker_url": broker_url(cfg.redis_url), "result_backend": broker_url(cfg.redis_url),
            "task_serializer": "json", "result_serializer": "json", "accept_content": ["json"],
            "task_acks_late": acks_late, "task_default_queue": NAIVE_QUEUE,
            "broker_transport_options": {"visibility_timeout": cfg.visibility_timeout_s,
                                         "unacked_restore_interval": 1,
                                         "unacked_restore_throttle": 1},
            "broker_connection_retry_on_startup": True, "worker_hijack_root_logger": False}


def naive_books(client: Any, cfg: FleetConfig) -> tuple[RunRecords, Ledger]:
    """The naive fleet's run records and ledger: its own namespace, so its counts never mix
    with the real fleet's in the same Redis."""
    prefix = f"{cfg.prefix}naive:"
    return RunRecords(client, prefix), Ledger(client, prefix)


app = Celery("agentlab-naive")
app.conf.update(naive_settings(FleetConfig.from_env(),
                               acks_late=os.environ.get("AGENTLAB_NAIVE_ACKS_LATE") == "1"))


@app.task(name=NAIVE_TASK)
def naive_run(run_id: str) -> str:
    """Run the task from the start, every time it is delivered (no lease, no resume)."""
    cfg = FleetConfig.from_env()
    client = RedisTarget(cfg.redis_url).client
    records, ledger = naive_books(client, cfg)
    spec = RunSpec.from_dict(records.get(run_id)["spec"])
    records.update(run_id, state="running", worker=socket.gethostname())
    registry = research_tools(f"{cfg.fleet_dir}/naive/{run_id}", answers={"*": "Go on."})
    executor = GuardedExecutor(ToolExecutor(registry), run_id, lambda: True, ledger,
                               client=client, tool_latency_s=spec.tool_latency_s)
    rt = AgentRuntime(fleet_llm(spec), registry, SYSTEM_PROMPT,
                      RuntimeConfig(max_turns=spec.max_turns), executor=executor)
    result = rt.run(spec.task)
    records.update(run_id, state=result.state.value, result={"turns": result.turns})
    ledger.run_finished(run_id)
    return result.state.value


def naive_submit(records: RunRecords, task: str, celery: Any = None, **options: Any) -> str:
    """Record a run (in ``naive_books``' records) and queue it on the naive fleet; its id."""
    run_id = new_fleet_run_id()
    records.create(run_id, RunSpec(task=task, **options))
    (celery or app).send_task(NAIVE_TASK, args=[run_id])
    return run_id

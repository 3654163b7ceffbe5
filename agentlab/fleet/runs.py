"""The fleet's book of runs: one Redis hash per run, readable from any machine (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. A run submitted to the fleet is first a record here,
then a Celery message; the record is what ``agentlab runs list|show`` and the notebook's table
read, and where a worker writes what happened. Keys (``prefix`` = ``agentlab:default:fleet:``):

    <prefix>run:<run_id>      hash: run_id, task, state, spec, attempts, worker, created_at,
                              updated_at, result, error, pending   (JSON where structured)
    <prefix>runs              sorted set of run ids by submission time
    <prefix>cancel:<run_id>   present when a cancel was asked for (checked at safe points)

``state`` is ``queued`` (submitted, no worker has it), ``running``, ``paused`` (waiting for a
human to approve a call: the run holds no worker), a terminal ``RunState`` value
(``finished``, ``exhausted``, ``cancelled``, ``error``), or ``submit_failed`` (terminal: the
record was written but its message could not be sent; ``Fleet.submit`` raised). ``enqueued`` is
set once the first message was sent, so the reaper can tell such a ghost from a run whose
message was lost. ``attempts`` counts deliveries that took the lease, ``infra_losses`` those
of them that the infrastructure ended (worker lost, Redis unreachable). ``model_calls``,
``spent_prompt_tokens``, ``spent_completion_tokens`` and ``spent_usd`` are the bill of every
attempt (``cost.py``).

``RunSpec`` is what a run needs besides its task: plain JSON, so it crosses the queue.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import ConfigError
from ..redaction import redact

__all__ = ["RunSpec", "RunRecords", "TERMINAL", "QUEUED", "RUNNING", "PAUSED", "SUBMIT_FAILED",
           "new_fleet_run_id"]

QUEUED, RUNNING, PAUSED, SUBMIT_FAILED = "queued", "running", "paused", "submit_failed"
#: States a fleet run never leaves (the terminal ``RunState`` values, and ``submit_failed``).
TERMINAL = frozenset({"finished", "exhausted", "cancelled", "error", SUBMIT_FAILED})


def new_fleet_run_id() -> str:
    """A fresh run id; it is also the run's ``run_id`` in its checkpoints and result."""
    return f"run-{uuid.uuid4()}"


@dataclass
class RunSpec:
    """How to run a task on the fleet (the research agent on the simulator by default).

    Attributes:
        task: the user input.
        time_scale: the simulated model's latency scale (0: answer at once; 1: the article's pace).
        tool_latency_s: extra seconds each tool call takes (simulated I/O).
        max_turns: the run's turn budget.
        max_attempts: attempts that may crash their worker before the run ends in ERROR
            (``too_many_attempts``): a run that keeps killing its worker must not loop.
        max_infra_losses: attempts the infrastructure may end (a worker killed from outside
            and found by the reaper, Redis unreachable) before the run ends in ERROR
            (``too_many_infra_losses``); counted apart, so a busy fleet does not fail a run.
        tool_limits: at most this many concurrent calls of a tool across the fleet, e.g.
            ``{"web_search": 2}``.
        approve_tools: tools whose calls wait for a human (``requires_approval``).
        crash_on_tool: a teaching fault: the worker process kills itself (SIGKILL) when the
            run calls this tool, as a poison run would.
        tools: the run's tools as an import string (``"mypkg.tools:make_registry"``,
            ``usertools.py``); None: the research agent's. Only a worker started with
            ``--tools`` naming the same string runs it.
        max_cost_usd: the run's budget in dollars across all its attempts (model calls of
            killed attempts included: ``cost.py``); None: no cap.
    """

    task: str
    time_scale: float = 0.0
    tool_latency_s: float = 0.0
    max_turns: int = 12
    max_attempts: int = 3
    max_infra_losses: int = 20
    tool_limits: dict = field(default_factory=dict)
    approve_tools: list = field(default_factory=list)
    crash_on_tool: str | None = None
    tools: str | None = None
    max_cost_usd: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.task, str) or not self.task.strip():
            raise ConfigError("invalid_argument", "a fleet run needs a task: a non-empty string")
        for name in ("time_scale", "tool_latency_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError("invalid_config", f"{name} must be a number >= 0, not {value!r}")
        cap = self.max_cost_usd
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))
                                or not cap > 0):
            raise ConfigError("invalid_config", f"max_cost_usd must be a number > 0, not {cap!r}")
        if self.tools is not None and (not isinstance(self.tools, str) or ":" not in self.tools):
            raise ConfigError("invalid_config", f"tools must be 'module:function', not "
                              f"{self.tools!r}")
        for name in ("max_turns", "max_attempts", "max_infra_losses"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError("invalid_config", f"{name} must be an integer >= 1, not {value!r}")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "RunSpec":
        known = {k: v for k, v in dict(data).items() if k in cls.__dataclass_fields__}
        return cls(**known)


def _text(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class RunRecords:
    """Read and write the fleet's run records in Redis (see the module docstring)."""

    def __init__(self, client: Any, prefix: str = "agentlab:default:fleet:") -> None:
        self.client, self.prefix = client, prefix

    def key(self, run_id: str) -> str:
        return f"{self.prefix}run:{run_id}"

    # -- writing
    def create(self, run_id: str, spec: RunSpec) -> dict:
        """Record a new run as ``queued``; refuses an id that exists."""
        now = time.time()
        fields = {"run_id": run_id, "task": spec.task, "state": QUEUED, "attempts": 0,
                  "spec": json.dumps(spec.to_dict()), "created_at": now, "updated_at": now,
                  "worker": ""}
        if not self.client.hsetnx(self.key(run_id), "run_id", run_id):
            raise ConfigError("invalid_argument", f"a fleet run {run_id!r} exists already")
        pipe = self.client.pipeline()
        pipe.hset(self.key(run_id), mapping=fields)
        pipe.zadd(f"{self.prefix}runs", {run_id: now})
        pipe.execute()
        return self.get(run_id)

    def update(self, run_id: str, **fields: Any) -> None:
        """Set fields (dicts and lists are stored as JSON) and ``updated_at``.

        What a worker writes (results, errors, a paused run's pending arguments) goes through
        ``agentlab.redaction`` first: no key or credential argument reaches the record."""
        plain = {k: json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v)
                 for k, v in redact(fields).items()}
        plain["updated_at"] = time.time()
        self.client.hset(self.key(run_id), mapping=plain)

    def add_attempt(self, run_id: str) -> int:
        """Count one more delivery that took the lease; returns the new count."""
        return int(self.client.hincrby(self.key(run_id), "attempts", 1))

    def add_infra_loss(self, run_id: str, token: Any = None) -> int:
        """Count one attempt ended by the infrastructure (not by the run); the new count.

        ``token`` is the lost attempt's fencing token (default: the newest, read from
        ``<prefix>fence:<run_id>``): an attempt is counted once, however many parties (the
        attempt itself, the reaper) notice that it was lost."""
        if token is None:
            token = self.client.get(f"{self.prefix}fence:{run_id}") or 0
        if not self.client.sadd(f"{self.prefix}infra:{run_id}", token):
            return int(self.client.hget(self.key(run_id), "infra_losses") or 0)
        return int(self.client.hincrby(self.key(run_id), "infra_losses", 1))

    def request_cancel(self, run_id: str) -> None:
        """Ask the run to stop: a queued run never starts, a running one stops at a safe point."""
        self.client.set(f"{self.prefix}cancel:{run_id}", "1")

    def cancel_requested(self, run_id: str) -> bool:
        return bool(self.client.exists(f"{self.prefix}cancel:{run_id}"))

    # -- reading
    def get(self, run_id: str) -> dict | None:
        """The run's record with JSON fields decoded, or None for an unknown run."""
        return self._decode(self.client.hgetall(self.key(run_id)))

    @staticmethod
    def _decode(raw: dict) -> dict | None:
        if not raw:
            return None
        rec = {_text(k): _text(v) for k, v in raw.items()}
        for name in ("spec", "result", "error", "pending"):
            if rec.get(name):
                rec[name] = json.loads(rec[name])
        for name in ("created_at", "updated_at"):
            rec[name] = float(rec.get(name) or 0)
        for name in ("attempts", "infra_losses", "model_calls", "spent_prompt_tokens",
                     "spent_completion_tokens"):
            rec[name] = int(rec.get(name) or 0)
        rec["spent_usd"] = round(float(rec.get("spent_usd") or 0.0), 6)
        return rec

    def ids(self, limit: int | None = None) -> list[str]:
        """Run ids, oldest first (the last ``limit`` when given)."""
        start = -limit if limit else 0
        return [_text(x) for x in self.client.zrange(f"{self.prefix}runs", start, -1)]

    def all(self, limit: int | None = None) -> list[dict]:
        """Every run's record, oldest first."""
        pipe = self.client.pipeline()
        for run_id in self.ids(limit):
            pipe.hgetall(self.key(run_id))
        return [r for r in map(self._decode, pipe.execute()) if r is not None]

    def counts(self) -> dict[str, int]:
        """How many runs are in each state."""
        out: dict[str, int] = {}
        for rec in self.all():
            out[rec["state"]] = out.get(rec["state"], 0) + 1
        return dict(sorted(out.items()))

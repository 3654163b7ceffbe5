"""Chapter 13 — from one process to a fleet: state, checkpoints and the tool log in Redis.

Taught in ``notebooks/13_fleet.ipynb``:

- ``connection.py``: a Redis URL names the server, the credentials and the tenant; Redis
  failures become errors with codes (``redis_unavailable`` is retryable);
- ``state_store.py``: ``RedisStateStore`` — chapter 05's ``StateStore`` contract in Redis;
- ``checkpoint_store.py``: ``RedisCheckpointBackend`` — chapter 11's checkpoints and durable
  tool-result log, picked by ``CheckpointManager(store="redis://...")``;
- ``tenants.py``: ``create_tenant`` — one ACL user per tenant, limited to its own keys;
- ``decisions.py``: ``approve`` / ``reject`` a paused run's call from its store's URL;
- ``server.py``: ``RedisServer`` — a throwaway local server for tests and notebooks.

The fleet itself (imported by name, so that ``import agentlab.fleet`` stays free of Celery):

- ``app.py``: the Celery app and ``FleetConfig`` (``AGENTLAB_REDIS_URL``), with the settings a
  kill -9 needs (late acks, prefetch 1, explicit visibility timeout and restore check);
- ``runs.py``: ``RunSpec`` and the run records; ``control.py``: ``Fleet`` (submit, wait,
  cancel, approve, reject), what ``agentlab submit`` and ``agentlab runs`` use;
- ``tasks.py``: one delivery of a run (lease, attempts, resume, record); ``agent.py``: the
  unchanged ``AgentRuntime`` it builds; ``lease.py``: ``RunLease`` and ``Heartbeat``;
- ``guarded.py``: tool calls and durable writes only while the lease holds; ``limits.py``:
  ``ToolSemaphore``; ``ledger.py``: what really executed, counted in Redis;
- ``reach.py``: a Redis that does not answer is ``FleetUnavailableError`` for callers and a lost
  lease for workers; ``reaper.py``: runs whose worker is gone are handed on within seconds,
  ghosts of failed submits are laid; ``usertools.py``: the user's own tools (``--tools``);
  ``cost.py``: the bill of every attempt and the fleet's cost cap;
- ``local.py``: ``LocalFleet`` (Redis and workers as subprocesses); ``cells.py``: chapter 14's
  sweeps on the fleet.

``agentlab.fleet`` imports the runtime, checkpoints and state chapters, never the reverse.
"""
from ..extras import require

require("fleet")  # one line with the pip command when the extra is missing
from .checkpoint_store import RedisCheckpointBackend
from .connection import RedisTarget, safe_url
from .decisions import approve, reject
from .server import RedisServer, find_redis_server
from .state_store import RedisStateStore
from .tenants import create_tenant, delete_tenant, tenant_url

__all__ = ["RedisStateStore", "RedisCheckpointBackend", "RedisTarget", "RedisServer",
           "find_redis_server", "create_tenant", "delete_tenant", "tenant_url", "safe_url", "approve", "reject"]

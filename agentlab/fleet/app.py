"""The Celery app of the fleet, and the one place its settings are decided (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. Redis is both the broker and the result store; the
settings below are the ones ``../shared/FLEET_NOTES.md`` found necessary on Celery 5.7:

- ``task_acks_late`` + ``task_reject_on_worker_lost``: a message is acknowledged when the run
  returns, not when a worker takes it, so a worker killed mid-run leaves it to be redelivered.
- ``worker_prefetch_multiplier=1``: a worker holds one message per slot, not four; a kill
  strands only the runs it was actually running.
- ``visibility_timeout`` (how long an unacknowledged message waits before the broker gives it
  to another worker) set explicitly, with ``unacked_restore_interval`` and
  ``unacked_restore_throttle`` at 1: by default kombu checks only every 100 s. A run longer
  than the timeout is kept from redelivery by its heartbeat (``lease.Heartbeat``), and the
  lease makes a redelivery that happens anyway harmless.
- JSON only (no pickle: a worker as root refuses it, and a queue should carry data).
- A tenant (the URL's ``?tenant=`` or user name) gets a broker of its own: kombu's and the
  result backend's ``global_keyprefix`` put its queue, unacknowledged messages, results and
  channels under ``agentlab:<tenant>:broker:``. A worker serves the tenant of its URL only, and
  a tenant's ACL user can run workers without reaching any other tenant's messages.

``FleetConfig.from_env()`` reads ``AGENTLAB_REDIS_URL`` (default ``redis://127.0.0.1:6379/0``)
and the ``AGENTLAB_FLEET_*`` variables; a worker started by ``agentlab worker`` and a submitter
in a notebook agree because both read the same environment. ``app`` is built from it at import
(no connection is made until a message is sent).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from celery import Celery

from .connection import RedisTarget

__all__ = ["FleetConfig", "celery_settings", "fleet_prefix", "broker_url", "broker_key",
           "broker_prefix", "make_app",
           "app", "TASK_NAME", "DEFAULT_REDIS_URL", "QUEUE"]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
#: The Celery task that executes one attempt of a run (``agentlab.fleet.tasks``).
TASK_NAME = "agentlab.fleet.run"
#: The fleet's Celery queue (a Redis list of that name, inside the broker's key prefix).
QUEUE = "agentlab"


@dataclass(frozen=True)
class FleetConfig:
    """Where the fleet keeps things and how patient it is (all from the environment).

    Attributes:
        redis_url: broker, result store, run records, leases (``AGENTLAB_REDIS_URL``).
        prefix: namespace of the fleet's own Redis keys (``AGENTLAB_FLEET_PREFIX``; default
            ``agentlab:<tenant>:fleet:``, the tenant of the URL as in ``connection.py``).
        visibility_timeout_s: seconds before an unacknowledged message is redelivered
            (``AGENTLAB_FLEET_VISIBILITY_TIMEOUT``, default 30).
        lease_ttl_s: a dead holder's lease is free after this long (``AGENTLAB_FLEET_LEASE_TTL``,
            default 3); renewed every quarter of it. It decides how fast a killed worker's
            runs resume: the reaper hands them on once their lease has expired.
        reaper_interval_s: how often a worker's reaper looks for runs to hand on
            (``AGENTLAB_FLEET_REAPER_INTERVAL``, default 0.5; 0 turns it off).
        checkpoints: the checkpoint store of fleet runs, shared by the workers
            (``AGENTLAB_FLEET_CHECKPOINTS``; default the Redis URL itself: chapter 13's
            ``RedisCheckpointBackend``; a ``.db`` path selects SQLite on a shared disk).
        fleet_dir: files of fleet runs, e.g. ``write_file`` output (``AGENTLAB_FLEET_DIR``).
    """

    redis_url: str = DEFAULT_REDIS_URL
    prefix: str = "agentlab:default:fleet:"
    visibility_timeout_s: float = 30.0
    lease_ttl_s: float = 3.0
    checkpoints: str = ""
    fleet_dir: str = ""
    reaper_interval_s: float = 0.5

    @classmethod
    def from_env(cls, env: dict | None = None) -> "FleetConfig":
        env = os.environ if env is None else env
        fleet_dir = env.get("AGENTLAB_FLEET_DIR") or str(Path(tempfile.gettempdir()) / "agentlab-fleet")
        url = env.get("AGENTLAB_REDIS_URL") or DEFAULT_REDIS_URL
        return cls(redis_url=url, prefix=env.get("AGENTLAB_FLEET_PREFIX") or fleet_prefix(url),
                   visibility_timeout_s=float(env.get("AGENTLAB_FLEET_VISIBILITY_TIMEOUT") or 30),
                   lease_ttl_s=float(env.get("AGENTLAB_FLEET_LEASE_TTL") or 3),
                   checkpoints=env.get("AGENTLAB_FLEET_CHECKPOINTS") or url,
                   fleet_dir=fleet_dir,
                   reaper_interval_s=float(env.get("AGENTLAB_FLEET_REAPER_INTERVAL") or 0.5))

    def env(self) -> dict[str, str]:
        """The environment variables that make a worker process use this configuration."""
        return {"AGENTLAB_REDIS_URL": self.redis_url, "AGENTLAB_FLEET_PREFIX": self.prefix,
                "AGENTLAB_FLEET_VISIBILITY_TIMEOUT": str(self.visibility_timeout_s),
                "AGENTLAB_FLEET_LEASE_TTL": str(self.lease_ttl_s),
                "AGENTLAB_FLEET_CHECKPOINTS": self.checkpoints, "AGENTLAB_FLEET_DIR": self.fleet_dir,
                "AGENTLAB_FLEET_REAPER_INTERVAL": str(self.reaper_interval_s)}


def fleet_prefix(url: str) -> str:
    """``agentlab:<tenant>:fleet:``: the fleet's keys sit in the URL's tenant namespace."""
    return RedisTarget(url).prefix + "fleet:"


def broker_url(url: str) -> str:
    """The URL without agentlab's own ``tenant=`` query parameter (kombu would not know it)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "tenant"]
    return urlunsplit(parts._replace(query=urlencode(query)))


def broker_key(cfg: FleetConfig, name: str) -> str:
    """The Redis key of the broker's ``name`` (``unacked``, ``unacked_index``, the queue)."""
    return celery_settings(cfg)["broker_transport_options"].get("global_keyprefix", "") + name


def broker_prefix(url: str) -> str:
    """Where the broker's keys live: nowhere special for the ``default`` tenant (kombu's own
    names), ``agentlab:<tenant>:broker:`` for any other, so that a tenant's queue, its
    unacknowledged messages, its results and its pub/sub channels are all inside the key and
    channel pattern of its ACL user (``tenants.py``), apart from every other tenant's."""
    tenant = RedisTarget(url).tenant
    return "" if tenant == "default" else f"agentlab:{tenant}:broker:"


def celery_settings(cfg: FleetConfig) -> dict:
    """The Celery configuration of the fleet (see the module docstring for why each)."""
    keyprefix = broker_prefix(cfg.redis_url)
    namespace = {"global_keyprefix": keyprefix} if keyprefix else {}
    return {
        "broker_url": broker_url(cfg.redis_url),
        "result_backend": broker_url(cfg.redis_url),
        "task_serializer": "json", "result_serializer": "json", "accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "worker_prefetch_multiplier": 1,
        "broker_transport_options": {"visibility_timeout": cfg.visibility_timeout_s,
                                     "unacked_restore_interval": 1,
                                     "unacked_restore_throttle": 1, **namespace},
        "result_backend_transport_options": {"visibility_timeout": cfg.visibility_timeout_s,
                                             **namespace},
        "result_expires": 24 * 3600,
        "broker_connection_retry_on_startup": True,
        "worker_hijack_root_logger": False,
        "task_default_queue": QUEUE,
    }


def make_app(cfg: FleetConfig | None = None) -> Celery:
    """A Celery app with the fleet's settings; its worker loads the fleet's tasks (runs, and
    chapter 14's sweep cells)."""
    celery = Celery("agentlab", include=["agentlab.fleet.tasks", "agentlab.fleet.cells"])
    celery.conf.update(celery_settings(cfg or FleetConfig.from_env()))
    return celery


#: The fleet's app (``celery -A agentlab.fleet.app worker`` and ``agentlab worker`` use it).
app = make_app()

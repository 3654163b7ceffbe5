"""A fleet on this machine: a Redis server and worker processes, started and stopped cleanly.

Used by ``notebooks/13_fleet.ipynb``, the tests and the benchmarks, so each starts its own
fleet and leaves nothing behind. Following ``../shared/FLEET_NOTES.md``:

- Redis: ``server.RedisServer`` (a free port, no persistence, ready when PING answers).
- A worker is ``celery -A agentlab.fleet.app worker`` (what ``agentlab worker`` runs) in a new session (``start_new_session=True``): its pool
  children and any subprocess a tool starts share its process group, so ``kill()`` (SIGKILL to
  the group, what a machine going away looks like) leaves no orphan behind. Ready when the
  log says `` ready.``. ``stop()`` is a warm shutdown with a timeout, then SIGKILL.

    with LocalFleet(workers=2) as lf:
        run_id = lf.fleet.submit("Research asyncio")
        lf.fleet.wait(run_id)

Without ``with``, ``close()`` also runs when the interpreter exits (``atexit``; in a notebook:
when the kernel shuts down or restarts), so a notebook can leave its fleet up after Run All
for the controls to keep using, and still leave nothing behind. A process killed outright runs
no ``atexit``: then a guard process (``guard.py``) stops the workers and Redis it started.
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .app import FleetConfig, fleet_prefix
from .control import Fleet
from .guard import FleetGuard
from .server import RedisServer

__all__ = ["WorkerProcess", "LocalFleet", "worker_args", "FLEET_APP"]

#: The Celery app module of the fleet (``celery -A agentlab.fleet.app worker``).
FLEET_APP = "agentlab.fleet.app"


def worker_args(name: str, concurrency: int = 1, pool: str = "prefork",
                loglevel: str = "INFO", queue: str = "agentlab") -> list[str]:
    """The ``celery worker`` arguments of a fleet worker (``agentlab worker`` uses them too):
    the fleet's queue, and no mingle/gossip/heartbeat chatter (a worker is ready in ~0.5 s)."""
    return ["worker", f"--concurrency={concurrency}", f"--pool={pool}",
            f"--hostname={name}@%h", f"--loglevel={loglevel}", f"--queues={queue}",
            "--without-mingle", "--without-gossip", "--without-heartbeat"]


def _stop_group(proc: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM, wait up to ``timeout_s``, then SIGKILL the whole process group."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout_s)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class WorkerProcess:
    """One worker process of the Celery app ``app`` (and its pool) in its own session."""

    def __init__(self, cfg: FleetConfig, name: str, *, concurrency: int = 1,
                 pool: str = "prefork", log_dir: str | os.PathLike | None = None,
                 extra_env: dict | None = None, app: str = FLEET_APP,
                 queue: str = "agentlab", guard: FleetGuard | None = None) -> None:
        self.cfg, self.name, self.concurrency, self.pool = cfg, name, concurrency, pool
        self.guard = guard  # told about every start and stop of the worker's process group
        self.app, self.queue = app, queue
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="agentlab-worker-")) / f"{name}.log"
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> "WorkerProcess":
        env = {**os.environ, **self.cfg.env(), **self.extra_env}
        cmd = [sys.executable, "-m", "celery", "-A", self.app,
               *worker_args(self.name, self.concurrency, self.pool, queue=self.queue)]
        self._log = open(self.log_path, "ab")
        self._offset = self.log_path.stat().st_size
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if self.guard is not None:
            self.guard.watch(self.proc.pid)
        return self

    def log(self) -> str:
        """What the worker logged since it was (re)started."""
        with open(self.log_path, "rb") as f:
            f.seek(self._offset)
            return f.read().decode("utf-8", "replace")

    def wait_ready(self, timeout_s: float = 30.0) -> "WorkerProcess":
        deadline = time.monotonic() + timeout_s
        while " ready." not in self.log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise ConfigError("worker_start_failed", f"worker {self.name} did not start "
                                  f"(exit {self.proc.poll()}); log: {self.log()[-800:]}")
            time.sleep(0.05)
        return self

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """kill -9 of the worker's whole process group: the machine went away."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
            self._log.close()
            if self.guard is not None:
                self.guard.forget(self.proc.pid)

    def restart(self) -> "WorkerProcess":
        self.kill()
        return self.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc is not None:
            _stop_group(self.proc, timeout_s)
            self._log.close()
            if self.guard is not None:
                self.guard.forget(self.proc.pid)


class LocalFleet:
    """Redis plus ``workers`` worker processes, and a ``Fleet`` handle on them (``.fleet``).

    ``appendonly=True`` gives Redis an append-only file, so ``self.redis.kill()`` and
    ``.restart()`` are an outage, not a loss of the fleet's state. ``tools`` is the workers'
    ``--tools`` (``usertools.py``); ``extra_env`` goes into every worker's environment."""

    def __init__(self, workers: int = 2, *, concurrency: int = 1, pool: str = "prefork",
                 visibility_timeout_s: float = 30.0, lease_ttl_s: float = 3.0,
                 redis_url: str | None = None, fleet_dir: str | None = None,
                 wait: bool = True, appendonly: bool = False,
                 reaper_interval_s: float = 0.5, tools: str | None = None,
                 extra_env: dict | None = None) -> None:
        self.closed = False
        self.guard = FleetGuard()  # stops what this starts if this process is killed outright
        self.redis = None
        if not redis_url:
            try:
                self.redis = RedisServer.start(appendonly=appendonly)
            except BaseException:
                self.guard.close()
                raise
            self.redis.guard = self.guard
            self.guard.watch(self.redis.process.pid)  # its own session: pid == process group
        atexit.register(self.close)  # in a notebook: at kernel shutdown, if no cell closed it
        self.dir = Path(fleet_dir or tempfile.mkdtemp(prefix="agentlab-fleet-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        url = redis_url or self.redis.url
        self.cfg = FleetConfig(redis_url=url, prefix=fleet_prefix(url),
                               visibility_timeout_s=visibility_timeout_s, lease_ttl_s=lease_ttl_s,
                               checkpoints=url, fleet_dir=str(self.dir),
                               reaper_interval_s=reaper_interval_s)
        self.workers: list[WorkerProcess] = []
        #: what every worker gets besides the config: its ``--tools`` and ``extra_env``
        self.worker_env = {**({"AGENTLAB_FLEET_TOOLS": tools} if tools else {}),
                           **(extra_env or {})}
        try:
            for i in range(workers):
                self.workers.append(WorkerProcess(self.cfg, f"w{i + 1}", concurrency=concurrency,
                                                  pool=pool, log_dir=self.dir,
                                                  extra_env=self.worker_env, guard=self.guard))
            for w in self.workers if wait else ():
                w.wait_ready()
            self.fleet = Fleet(self.cfg)
        except BaseException:  # never leave a server or a worker behind
            self.close()
            raise

    def add_worker(self, **options: Any) -> WorkerProcess:
        options.setdefault("extra_env", self.worker_env)
        options.setdefault("guard", self.guard)
        w = WorkerProcess(self.cfg, f"w{len(self.workers) + 1}", log_dir=self.dir, **options)
        self.workers.append(w)
        return w.wait_ready()

    def close(self) -> None:
        """Stop the workers and the Redis server; a second call does nothing."""
        if self.closed:
            return
        self.closed = True
        atexit.unregister(self.close)
        for w in self.workers:  # all at once: a kernel's shutdown waits only a few seconds
            if w.alive:
                try:
                    os.killpg(w.proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for w in self.workers:
            w.stop()
        if self.redis is not None:
            self.redis.stop()
        self.guard.close()

    def __enter__(self) -> "LocalFleet":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

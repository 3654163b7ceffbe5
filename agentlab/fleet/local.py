"""A fleet on this machine: a Redis server and worker processes, started and stopped cleanly.

Used by ``notebooks/13_fleet.ipynb``, the tests and the benchmarks, so each starts its own
fleet and leaves nothing behind. Following ``../shared/FLEET_NOTES.md``:

- Redis on a free port (``bind(('127.0.0.1', 0))``), no persistence, ready when PING answers.
- A worker is ``agentlab worker`` in a new session (``start_new_session=True``): its pool
  children and any subprocess a tool starts share its process group, so ``kill()`` (SIGKILL to
  the group, what a machine going away looks like) leaves no orphan behind. Ready when the
  log says `` ready.``. ``stop()`` is a warm shutdown with a timeout, then SIGKILL.

    with LocalFleet(workers=2) as lf:
        run_id = lf.fleet.submit("Research asyncio")
        lf.fleet.wait(run_id)
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from ..errors import ConfigError
from .app import FleetConfig
from .control import Fleet

__all__ = ["RedisServer", "WorkerProcess", "LocalFleet", "free_port", "redis_binary"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def redis_binary() -> str:
    """``redis-server`` from the PATH (Debian: ``apt-get install redis-server``)."""
    found = shutil.which("redis-server") or ("/usr/bin/redis-server"
                                             if os.path.exists("/usr/bin/redis-server") else None)
    if found is None:
        raise ConfigError("redis_not_installed", "no redis-server found: install it "
                          "(apt-get install redis-server, brew install redis) or start one "
                          "elsewhere and set AGENTLAB_REDIS_URL")
    return found


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


class RedisServer:
    """A throwaway ``redis-server`` on a free port (``.url``); ``stop()`` ends it."""

    def __init__(self, port: int | None = None, *, start_timeout_s: float = 10.0) -> None:
        self.port = port or free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = subprocess.Popen(
            [redis_binary(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        client, deadline = redis.Redis(port=self.port), time.monotonic() + start_timeout_s
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise ConfigError("redis_start_failed", f"redis-server on port {self.port} "
                                      "did not answer PING") from None
                time.sleep(0.01)
        client.close()

    def stop(self) -> None:
        _stop_group(self.proc, 3.0)


class WorkerProcess:
    """One ``agentlab worker`` process (and its pool) in its own session."""

    def __init__(self, cfg: FleetConfig, name: str, *, concurrency: int = 1,
                 pool: str = "prefork", log_dir: str | os.PathLike | None = None,
                 extra_env: dict | None = None) -> None:
        self.cfg, self.name, self.concurrency, self.pool = cfg, name, concurrency, pool
        self.log_path = Path(log_dir or tempfile.mkdtemp(prefix="agentlab-worker-")) / f"{name}.log"
        self.extra_env = dict(extra_env or {})
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> "WorkerProcess":
        env = {**os.environ, **self.cfg.env(), **self.extra_env}
        cmd = [sys.executable, "-m", "agentlab.cli", "worker", "--name", self.name,
               "--concurrency", str(self.concurrency), "--pool", self.pool]
        self._log = open(self.log_path, "ab")
        self._offset = self.log_path.stat().st_size
        self.proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
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

    def restart(self) -> "WorkerProcess":
        self.kill()
        return self.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.proc is not None:
            _stop_group(self.proc, timeout_s)
            self._log.close()


class LocalFleet:
    """Redis plus ``workers`` worker processes, and a ``Fleet`` handle on them (``.fleet``)."""

    def __init__(self, workers: int = 2, *, concurrency: int = 1, pool: str = "prefork",
                 visibility_timeout_s: float = 30.0, lease_ttl_s: float = 10.0,
                 redis_url: str | None = None, fleet_dir: str | None = None,
                 wait: bool = True) -> None:
        self.redis = None if redis_url else RedisServer()
        self.dir = Path(fleet_dir or tempfile.mkdtemp(prefix="agentlab-fleet-"))
        self.cfg = FleetConfig(redis_url=redis_url or self.redis.url,
                               visibility_timeout_s=visibility_timeout_s, lease_ttl_s=lease_ttl_s,
                               checkpoints=str(self.dir / "checkpoints.db"),
                               fleet_dir=str(self.dir))
        self.workers = [WorkerProcess(self.cfg, f"w{i + 1}", concurrency=concurrency, pool=pool,
                                      log_dir=self.dir) for i in range(workers)]
        if wait:
            for w in self.workers:
                w.wait_ready()
        self.fleet = Fleet(self.cfg)

    def add_worker(self, **options: Any) -> WorkerProcess:
        w = WorkerProcess(self.cfg, f"w{len(self.workers) + 1}", log_dir=self.dir, **options)
        self.workers.append(w)
        return w.wait_ready()

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        if self.redis is not None:
            self.redis.stop()

    def __enter__(self) -> "LocalFleet":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

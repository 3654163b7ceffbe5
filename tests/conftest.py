"""Shared fixtures. No test may reach the network: a guard refuses any connection that
leaves the machine (loopback stays allowed for ``Simulator.serve()``)."""
from __future__ import annotations

import ipaddress
import socket

import pytest

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

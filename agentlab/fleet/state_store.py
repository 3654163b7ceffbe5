"""``RedisStateStore``: chapter 05's key-value state in Redis, shared by every worker (chapter 13).

Part of ``notebooks/13_fleet.ipynb`` — the article's line "state in Redis? change only the
StateStore": the same contract as ``agentlab.state`` (``save/load/clear/keys``, ``key in store``,
the same key rules and ``StateError`` codes, loads are fresh copies), so a runtime moves to
Redis by swapping this one object.

All of a tenant's values live in one Redis hash, ``agentlab:<tenant>:state`` (field = key,
value = the JSON text). ``HSET`` of one field is atomic: a reader sees the old value or the
new one, never half of each, and ``keys()`` is one ``HKEYS``. A tenant's ACL user reaches only
its own hash (see ``tenants.py``). Redis errors come back as ``StateError`` with the codes of
``connection.py`` (``redis_unavailable``, retryable, names the server without its password).
"""
from __future__ import annotations

from ..errors import StateError
from ..state import BaseStateStore
from .connection import RedisTarget, redis_errors

__all__ = ["RedisStateStore"]


class RedisStateStore(BaseStateStore):
    """Key-value state of one tenant in Redis (``agentlab:<tenant>:state``).

    Args:
        url: ``redis://[user:password@]host:port/db``; ``?tenant=`` or the user name may name
            the tenant (see ``agentlab.fleet.connection``).
        tenant: the tenant whose keys to use (overrides the URL).
    """

    def __init__(self, url: str, tenant: str | None = None) -> None:
        self.target = RedisTarget(url, tenant)
        self.tenant = self.target.tenant
        self._hash = self.target.key("state")

    def _errors(self, doing: str):
        return redis_errors(StateError, self.target, doing)

    def _where(self, key: str) -> str:
        return f"field {key!r} of {self._hash} at {self.target.safe_url}"

    def _write(self, key: str, text: str) -> None:
        with self._errors(f"save state key {key!r}"):
            self.target.client.hset(self._hash, key, text.encode("utf-8"))

    def _read(self, key: str) -> str | None:
        with self._errors(f"load state key {key!r}"):
            raw = self.target.client.hget(self._hash, key)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StateError("state_corrupt", f"{self._where(key)} is not UTF-8 text: {exc}",
                             details={"key": key}) from None

    def _delete(self, key: str) -> None:
        with self._errors(f"clear state key {key!r}"):
            self.target.client.hdel(self._hash, key)

    def _delete_all(self) -> None:
        with self._errors("clear the state store"):
            self.target.client.delete(self._hash)

    def _keys(self) -> list[str]:
        with self._errors("list state keys"):
            return [k.decode("utf-8") for k in self.target.client.hkeys(self._hash)]

    def close(self) -> None:
        """Close the connection pool (it reopens on next use)."""
        self.target.close()

    def __repr__(self) -> str:
        return f"RedisStateStore({self.target.safe_url!r}, tenant={self.tenant!r})"

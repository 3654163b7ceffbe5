"""Tenants: one Redis ACL user per tenant, limited to that tenant's keys (chapter 13).

Part of ``notebooks/13_fleet.ipynb`` (book chapter, 1.5: tenant isolation is part of the price
of a shared runtime). ``create_tenant(admin_url, "acme", password)`` runs, as an admin::

    ACL SETUSER acme reset on >password ~agentlab:acme:* resetchannels &agentlab:acme:*
        +@all -@dangerous -scan -randomkey -dbsize -select -swapdb -move -pubsub -function ...

so the URL ``redis://acme:password@host:port/0`` (``tenant_url``) can read and write
``agentlab:acme:*`` and nothing else: another tenant's state, checkpoints or tool log answer
``NOPERM``, which the stores report as ``permission_denied``; and a store opened with that URL
but no ``tenant=`` uses tenant ``acme`` (the user name). ``-@dangerous`` keeps the tenant away
from ``FLUSHALL``, ``KEYS``, ``CONFIG``, ``ACL``, ``DEBUG`` and the like, and ``CROSSING`` from
the commands that would list or count other tenants' keys (``SCAN``, ``RANDOMKEY``,
``DBSIZE``) or reach another database (``SELECT``, ``MOVE``, ``SWAPDB``). The tenant's broker
(``app.broker_prefix``: queue, unacknowledged messages, results, pub/sub channels) lives under
the same prefix, so the same credentials submit, list and run workers. ``extra_key_patterns`` and
``channels`` widen the grant if ever needed.
"""
from __future__ import annotations

from urllib.parse import quote, urlsplit, urlunsplit

from ..errors import ConfigError
from .connection import RedisTarget, key_prefix, redis_errors, validate_tenant

__all__ = ["create_tenant", "delete_tenant", "tenant_url", "CROSSING"]

#: Commands that see past a tenant's key pattern (key names, counts or other databases of the
#: whole server) or leave state outside it, denied on top of ``-@dangerous``.
CROSSING = ("scan", "randomkey", "dbsize", "select", "swapdb", "move", "pubsub", "function",
            "script|flush", "keys", "flushdb", "flushall", "info", "client", "monitor")


def tenant_url(server_url: str, tenant: str, password: str) -> str:
    """The URL of ``server_url``'s server with ``tenant``'s credentials."""
    parts = urlsplit(server_url)
    host = parts.hostname or "127.0.0.1"
    netloc = f"{quote(validate_tenant(tenant))}:{quote(password, safe='')}@{host}" + \
        (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _pidbox(url: str, tenant: str) -> str:
    """The channel pattern a Celery worker of ``tenant`` subscribes to with PSUBSCRIBE (remote
    control). An ACL lets a *pattern* subscription through only when it is listed literally."""
    db = (urlsplit(url).path or "/0").strip("/") or "0"
    return f"{key_prefix(tenant)}broker:/{db}.celery.pidbox"


def create_tenant(admin_url: str, tenant: str, password: str, *,
                  extra_key_patterns: tuple[str, ...] = (), channels: tuple[str, ...] = ()) -> str:
    """Create (or reset) the ACL user ``tenant``; return the tenant's URL.

    Raises ``ConfigError`` for a bad name or an empty password, and ``ConfigError`` with the
    codes of ``connection.py`` when the admin cannot reach the server or set users.
    """
    validate_tenant(tenant)
    if not isinstance(password, str) or len(password) < 8 or any(c.isspace() for c in password):
        raise ConfigError("invalid_config", "a tenant password has at least 8 characters and "
                          "no spaces")
    if tenant == "default":
        raise ConfigError("invalid_config", "tenant 'default' is Redis's own admin user; pick "
                          "another name")
    admin = RedisTarget(admin_url)
    rules = ["reset", "on", f">{password}", f"~{key_prefix(tenant)}*",
             *(f"~{p}" for p in extra_key_patterns), "resetchannels",
             f"&{key_prefix(tenant)}*", f"&{_pidbox(admin_url, tenant)}",
             *(f"&{c}" for c in channels), "+@all", "-@dangerous",
             *(f"-{c}" for c in CROSSING)]
    try:
        with redis_errors(ConfigError, admin, f"create tenant {tenant!r}"):
            admin.client.execute_command("ACL", "SETUSER", tenant, *rules)
    finally:
        admin.close()
    return tenant_url(admin_url, tenant, password)


def delete_tenant(admin_url: str, tenant: str) -> bool:
    """Remove ``tenant``'s ACL user (its keys stay); True if it existed."""
    admin = RedisTarget(admin_url)
    try:
        with redis_errors(ConfigError, admin, f"delete tenant {validate_tenant(tenant)!r}"):
            return bool(admin.client.execute_command("ACL", "DELUSER", tenant))
    finally:
        admin.close()

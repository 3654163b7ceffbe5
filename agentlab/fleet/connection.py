"""Reaching Redis: one URL names the server, the credentials and the tenant (chapter 13).

Part of ``notebooks/13_fleet.ipynb``. Every Redis-backed object of ``agentlab.fleet`` takes a URL
such as ``redis://acme:s3cret@127.0.0.1:6379/0`` and goes through ``RedisTarget``:

- **the tenant** whose keys it uses: the ``tenant=`` argument, else a ``?tenant=`` query
  parameter, else the URL's user name (an ACL user made by ``create_tenant`` is named after its
  tenant), else ``"default"``. All of a tenant's keys start with ``agentlab:<tenant>:`` — the
  pattern its ACL user is limited to, so its credentials cannot touch another tenant's keys;
- **a safe name** for messages: the URL with the password replaced by ``***`` (a password must
  never reach a log, a result or a checkpoint);
- **errors with codes** (``redis_errors``): redis-py's exceptions become the caller's
  ``AgentError`` subclass (``StateError`` for the state store, ``CheckpointError`` for checkpoints):

  ==================  =========  ====================================================
  code                retryable  when
  ==================  =========  ====================================================
  redis_unavailable   yes        the server cannot be reached or timed out
  redis_auth_failed   no         wrong user name or password
  permission_denied   no         the ACL user may not touch these keys (another tenant)
  redis_error         no         any other error the server answered
  ==================  =========  ====================================================
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from ..errors import AgentError, ConfigError

__all__ = ["RedisTarget", "redis_errors", "safe_url", "validate_tenant", "key_prefix",
           "TENANT_RE"]

#: A tenant name: lower-case letters, digits, '_' and '-' (no ':' or glob characters, so the
#: ACL key pattern ``agentlab:<tenant>:*`` matches this tenant's keys and nobody else's).
#: (``\Z``, not ``$``: ``$`` also matches before a trailing newline.)
TENANT_RE = re.compile(r"\A[a-z0-9][a-z0-9_-]{0,63}\Z")


def validate_tenant(tenant: object) -> str:
    """Return ``tenant`` if it is a valid tenant name, else raise ``ConfigError``."""
    if not isinstance(tenant, str) or not TENANT_RE.match(tenant):
        raise ConfigError("invalid_config", f"tenant {tenant!r} refused: use 1-64 lower-case "
                          "letters, digits, '_' or '-', starting with a letter or digit")
    return tenant


def key_prefix(tenant: str) -> str:
    """Where every key of ``tenant`` lives: ``agentlab:<tenant>:``."""
    return f"agentlab:{validate_tenant(tenant)}:"


def safe_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class RedisTarget:
    """A parsed Redis URL: the client to use, the tenant, its key prefix and a safe name."""

    def __init__(self, url: str, tenant: str | None = None, *,
                 socket_timeout_s: float = 5.0) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigError("invalid_config", f"{url!r} is not a Redis URL; use "
                              "redis://[user:password@]host:port/db (e.g. redis://127.0.0.1:6379/0)")
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        from_query = [v for k, v in query if k == "tenant"]
        client_url = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in query
                                                                if k != "tenant"])))
        user = parts.username if parts.username not in (None, "", "default") else None
        self.tenant = validate_tenant(tenant or (from_query[-1] if from_query else None)
                                      or user or "default")
        self.prefix = key_prefix(self.tenant)
        self.url = url
        self.safe_url = safe_url(url)
        self.client = redis.Redis.from_url(client_url, socket_timeout=socket_timeout_s,
                                           socket_connect_timeout=socket_timeout_s)

    def key(self, *parts: str) -> str:
        """This tenant's key made of ``parts``: ``agentlab:<tenant>:a:b``."""
        return self.prefix + ":".join(parts)

    def close(self) -> None:
        self.client.close()

    def __repr__(self) -> str:
        return f"RedisTarget({self.safe_url!r}, tenant={self.tenant!r})"


@contextlib.contextmanager
def redis_errors(error_cls: type[AgentError], target: RedisTarget, doing: str) -> Iterator[None]:
    """Turn redis-py exceptions raised inside the block into ``error_cls`` with a code.

    ``doing`` completes "could not ..." (e.g. ``"load state key 'k'"``). The message names the
    server by its safe URL, never with its password.
    """
    where = f"{target.safe_url} (tenant {target.tenant!r})"
    details = {"url": target.safe_url, "tenant": target.tenant}
    try:
        yield
    except redis.AuthenticationError as exc:  # before ConnectionError: it is a subclass
        raise error_cls("redis_auth_failed", f"could not {doing}: Redis at {where} refused the "
                        f"user name or password ({exc}); check the URL's credentials",
                        details=details) from None
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise error_cls("redis_unavailable", f"could not {doing}: Redis at {where} cannot be "
                        f"reached ({exc}); start it (redis-server --port 6379) or fix "
                        "AGENTLAB_REDIS_URL, then try again", retryable=True,
                        details=details) from None
    except redis.exceptions.NoPermissionError as exc:
        raise error_cls("permission_denied", f"could not {doing}: the Redis user of {where} may "
                        f"not use these keys ({exc}); a tenant's credentials reach only its own "
                        f"keys ({target.prefix}*)", details=details) from None
    except redis.RedisError as exc:
        raise error_cls("redis_error", f"could not {doing}: Redis at {where} answered: {exc}",
                        details=details) from None

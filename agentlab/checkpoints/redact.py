"""Plain data and secrets: what may reach a checkpoint on disk, and what is masked (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``. Checkpoints hold JSON data only: ``to_plain``
converts dataclasses, enums, dates and paths, and refuses everything else (clients,
connections, locks, functions) with ``CheckpointError("not_serializable")``, never ``repr``-ing
it. With ``scrub=True`` (state, metadata, the tool-call log):

- a value whose key looks like a credential (``api_key``, ``authorization``, ``*_secret``,
  ``password``, ``*_token``/``token``, ``credentials``; but not ``total_tokens``/``max_tokens``)
  becomes ``"[REDACTED]"``;
- strings shaped like ``sk-...`` keys or ``Bearer ...`` headers are masked.

Exact values registered with ``CheckpointManager.add_secret`` are masked everywhere, messages
included, by the manager after encoding.
"""
from __future__ import annotations

import dataclasses
import enum
import re
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..errors import CheckpointError

__all__ = ["REDACTED", "scrub_secrets", "to_plain", "json_default", "is_secret_key",
           "mask_secrets"]

REDACTED = "[REDACTED]"

_SECRET_WORDS = {"secret", "password", "passwd", "credential", "credentials", "authorization",
                 "apikey", "cookie"}
_SECRET_VALUE_RE = re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}|\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}")


def is_secret_key(key: str) -> bool:
    """True for a key that names a credential (``apiKey``, ``client_secret``, ``access_token``)."""
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", words) if w]
    if not words:
        return False
    pairs = set(zip(words, words[1:]))
    return (bool(_SECRET_WORDS.intersection(words)) or words[-1] in ("token", "auth")
            or bool(pairs & {("api", "key"), ("private", "key"), ("access", "key")}))


def mask_secrets(text: str) -> str:
    """``text`` with key-shaped substrings (``sk-...``, ``Bearer ...``) masked."""
    return _SECRET_VALUE_RE.sub(lambda m: ("sk-" if m.group(0).startswith("sk-") else "Bearer ")
                                + REDACTED, text)


def to_plain(obj: Any, where: str, scrub: bool) -> Any:
    """Convert to JSON data (dict/list/str/number/bool/None); scrub secrets when asked."""
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return mask_secrets(obj) if scrub else obj
    if isinstance(obj, dict):
        return {str(k): (REDACTED if scrub and is_secret_key(k) and v is not None
                         else to_plain(v, f"{where}[{k!r}]", scrub)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, f"{where}[{i}]", scrub) for i, v in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return to_plain({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, where, scrub)
    if isinstance(obj, enum.Enum):
        return to_plain(obj.value, where, scrub)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if callable(getattr(obj, "to_dict", None)):
        return to_plain(obj.to_dict(), where, scrub)
    raise CheckpointError(
        "not_serializable",
        f"cannot save {where}: a {type(obj).__module__}.{type(obj).__qualname__} is not plain "
        "data. Checkpoints hold JSON data only; clients, connections, locks and functions are "
        "never written. Store the settings needed to rebuild it instead.",
        details={"where": where, "type": type(obj).__qualname__})


def scrub_secrets(obj: Any) -> Any:
    """A copy of ``obj`` as plain data with credential-like keys and key-shaped strings masked."""
    return to_plain(obj, "value", scrub=True)


def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for messages: plain data, refused otherwise (never masked)."""
    return to_plain(obj, "messages", scrub=False)

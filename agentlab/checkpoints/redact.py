"""Plain data and secrets: what may reach a checkpoint on disk, and what is masked (chapter 11).

Part of ``notebooks/11_checkpoints.ipynb``. Checkpoints hold JSON data only: ``to_plain``
converts dataclasses, enums, dates and paths, and refuses everything else (clients,
connections, locks, functions) with ``CheckpointError("not_serializable")``, never ``repr``-ing
it. With ``scrub=True`` the one redaction layer of the package (``agentlab.redaction``) is
applied on the way: values under credential-named keys, key-shaped tokens (``sk-...``,
``gsk_...``, ``Bearer ...``) and registered secrets (``CheckpointManager.add_secret``,
``agentlab.redaction.register_secret``) are masked. Messages are masked the same way except
for the key rule (a message's fields are never credential names).
"""
from __future__ import annotations

import dataclasses
import json
import enum
from datetime import date, datetime
from pathlib import Path
from typing import Any, Iterable

from ..errors import CheckpointError
from ..redaction import REDACTED, is_secret_key, redact, redact_text

__all__ = ["REDACTED", "scrub_secrets", "to_plain", "json_default", "is_secret_key",
           "mask_secrets", "encode_body"]


def mask_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with key-shaped tokens and registered secrets masked (``redact_text``)."""
    return redact_text(text, secrets)


def to_plain(obj: Any, where: str, scrub: bool, secrets: Iterable[str] = ()) -> Any:
    """Convert to JSON data (dict/list/str/number/bool/None); mask secrets when ``scrub``."""
    plain = _plain(obj, where, scrub)
    return redact(plain, secrets) if scrub else plain


def _plain(obj: Any, where: str, scrub: bool) -> Any:
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):  # a credential-named value is masked, never converted
        return {str(k): (REDACTED if scrub and is_secret_key(k) and v is not None
                         else _plain(v, f"{where}[{k!r}]", scrub)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{where}[{i}]", scrub) for i, v in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _plain({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}, where, scrub)
    if isinstance(obj, enum.Enum):
        return _plain(obj.value, where, scrub)
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, Path):
        return str(obj)
    if callable(getattr(obj, "to_dict", None)):
        return _plain(obj.to_dict(), where, scrub)
    raise CheckpointError(
        "not_serializable",
        f"cannot save {where}: a {type(obj).__module__}.{type(obj).__qualname__} is not plain "
        "data. Checkpoints hold JSON data only; clients, connections, locks and functions are "
        "never written. Store the settings needed to rebuild it instead.",
        details={"where": where, "type": type(obj).__qualname__})


def scrub_secrets(obj: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of ``obj`` as plain data with credential-like keys and key-shaped strings masked."""
    return to_plain(obj, "value", scrub=True, secrets=secrets)


def json_default(obj: Any) -> Any:
    """``json.dumps(default=...)`` for messages: plain data, refused otherwise."""
    return _plain(obj, "messages", scrub=False)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def encode_body(meta: dict, state: Any, calls_json: str, chunk_ids: list[str], messages: list,
                secrets: tuple[str, ...]) -> dict[str, str]:
    """The encoded, redacted parts of a checkpoint (``document.render_checkpoint``'s body).

    ``meta`` is already plain and scrubbed, ``calls_json`` already encoded (``calls.py``);
    messages get every rule but the key rule (their fields are never credential names). A
    value nested too deep or an int beyond the 4,300-digit limit raises
    ``CheckpointError("not_serializable")``.
    """
    try:
        return {"metadata": _dumps(meta),
                "state": _dumps(to_plain(state or {}, "state", scrub=True, secrets=secrets)),
                "tool_calls_made": calls_json, "tool_calls_chunks": _dumps(chunk_ids),
                "messages": _dumps(redact(to_plain(list(messages), "messages", scrub=False),
                                          secrets, keys=False))}
    except (RecursionError, ValueError) as exc:
        raise CheckpointError("not_serializable", f"cannot save this checkpoint: "
                              f"{type(exc).__name__}: {str(exc)[:200]}",
                              details={"reason": type(exc).__name__}) from None

"""What every state store refuses: keys that are not safe file names, values that are not JSON.

The same rules on every store (``__init__`` lists them), so a key that works in memory works in a
folder on Windows too, and a value that saves in one store saves in all. ``validate_key`` raises
``StateError(code="invalid_key")``; ``to_json`` raises ``StateError(code="not_serializable")``
naming the key, the path inside the value and its type. Taught in ``notebooks/05_state_store``.
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any

from ..atomic import MAX_NAME_BYTES, portable_name_problem
from ..errors import StateError
from ..redaction import redact

__all__ = ["validate_key", "to_json", "MAX_KEY_LENGTH"]

#: Longest key, in bytes of UTF-8 (``agentlab.atomic.MAX_NAME_BYTES``).
MAX_KEY_LENGTH = MAX_NAME_BYTES


def validate_key(key: Any) -> str:
    """Return ``key`` if it is safe as a file name inside a store, else raise ``invalid_key``."""
    def bad(why: str) -> StateError:
        return StateError("invalid_key", f"state key {key!r} refused: {why}. Use letters, digits, "
                          "'-', '_' and inner dots, e.g. 'run_42.summary'.", details={"key": repr(key)})
    problem = portable_name_problem(key)
    if problem:
        raise bad(problem)
    return key


def _find_non_json(value: Any, path: str, active: set[int]) -> tuple[str, str] | None:
    """First place in ``value`` that is not plain JSON, as (path, reason), or None."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, f"float {value!r} (JSON has no NaN/Infinity)")
    if isinstance(value, (list, tuple, dict)):
        if id(value) in active:
            return (path, "a reference to itself (circular)")
        active.add(id(value))
        try:
            if isinstance(value, dict):
                for k, v in value.items():
                    if not isinstance(k, str):
                        return (path, f"dict key {k!r} of type {type(k).__name__} (JSON keys are strings)")
                    found = _find_non_json(v, f"{path}[{k!r}]", active)
                    if found:
                        return found
            else:
                for i, v in enumerate(value):
                    found = _find_non_json(v, f"{path}[{i}]", active)
                    if found:
                        return found
        finally:
            active.discard(id(value))
        return None
    return (path, f"type {type(value).__name__}")


def to_json(key: str, value: Any, scrub: bool = False) -> str:
    """Serialise ``value`` for ``key`` (secrets masked when ``scrub``), or raise
    ``StateError(code="not_serializable")``."""
    def refuse(where: str, what: str) -> StateError:
        return StateError("not_serializable",
                          f"cannot save key {key!r}: {where} is {what}. Store plain JSON (dict, "
                          "list, str, int, float, bool, None); convert other objects first.",
                          details={"key": key, "path": where, "reason": what})
    try:
        found = _find_non_json(value, "value", set())
        if found:
            raise refuse(*found)
        text = json.dumps(redact(value) if scrub else value, ensure_ascii=False, indent=2, allow_nan=False)
        text.encode("utf-8")  # a lone surrogate cannot be written as UTF-8
    except RecursionError:
        raise refuse("value", f"nested deeper than {sys.getrecursionlimit()} levels") from None
    except UnicodeEncodeError as exc:
        raise refuse("value", f"text with a lone surrogate ({exc.object[exc.start:exc.end]!r})") from None
    except ValueError as exc:  # an int beyond the 4,300-digit conversion limit
        raise refuse("value", f"not convertible to JSON ({exc})") from None
    return text


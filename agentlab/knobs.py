"""Checks for numeric settings (timeouts, budgets, sizes), shared by every constructor.

A timeout of 0 or -1 makes every call "time out" while its side effect still runs; ``inf``
overflows the thread wait; ``None`` or NaN fail deep inside a later call. Each constructor
therefore checks its knobs up front and raises ``ConfigError("invalid_config")`` naming the
argument and the value (issue #12). ``bool`` is refused although it is an ``int``.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

from .errors import ConfigError

__all__ = ["positive_number", "positive_int", "fraction"]


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def positive_number(name: str, value: Any, *, allow_none: bool = False) -> float | None:
    """``value`` as a float if it is a positive, finite number (or None when allowed)."""
    if value is None and allow_none:
        return None
    if not (_real(value) and math.isfinite(value) and value > 0):
        raise ConfigError("invalid_config", f"{name} must be a positive, finite number"
                          f"{' or None' if allow_none else ''}, got {value!r}",
                          details={"argument": name, "value": repr(value)})
    return float(value)


def positive_int(name: str, value: Any, *, allow_none: bool = False,
                 minimum: int = 1) -> int | None:
    """``value`` if it is an integer >= ``minimum`` (or None when allowed)."""
    if value is None and allow_none:
        return None
    if not (isinstance(value, numbers.Integral) and not isinstance(value, bool)
            and value >= minimum):
        raise ConfigError("invalid_config", f"{name} must be an integer >= {minimum}"
                          f"{' or None' if allow_none else ''}, got {value!r}",
                          details={"argument": name, "value": repr(value)})
    return int(value)


def fraction(name: str, value: Any) -> float:
    """``value`` if it is a number in (0, 1]."""
    if not (_real(value) and 0 < value <= 1):
        raise ConfigError("invalid_config", f"{name} must be a number in (0, 1], got {value!r}",
                          details={"argument": name, "value": repr(value)})
    return float(value)

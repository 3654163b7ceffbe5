"""What a registered tool really is: a function, a method, a partial, a coroutine function.

Part of chapter 02 (``notebooks/02_tool_registry.ipynb``). ``inspect.signature`` already drops
``self`` from a bound method and the bound arguments from a ``functools.partial``; what it does
not give is where the docstring and the annotations live (the partial's own docstring is the
text of ``functools.partial``), which keyword arguments a partial fixed (those are the caller's
choice, not the model's, so they leave the schema), and whether calling the tool returns a
value or something that still has to run (a coroutine, a generator).
"""
from __future__ import annotations

import asyncio
import collections.abc
import functools
import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import ConfigError

__all__ = ["ToolCallable", "resolve_callable"]

_AWAITABLE_ORIGINS = (collections.abc.Awaitable, collections.abc.Coroutine,
                      collections.abc.AsyncIterator, collections.abc.AsyncGenerator,
                      collections.abc.AsyncIterable)
_AWAITABLE_TEXT = re.compile(r"^(typing\.|collections\.abc\.|asyncio\.)?"
                             r"(Awaitable|Coroutine|Future|Task|AsyncIterator|AsyncGenerator)\b")


@dataclass
class ToolCallable:
    """A callable ready to register.

    Attributes:
        call: what the executor calls with the validated keyword arguments.
        target: the function whose annotations (and globals) type the parameters.
        doc: the docstring that describes the tool.
        name: the default tool name.
        fixed: keyword arguments a ``functools.partial`` already supplies (not in the schema).
        is_async: ``call(**kwargs)`` returns a coroutine to run on the executor's event loop.
    """

    call: Callable
    target: Callable
    doc: str | None
    name: str
    fixed: set[str] = field(default_factory=set)
    is_async: bool = False


def _refuse(name: str, text: str) -> ConfigError:
    return ConfigError("unsupported_type", f"tool {name!r}: {text}")


def _returns_awaitable(source: Callable) -> bool:
    raw = getattr(source, "__annotations__", {}).get("return", None)
    if raw is None:
        return False
    if isinstance(raw, str):
        return bool(_AWAITABLE_TEXT.match(raw.strip()))
    origin = typing.get_origin(raw) or raw
    return origin in _AWAITABLE_ORIGINS or (isinstance(origin, type)
                                            and issubclass(origin, asyncio.Future))


def _is_unbound_method(func: Callable) -> bool:
    """A plain function defined in a class body whose first parameter is ``self``/``cls``."""
    if not isinstance(func, types.FunctionType):
        return False
    parts = func.__qualname__.split(".")
    in_class = len(parts) >= 2 and parts[-2] != "<locals>"
    params = list(inspect.signature(func).parameters)
    return in_class and bool(params) and params[0] in ("self", "cls")


def resolve_callable(func: Any, name: str) -> ToolCallable:
    """Classify ``func``; refuse what cannot be a tool with ``unsupported_type``.

    Accepted: functions, ``async def`` functions, bound methods (instance or class),
    ``staticmethod`` objects, ``functools.partial`` (of any of these) and callable objects.
    Refused: unbound methods (``Class.method`` needs an instance), raw ``classmethod``
    objects, async and sync generator functions (their results arrive piece by piece), and
    sync functions annotated to return an awaitable (declare them ``async def``).
    """
    if isinstance(func, staticmethod):
        func = func.__func__
    if isinstance(func, classmethod):
        raise _refuse(name, "a classmethod object has no class to bind to; register "
                      "Class.method (the bound method) instead")
    if not callable(func):
        raise _refuse(name, f"{type(func).__name__} is not callable")
    fixed: set[str] = set()
    source = func
    while isinstance(source, functools.partial):
        fixed |= set(source.keywords)
        source = source.func
    if isinstance(source, (staticmethod, classmethod)):
        source = source.__func__
    if _is_unbound_method(source) and not (isinstance(func, functools.partial) and func.args):
        raise _refuse(name, f"{source.__qualname__} is an unbound method: its first parameter "
                      f"{next(iter(inspect.signature(source).parameters))!r} needs an object; "
                      "register the method of an instance (obj.method) instead")
    if isinstance(source, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        target = source.__func__ if inspect.ismethod(source) else source
        doc = source.__doc__
    else:  # a callable object: its class (or its __call__) describes it
        target = type(source).__call__
        doc = type(source).__doc__ or target.__doc__
    target = inspect.unwrap(target)
    if inspect.isasyncgenfunction(target):
        raise _refuse(name, "an async generator yields results piece by piece; a tool must "
                      "return one value (collect the items and return a list)")
    if inspect.isgeneratorfunction(target):
        raise _refuse(name, "a generator yields results piece by piece; a tool must return "
                      "one value (return a list instead)")
    is_async = inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(func)
    if not is_async and _returns_awaitable(target):
        raise _refuse(name, "it is a plain function annotated to return an awaitable, which "
                      "the executor would never run; declare it `async def`")
    return ToolCallable(call=func, target=target, doc=doc, name=getattr(source, "__name__", ""),
                        fixed=fixed, is_async=is_async)

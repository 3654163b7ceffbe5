"""Tool registry: OpenAI function-tool schemas from type hints and docstrings, and validation.

Taught in ``notebooks/02_tool_registry.ipynb`` (article Step 2).

A tool is a plain Python function. ``ToolRegistry`` reads its signature and its Google-style
docstring and produces the JSON schema the model sees. The article maps types with a flat
``{str: "string", int: "integer", ...}`` table, so ``Optional[int]``, ``list[str]`` or a
``Literal`` all silently become ``"string"``. Here each annotation is walked recursively:

    str int float bool None Any        -> "string" "integer" "number" "boolean" "null" {}
    list[T]  dict[str, T]               -> array of T, object whose values are T
    Optional[T], T | None, Union[...]   -> anyOf
    Literal[...], Enum                  -> enum (with a type when all values share one)
    dataclass, TypedDict                -> nested object (additionalProperties: false)
    Annotated[T, "text"]                -> T with that description
    BaseModel, Field(...), constraints  -> pydantic's schema (see ``pydantic_params``)

``validate`` checks what the model sent against the same types, coerces only what cannot lose
information ("5" -> 5, 5 -> 5.0, "true" -> True, 7.0 -> 7, null for a defaulted field -> the
Python default), and reports *every* bad field in one ``ToolError("invalid_arguments")`` whose
message a model can act on. Its returned dict holds what the function expects: instances for
``BaseModel``/dataclass parameters (validated by pydantic, with its coercions), Enum members
for Enum parameters, and the real default for a ``Field(default=...)`` parameter.

What can be a tool (``callables.py``): functions and ``async def`` functions (the executor runs
them on its own event loop), bound methods, static methods, ``functools.partial`` (its fixed
keywords leave the schema) and callable objects; Google, Sphinx and numpy docstrings.

The registry is here; schema generation lives in ``agentlab.tools.schema`` and argument checking in
``agentlab.tools.validation`` (both re-exported where a learner needs them).
"""
from __future__ import annotations

import copy
import inspect
import math
import threading
from typing import Any, Callable

from ..errors import ConfigError, ToolError
from .callables import resolve_callable
from .schema import (IDEMPOTENCY_PARAM, TOOL_NAME_RE, ToolSpec, _inspect, function_schema,
                     parse_docstring, schema_for_type)
from .validation import check_fields, format_errors, json_type

__all__ = ["ToolRegistry", "schema_for_type", "function_schema", "parse_docstring"]


# -- the registry --------------------------------------------------------------------------------
class ToolRegistry:
    """Registered tools with their schemas and options (``notebooks/02_tool_registry``).

    Tool options (``get_options``): ``timeout`` in seconds (None: the executor decides) and
    ``side_effects``. A side-effecting tool with an ``idempotency_key`` parameter gets that
    parameter from the executor (the tool call id), so it is left out of the schema.

    ``requires_approval`` (chapter 13, ``agentlab.approval``): ``True``, or a policy
    ``fn(arguments) -> bool``; a call it covers waits for a human's ``approve``/``reject``
    (without that gate attached, the executor refuses the call: ``approval_required``)
    (``requires_approval(name, arguments)`` answers; a policy that raises counts as "yes").
    """

    def __init__(self) -> None:
        self._tools: dict[str, ToolSpec] = {}
        self._approval: dict[str, bool | Callable[[dict], bool]] = {}
        self._lock = threading.Lock()

    def tool(self, name: str | Callable | None = None, description: str | None = None, *,
             timeout: float | None = None, side_effects: bool = False,
             requires_approval: bool | Callable[[dict], bool] = False,
             sandbox: Any = None) -> Callable:
        """Decorator: ``@registry.tool``, ``@registry.tool()`` or ``@registry.tool("x", ...)``."""
        if callable(name):  # used bare: @registry.tool
            return self.register(name)

        def decorator(func: Callable) -> Callable:
            return self.register(func, name, description, timeout=timeout,
                                 side_effects=side_effects, requires_approval=requires_approval,
                                 sandbox=sandbox)
        return decorator

    def register(self, func: Callable, name: str | None = None, description: str | None = None,
                 *, timeout: float | None = None, side_effects: bool = False,
                 requires_approval: bool | Callable[[dict], bool] = False,
                 replace: bool = False, sandbox: Any = None) -> Callable:
        """Register ``func`` and return it unchanged.

        ``sandbox``: a policy with ``wrap(func, name)`` (chapter 15's ``SandboxPolicy``): the
        schema comes from ``func``, but calls go to what ``wrap`` returns (a process with hard
        limits, killed at its timeout); ``get_options`` then has a ``"sandbox"`` entry.

        Raises:
            ConfigError: ``tool_exists`` (name taken and ``replace`` is False),
                ``invalid_tool_name``, ``unsupported_signature``, ``unsupported_type``,
                ``invalid_option``.
        """
        name = name or resolve_callable(func, "?").name
        if not TOOL_NAME_RE.match(name):
            raise ConfigError("invalid_tool_name", f"tool name {name!r} must match "
                              "[A-Za-z0-9_-]{1,64}; pass name=... to register()")
        if timeout is not None and not (isinstance(timeout, (int, float)) and not
                                        isinstance(timeout, bool) and 0 < timeout < math.inf):
            raise ConfigError("invalid_option", f"tool {name!r}: timeout must be a positive, "
                              f"finite number of seconds or None, got {timeout!r}")
        if not (isinstance(requires_approval, bool) or callable(requires_approval)):
            raise ConfigError("invalid_option", f"tool {name!r}: requires_approval is True, False "
                              f"or a function of the arguments, got {requires_approval!r}")
        schema, params, is_async = _inspect(func, name, description, side_effects)
        takes_key = side_effects and IDEMPOTENCY_PARAM in inspect.signature(func).parameters
        options = {"timeout": timeout, "side_effects": bool(side_effects),
                   "idempotency_key": takes_key}
        run = func
        if sandbox is not None:
            if is_async or not callable(getattr(sandbox, "wrap", None)):
                raise ConfigError("invalid_option", f"tool {name!r}: sandbox is a policy with "
                                  "wrap(func, name) (agentlab.sandbox.SandboxPolicy), for a "
                                  f"plain (not async) function; got {sandbox!r}")
            run, options["sandbox"] = sandbox.wrap(func, name), sandbox
        with self._lock:
            if name in self._tools and not replace:
                raise ConfigError("tool_exists", f"a tool named {name!r} is already registered; "
                                  "pick another name or pass replace=True")
            self._tools[name] = ToolSpec(name, run, schema, params, options, is_async)
            self._approval[name] = requires_approval
        return func

    def get_function(self, name: str) -> Callable | None:
        """The registered function, or None for an unknown name (as in the article)."""
        tool = self._tools.get(name)
        return tool.func if tool else None

    def get_schema(self, name: str) -> dict | None:
        """A copy of the tool's schema, or None for an unknown name."""
        tool = self._tools.get(name)
        return copy.deepcopy(tool.schema) if tool else None

    def get_all_schemas(self) -> list[dict]:
        """Copies of every schema, in registration order (what goes in ``tools=``)."""
        return [copy.deepcopy(t.schema) for t in list(self._tools.values())]

    def list_tools(self) -> list[str]:
        return list(self._tools)

    def is_async(self, name: str) -> bool:
        """True when calling the tool returns a coroutine (an ``async def`` tool)."""
        return self._require(name).is_async

    def get_options(self, name: str) -> dict[str, Any]:
        """``{"timeout": seconds | None, "side_effects": bool, "idempotency_key": bool}``."""
        return dict(self._require(name).options)

    def requires_approval(self, name: str, arguments: dict | None = None) -> bool:
        """Whether this call must wait for a human (False for an unknown tool: it cannot run).

        A policy is asked about the arguments the tool will really get: validated, with the
        function's defaults filled in, so a policy on ``amount > 100`` sees ``pay({})`` as
        ``amount=500``. Arguments that do not validate never run; the policy sees them as sent.
        """
        policy = self._approval.get(name, False)
        if not callable(policy):
            return bool(policy)
        try:
            return bool(policy(self._policy_arguments(name, dict(arguments or {}))))
        except Exception:  # a broken policy must not let a call through unreviewed
            return True

    def _policy_arguments(self, name: str, arguments: dict) -> dict:
        try:
            args = self.validate(name, copy.deepcopy(arguments))
        except ToolError:  # invalid: it will be refused before it runs
            return arguments
        keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        params = inspect.signature(self.get_function(name)).parameters.values()
        defaults = {p.name: p.default for p in params if p.kind in keyword
                    and p.default is not inspect.Parameter.empty and p.name != IDEMPOTENCY_PARAM}
        return {**defaults, **args}

    def validate(self, name: str, arguments: dict | None) -> dict:
        """Check model-supplied ``arguments``; return them converted for the function.

        Raises:
            ToolError: ``tool_not_found`` (listing the available tools) or
                ``invalid_arguments`` naming every bad field, ``details={"errors": [...]}``.
        """
        tool = self._require(name)
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolError("invalid_arguments", f"Invalid arguments for tool '{name}': "
                            f"expected a JSON object of named arguments, got "
                            f"{json_type(arguments)}. Call '{name}' again with an object.",
                            details={"tool": name, "errors": [{
                                "field": "", "problem": "wrong_type", "expected": "object",
                                "got": json_type(arguments)}]})
        errors: list[dict] = []
        out = check_fields(tool.params, arguments, "", errors)
        if errors:
            raise ToolError("invalid_arguments", format_errors(name, errors),
                            details={"tool": name, "errors": errors})
        return out

    def _require(self, name: str) -> ToolSpec:
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "(none)"
            raise ToolError("tool_not_found", f"Unknown tool '{name}'. Available tools: "
                            f"{available}. Call one of these by its exact name.",
                            details={"tool": name, "available": list(self._tools)})
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({', '.join(self._tools)})"

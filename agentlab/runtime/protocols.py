"""What ``AgentRuntime`` needs from its collaborators, as typing ``Protocol``s.

Taught in ``notebooks/06_runtime_loop.ipynb``. The package's own classes fit them
(``LLMClient``, ``ToolRegistry``, ``ToolExecutor``, ``MessageManager``, the state stores,
``CheckpointManager``, ``AgentObserver``); so does anything else with these methods, e.g. a
scripted model in a test or a wrapped executor. Structural types only: nothing here is
imported by those classes, so no chapter depends on the runtime to be used alone.
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator, Protocol, Sequence, runtime_checkable

__all__ = ["ToolCallLike", "ModelReply", "LLM", "Registry", "ToolResultLike", "Executor",
           "Messages", "StateStoreLike", "Extension"]


class ToolCallLike(Protocol):
    """One tool call the model asked for (``agentlab.llm.ToolCall``)."""

    id: str
    name: str
    arguments: Any


class ModelReply(Protocol):
    """One model response or streamed chunk (``agentlab.llm.LLMResponse``).

    A streamed delta has ``content`` text; the final chunk of a stream has ``content=None``.
    """

    content: str | None
    tool_calls: Sequence[ToolCallLike]
    usage: dict
    finish_reason: str


class LLM(Protocol):
    """The model client (``agentlab.llm.LLMClient``)."""

    model: str

    def chat(self, messages: list[dict], tools: list[dict] | None = ..., *,
             temperature: float = ..., timeout: float | None = ...) -> ModelReply: ...

    def stream(self, messages: list[dict], tools: list[dict] | None = ..., *,
               temperature: float = ..., timeout: float | None = ...) -> Iterator[ModelReply]: ...


class Registry(Protocol):
    """The tools the model may call (``agentlab.tools.ToolRegistry``)."""

    def get_all_schemas(self) -> list[dict]: ...

    def list_tools(self) -> list[str]: ...


class ToolResultLike(Protocol):
    """One tool outcome (``agentlab.executor.ToolResult``)."""

    tool_call_id: str
    name: str
    result: str
    success: bool
    duration_ms: float
    error_code: str | None


class Executor(Protocol):
    """Runs one turn's tool calls within ``timeout`` seconds; results in call order.

    ``agentlab.executor.ToolExecutor``, or a wrapper around one
    (``agentlab.checkpoints.durable.DurableExecutor``). The runtime hands a turn's calls over
    as one ``ToolBatch`` (``agentlab.executor.batch``: deadline, cancel, result callback, key
    prefix, approvals) to an executor whose class has ``run(batch)``; an executor with only
    ``execute``/``execute_parallel`` (this protocol) is called in a worker thread the runtime
    stops waiting for within 20 ms of a cancel (``run_batch``).
    """

    def execute(self, tool_calls: Iterable[Any], timeout: float | None = None
                ) -> list[ToolResultLike]: ...

    def execute_parallel(self, tool_calls: Iterable[Any], timeout: float | None = None
                         ) -> list[ToolResultLike]: ...


class Messages(Protocol):
    """The conversation (``agentlab.messages.MessageManager``)."""

    def append(self, message: dict) -> None: ...

    def extend(self, messages: Iterable[dict]) -> None: ...

    def get_messages(self) -> list[dict]: ...

    def restore(self, messages: Iterable[dict]) -> None: ...


class StateStoreLike(Protocol):
    """A key-value store (``agentlab.state``): the runtime keeps its last result there."""

    def save(self, key: str, value: Any) -> None: ...

    def load(self, key: str, default: Any = None) -> Any: ...

    def keys(self) -> list[str]: ...


@runtime_checkable
class Extension(Protocol):
    """Something that plugs into a runtime from outside: ``checkpoints=`` and ``observer=``.

    ``attach(runtime)`` registers its hooks, wraps the executor or registers the resume phase
    (see ``agentlab.runtime.context``); ``CheckpointManager`` and ``AgentObserver`` are two.
    """

    def attach(self, runtime: Any) -> Any: ...

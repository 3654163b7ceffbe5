"""Chapter 01 — the LLM client (``notebooks/01_llm_client.ipynb``).

``LLMClient`` calls a chat-completions endpoint (a real one, or the built-in simulator),
retries only what a retry can fix, and returns one ``LLMResponse`` type whether the answer came
whole or streamed. The pieces, one concept each:

* ``responses`` — ``ToolCall``, ``LLMResponse`` (with ``refusal``), ``parse_arguments``,
  ``collect_stream``;
* ``retry`` — ``should_retry``, ``backoff_delay``, ``Attempt`` and the error classification;
* ``stream`` — assembling streamed chunks, and deciding when a stream was complete;
* ``request`` — the request body, checked before any network;
* ``client`` — ``LLMClient`` itself, with ``from_env`` and ``endpoint``;
* ``offline`` — the endpoint ``from_env`` falls back to (the simulator, found by entry point:
  ``agentlab.sim`` imports this package, never the other way round).
"""
from __future__ import annotations

from .client import LLMClient, OPENAI_URL, PLACEHOLDER_KEY
from .offline import OFFLINE_ENTRY_POINT, offline_endpoint, register_offline_endpoint
from .request import ROLES, build_body
from .responses import CUT_SHORT, LLMResponse, ToolCall, collect_stream, parse_arguments
from .retry import RETRYABLE_CODES, RETRYABLE_STATUS, Attempt, backoff_delay, should_retry
from .stream import StreamAssembler

__all__ = [
    "ToolCall", "LLMResponse", "Attempt", "LLMClient",
    "backoff_delay", "should_retry", "parse_arguments", "collect_stream",
    "RETRYABLE_STATUS", "RETRYABLE_CODES", "ROLES", "CUT_SHORT", "PLACEHOLDER_KEY", "OPENAI_URL",
    "StreamAssembler", "OFFLINE_ENTRY_POINT", "offline_endpoint", "register_offline_endpoint",
]

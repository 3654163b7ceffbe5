"""Chapter 01 — ``LLMClient``: call a chat-completions model, retry what can succeed, parse robustly.

Taught in ``notebooks/01_llm_client.ipynb`` (step 1 of the article). The runtime sees one result
type, ``LLMResponse``, whatever the endpoint, and one error type, ``ProviderError``:

* **Sending.** Requests go through the SDK's raw-request path,
  ``client.post("/chat/completions", body=..., cast_to=ChatCompletion)``. It keeps the SDK's auth,
  base URL, timeouts, error types and SSE parsing, but skips ``chat.completions.create()``'s walk
  over the whole history (about 0.3 ms per message on every call). We check the few things that
  would make a request malformed ourselves, cheaply, before any network.
* **Retrying.** Only what can succeed on retry (``agentlab.llm.retry``), with full-jitter
  backoff and the server's ``Retry-After`` as a floor. The SDK's own retries are off.
* **Streaming.** ``stream()`` yields text deltas, then one final response with the tool calls
  assembled from their fragments (``agentlab.llm.stream``), the usage, the finish reason and any
  refusal. Retries happen only before the first delta is yielded, and never for a stream that
  was delivered whole (``[DONE]`` with no finish reason is whole).
* **Real providers.** Missing or repeated tool-call ids are replaced by fresh ``call_...`` ids
  (the durable tool log of chapter 11 is keyed by them); a 200 with no choice is an
  ``empty_response`` error, not an empty answer; errors name the status, the host and what
  the server said; a 200 carrying an error object or a page that is not JSON is that error
  (``agentlab.llm.responses``), retried only when the error says a retry can help.

Every attempt is logged (``.attempts`` for the last call, ``.history`` for all), so a notebook can
draw the retry timeline.
"""
from __future__ import annotations

import os
import random
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator

import openai
from openai.types.chat import ChatCompletion

from ..errors import ConfigError, ProviderError
from ..models import DEFAULT_MODEL
from ..redaction import register_secret
from .offline import offline_endpoint
from .request import ROLES, build_body
from .request import unencodable
from .responses import LLMResponse, assistant_message, parse_completion
from .retry import (ADVICE, RETRYABLE_CODES, Attempt, EmptyResponse, ErrorInBody,
                    StreamEndedEarly, backoff_delay, classify, describe, retry_after_s)
from .stream import ChunkStream, StreamAssembler, as_stream, not_a_stream

__all__ = ["LLMClient", "PLACEHOLDER_KEY", "OPENAI_URL"]

#: Sent as the API key to an ``OPENAI_BASE_URL`` endpoint when no key is set (local servers
#: such as Ollama, llama.cpp or vLLM ignore it, but the SDK needs one).
PLACEHOLDER_KEY = "sk-no-key-required"
#: The SDK's default endpoint.
OPENAI_URL = "https://api.openai.com/v1"
_SIM_HOSTS = ("sim.local",)


class _Call:
    """Book-keeping for one chat/stream call: its attempts and its deadline."""

    def __init__(self, number: int, timeout: float | None) -> None:
        self.number = number
        self.t0 = time.monotonic()
        self.deadline = None if timeout is None else self.t0 + timeout
        self.attempts: list[Attempt] = []

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


class LLMClient:
    """A chat-completions client with honest retries and robust parsing (notebook 01).

    Args:
        model: model name sent with every request.
        base_url, api_key: for the ``openai.OpenAI`` built here (ignored when ``client`` is given).
            The key (this one, and the one of a ``client`` given) is registered with
            ``agentlab.redaction``: masked in everything agentlab writes and in its errors.
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` requests).
        retry_base_delay: backoff base in seconds (ceiling of the first retry's jittered delay).
        timeout: seconds allowed per request.
        client: an ``openai.OpenAI`` to use (the simulator and tests plug in here); its own
            retries are switched off with ``with_options(max_retries=0)``.
        max_retry_delay: cap on any single backoff, ``Retry-After`` included.
        seed: seed for the jitter and for the ids given to tool calls that came without one,
            for reproducible notebooks and tests.
        sleep: the function used to wait between attempts (tests can record instead of sleep).
        endpoint_note: why this endpoint was chosen, shown in ``endpoint`` (``from_env`` sets it).
    """

    HISTORY_LIMIT = 10_000  # attempts kept in ``.history`` (oldest dropped first)

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None,
                 api_key: str | None = None, max_retries: int = 3, retry_base_delay: float = 1.0,
                 timeout: float = 60.0, client: openai.OpenAI | None = None, *,
                 max_retry_delay: float = 30.0, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 endpoint_note: str | None = None) -> None:
        if max_retries < 0 or retry_base_delay < 0 or max_retry_delay < 0 or timeout <= 0:
            raise ConfigError("invalid_config", "max_retries, retry_base_delay and max_retry_delay "
                              "must be >= 0 and timeout > 0")
        self.model = model
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        self.max_retry_delay = max_retry_delay
        self.timeout = timeout
        if client is None:
            client = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout,
                                   max_retries=0)
        else:
            client = client.with_options(max_retries=0)  # ours are the only retries
        self.client = client
        for key in (api_key, getattr(client, "api_key", None)):  # however it was given: it
            register_secret(key)  # never reaches a file, an export or an error (redaction)
        self.endpoint_note = endpoint_note
        self._rng = random.Random(seed)
        self._id_rng = random.Random(None if seed is None else f"ids-{seed}")
        self._sleep = sleep
        self._lock = threading.Lock()
        self._calls = 0
        self.attempts: list[Attempt] = []
        self.history: deque[Attempt] = deque(maxlen=self.HISTORY_LIMIT)

    def __repr__(self) -> str:
        return (f"LLMClient(model={self.model!r}, base_url={str(self.client.base_url)!r}, "
                f"max_retries={self.max_retries})")

    @property
    def base_url(self) -> str:
        """The endpoint's base URL, without a trailing slash."""
        return str(self.client.base_url).rstrip("/")

    @property
    def endpoint(self) -> str:
        """Which model on which endpoint, in words, e.g.
        ``"gpt-4o at http://127.0.0.1:8000/v1 (OPENAI_BASE_URL)"`` (the CLI prints it)."""
        note = f" ({self.endpoint_note})" if self.endpoint_note else ""
        if self.client.base_url.host in _SIM_HOSTS:
            return f"{self.model} on the built-in simulator{note}"
        return f"{self.model} at {self.base_url}{note}"

    @classmethod
    def from_env(cls, *, simulator: Any = None, **kw: Any) -> "LLMClient":
        """The endpoint the environment names, else the built-in simulator.

        * ``OPENAI_API_KEY`` (and ``OPENAI_BASE_URL`` if set): that endpoint with that key;
        * ``OPENAI_BASE_URL`` alone: that endpoint with ``PLACEHOLDER_KEY`` (a keyless local
          server such as Ollama, llama.cpp or vLLM);
        * neither: the built-in simulator (``simulator``, or a fresh one: ``offline_endpoint()``).

        ``AGENTLAB_MODEL`` picks the model; explicit keywords win. ``.endpoint`` says which.
        """
        kw.setdefault("model", os.environ.get("AGENTLAB_MODEL") or DEFAULT_MODEL)
        key = os.environ.get("OPENAI_API_KEY") or None
        url = os.environ.get("OPENAI_BASE_URL") or None
        if key or url:
            kw.setdefault("api_key", key or PLACEHOLDER_KEY)
            kw.setdefault("base_url", url)
            named = [n for n, v in (("OPENAI_API_KEY", key), ("OPENAI_BASE_URL", url)) if v]
            note = ", ".join(named) + ("" if key else ", no key: placeholder sent")
            kw.setdefault("endpoint_note", note)
            return cls(**kw)
        if simulator is None:
            simulator = offline_endpoint()
        kw.setdefault("endpoint_note", "no OPENAI_API_KEY / OPENAI_BASE_URL set")
        return cls(client=simulator.client(), **kw)

    # -- public calls -------------------------------------------------------------------------

    def chat(self, messages: list[dict], tools: list[dict] | None = None,
             tool_choice: Any = "auto", temperature: float = 0.0, *,
             timeout: float | None = None, **params: Any) -> LLMResponse:
        """One completion. ``timeout`` (seconds) bounds the whole call, retries included.

        Extra ``params`` (``max_tokens``, ``parallel_tool_calls``, ...) go into the request body.
        Raises ``ProviderError`` when the request is malformed or the provider keeps failing.
        """
        body = build_body(self.model, messages, tools, tool_choice, temperature, params)
        call = self._start_call(timeout)
        n = 0
        while True:
            n += 1
            started = time.monotonic()
            try:
                raw = self.client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                       options={"timeout": self._attempt_timeout(call)})
                response = parse_completion(raw)
            except UnicodeEncodeError as exc:
                raise unencodable(messages, exc) from exc
            except (openai.APIError, EmptyResponse, ErrorInBody) as exc:
                self._retry_or_raise(exc, call, n, started)
                continue
            self._record(call, n, started, 200, None, 0.0)
            return self._unique_ids(response, messages)

    def stream(self, messages: list[dict], tools: list[dict] | None = None,
               tool_choice: Any = "auto", temperature: float = 0.0, *,
               timeout: float | None = None, **params: Any) -> Iterator[LLMResponse]:
        """Stream a completion: text deltas as ``LLMResponse(content=delta)``, then one final
        ``LLMResponse(content=None, tool_calls=..., usage=..., finish_reason=..., refusal=...)``.

        A refusal is not text: it arrives whole on the final response. A stream that closes
        before it is complete (see ``agentlab.llm.stream``) is retried while nothing has been
        yielded; once text has been yielded it cannot be taken back, so the final response then
        has ``finish_reason="incomplete"`` (its tool calls may be partial: do not run them), and a
        transport error raises ``ProviderError`` with ``details["partial"] = True``.
        The request is checked here, before the first ``next()``.
        """
        body = build_body(self.model, messages, tools, tool_choice, temperature, params)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return self._stream(body, messages, timeout)

    @staticmethod
    def to_assistant_message(response: LLMResponse, content: str | None = None) -> dict:
        """The assistant message to append to the history after ``response`` (see
        ``agentlab.llm.responses.assistant_message``: raw arguments, refusal kept)."""
        return assistant_message(response, content)

    # -- retrying -----------------------------------------------------------------------------

    def _start_call(self, timeout: float | None) -> _Call:
        with self._lock:
            self._calls += 1
            call = _Call(self._calls, timeout)
        self.attempts = call.attempts  # the notebook sees attempts grow while a call runs
        return call

    def _attempt_timeout(self, call: _Call) -> float:
        remaining = call.remaining()
        if remaining is None:
            return self.timeout
        if remaining <= 0:
            raise ProviderError("provider_timeout", "the call's time budget was used up before "
                                "the next attempt; " + ADVICE["provider_timeout"],
                                retryable=True, details={"status": None,
                                                         "attempts": len(call.attempts),
                                                         "deadline_exceeded": True})
        return min(self.timeout, remaining)

    def _record(self, call: _Call, n: int, started: float, status: int | None,
                code: str | None, delay: float) -> None:
        a = Attempt(call.number, n, started - call.t0, (time.monotonic() - started) * 1000,
                    status, code, delay)
        call.attempts.append(a)
        with self._lock:
            self.history.append(a)

    def _retry_or_raise(self, exc: Exception, call: _Call, n: int, started: float,
                        partial: bool = False) -> None:
        """After failed attempt ``n``: sleep the backoff and return, or raise ``ProviderError``."""
        code, status = classify(exc)
        retryable = code in RETRYABLE_CODES
        retry_after = retry_after_s(exc)
        why = ""
        retry = retryable and not partial and n <= self.max_retries
        delay = 0.0
        if retry:
            delay = backoff_delay(n - 1, self.retry_base_delay, self.max_retry_delay,
                                  retry_after, self._rng)
            remaining = call.remaining()
            if remaining is not None and delay >= remaining:
                retry, delay = False, 0.0
                why = "; the call's time budget does not allow another attempt"
        self._record(call, n, started, status, code, delay)
        if retry:
            self._sleep(delay)
            return
        if partial:
            why = "; the stream broke after text was already yielded, so it was not retried"
        elif retryable and not why:
            why = f" (gave up after {n} attempts)"
        head, details = describe(exc, code, status, self.client.base_url.host)
        details.update(attempts=n, retry_after_s=retry_after, model=self.model)
        if partial:
            details["partial"] = True
        raise ProviderError(code, f"{head}{why} — {ADVICE[code]}", retryable=retryable,
                            details=details) from exc

    # -- parsing ------------------------------------------------------------------------------

    def _unique_ids(self, response: LLMResponse, messages: list) -> LLMResponse:
        """Give a fresh ``call_...`` id to every call that has none, repeats one of the same
        response, or repeats a call id already in the history sent (providers that number
        their calls ``call_0, call_1`` per response). Ids are what tool results, the strict
        pairing check and the durable tool log (chapter 11) key on."""
        if not response.tool_calls:
            return response
        used = {tc.get("id") for m in messages if m.get("role") == "assistant"
                for tc in (m.get("tool_calls") or ()) if isinstance(tc, dict)}
        for tc in response.tool_calls:
            if not tc.id or tc.id in used:
                with self._lock:
                    tc.id = f"call_{self._id_rng.getrandbits(96):024x}"
            used.add(tc.id)
        return response

    def _stream(self, body: dict, messages: list,
                timeout: float | None) -> Iterator[LLMResponse]:
        call = self._start_call(timeout)
        n = 0
        while True:
            n += 1
            started = time.monotonic()
            acc = StreamAssembler()
            yielded = False
            try:
                chunks = self.client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                          options={"timeout": self._attempt_timeout(call)},
                                          stream=True, stream_cls=ChunkStream)
                odd = not_a_stream(chunks.response)
                if odd is not None:
                    chunks.close()
                    if isinstance(odd, Exception):
                        raise odd
                    parts = as_stream(parse_completion(odd))  # a whole completion: the answer
                    self._record(call, n, started, 200, None, 0.0)
                    yield from parts[:-1]
                    yield self._unique_ids(parts[-1], messages)
                    return
                try:
                    for chunk in chunks:
                        text = acc.add(chunk)
                        if text:
                            yielded = True
                            yield LLMResponse(content=text)
                        remaining = call.remaining()
                        if remaining is not None and remaining <= 0:
                            raise openai.APITimeoutError(request=chunks.response.request)
                finally:
                    chunks.close()
                complete = acc.complete(chunks.saw_done)
                if not complete and not yielded:
                    raise StreamEndedEarly("the stream closed before it was complete (no "
                                           "finish_reason, no [DONE], arguments not whole)")
                if complete and not acc.saw_choice:
                    raise EmptyResponse("the stream ended without any choice in it")
            except UnicodeEncodeError as exc:
                raise unencodable(messages, exc) from exc
            except (openai.APIError, StreamEndedEarly, EmptyResponse, ErrorInBody) as exc:
                self._retry_or_raise(exc, call, n, started, partial=yielded)
                continue
            self._record(call, n, started, 200, None, 0.0)
            yield self._unique_ids(acc.final(complete), messages)
            return

"""Chapter 01 — ``LLMClient``: call a chat-completions model, retry what can succeed, parse robustly.

Taught in ``notebooks/01_llm_client.ipynb`` (step 1 of the article). The runtime sees one result
type, ``LLMResponse``, whatever the endpoint, and one error type, ``ProviderError``:

* **Sending.** Requests go through the SDK's raw-request path,
  ``client.post("/chat/completions", body=..., cast_to=ChatCompletion)``. It keeps the SDK's auth,
  base URL, timeouts, error types and SSE parsing, but skips ``chat.completions.create()``'s walk
  over the whole history (about 0.3 ms per message on every call). We check the few things that
  would make a request malformed ourselves, cheaply, before any network.
* **Retrying.** Only what can succeed on retry: 408, 409, 429, 5xx, connection errors and
  timeouts. Exponential backoff with *full* jitter (``uniform(0, min(cap, base * 2**k))``), the
  server's ``Retry-After`` as a floor, ``max_retry_delay`` as a cap. 400/401/403/404/422 are raised
  at once. The SDK's own retries are switched off (``max_retries=0``) so ours are the only ones.
* **Parsing.** Tool-call arguments that are not a JSON object never raise: the ``ToolCall`` keeps
  the raw text and a ``parse_error`` the executor can send back to the model.
* **Streaming.** ``stream()`` yields text deltas, then one final response with the tool calls
  assembled from their fragments, the usage, and the finish reason. Retries happen only before
  the first delta is yielded (after that the caller has already shown text).

Every attempt is logged (``.attempts`` for the last call, ``.history`` for all), so a notebook can
draw the retry timeline.
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from .errors import ConfigError, ProviderError
from .models import DEFAULT_MODEL
from .sim.core import SimulatedAPI

__all__ = [
    "ToolCall", "LLMResponse", "Attempt", "LLMClient",
    "backoff_delay", "should_retry", "parse_arguments", "collect_stream",
    "RETRYABLE_STATUS", "ROLES",
]

#: HTTP statuses worth retrying besides every 5xx (timeout, conflict/lock, rate limit).
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: Message roles the chat-completions API accepts.
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_STREAM_CLS = openai.Stream[ChatCompletionChunk]


@dataclass
class ToolCall:
    """One function call requested by the model.

    ``arguments`` is always a dict. When the model sent text that is not a JSON object,
    ``arguments`` is ``{}``, ``raw_arguments`` keeps the text and ``parse_error`` says what was
    wrong (the executor turns that into an ``invalid_arguments`` result instead of running the tool).
    """

    id: str
    name: str
    arguments: dict
    raw_arguments: str = ""
    parse_error: str | None = None


@dataclass
class LLMResponse:
    """What a model call returned: text and/or tool calls, token usage, why it stopped."""

    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    finish_reason: str = ""

    @property
    def has_tool_calls(self) -> bool:
        return len(self.tool_calls) > 0


@dataclass
class Attempt:
    """One request on the wire, for the retry timeline.

    Args:
        call: number of the ``chat``/``stream`` call on this client (1, 2, ...).
        n: attempt number within the call (1 = first try).
        started_at_s: when the attempt started, seconds after the call started.
        duration_ms: how long the request took (a stream: until its last chunk).
        status: HTTP status, ``None`` when no response came (timeout, connection error).
        error_code: ``None`` on success, else the ``ProviderError`` code it maps to.
        delay_s: the backoff slept after this attempt before the next one (0 if none followed).
    """

    call: int
    n: int
    started_at_s: float
    duration_ms: float
    status: int | None
    error_code: str | None
    delay_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error_code is None


# --------------------------------------------------------------------------------------------
# Small pure functions (the exercise of chapter 01 rebuilds the first two)
# --------------------------------------------------------------------------------------------

def should_retry(status: int) -> bool:
    """True for HTTP statuses a retry can fix: 408, 409, 429 and every 5xx."""
    return status in RETRYABLE_STATUS or status >= 500


def backoff_delay(attempt: int, base: float, cap: float, retry_after: float | None = None,
                  rng: random.Random | None = None) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` = 0 for the first retry).

    Full jitter: a uniform draw in ``[0, min(cap, base * 2**attempt)]``, so clients that failed
    together do not retry together. A server's ``Retry-After`` is a floor (never retry sooner than
    asked); ``cap`` bounds the result either way.
    """
    ceiling = min(cap, base * 2.0 ** min(attempt, 64))  # min(): 2**1100 would overflow a float
    delay = (rng or random).uniform(0.0, ceiling)
    if retry_after is not None and retry_after > 0:
        delay = max(delay, retry_after)
    return min(delay, cap)


def parse_arguments(raw: str | None) -> tuple[dict, str | None]:
    """Parse tool-call arguments: ``(dict, None)`` or ``({}, why it failed)``; never raises."""
    if raw is None or not raw.strip():
        return {}, None  # a call without arguments
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        where = f" (char {exc.pos})" if isinstance(exc, json.JSONDecodeError) else ""
        return {}, f"arguments are not valid JSON: {getattr(exc, 'msg', exc)}{where}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def collect_stream(chunks: Iterable[LLMResponse]) -> LLMResponse:
    """Join what ``LLMClient.stream()`` yielded into one response, as ``chat()`` returns it."""
    parts: list[str] = []
    final = LLMResponse()
    for item in chunks:
        if item.content is not None:
            parts.append(item.content)
        else:
            final = item
    return LLMResponse("".join(parts) if parts else None, final.tool_calls, final.usage,
                       final.finish_reason)


def _usage(usage: Any) -> dict:
    if usage is None:
        return {}
    return {k: getattr(usage, k, 0) or 0
            for k in ("prompt_tokens", "completion_tokens", "total_tokens")}


def _retry_after_s(exc: Exception) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds) from an error response, if any."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    for header, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = response.headers.get(header)
        if value is not None:
            try:
                return max(0.0, float(value) * scale)
            except ValueError:
                pass  # an HTTP date: rare for model APIs; fall back to our own backoff
    return None


class _StreamEndedEarly(Exception):
    """The SSE stream closed before any chunk carried a finish_reason."""


# what each error code means for the reader, appended to the error message
_ADVICE = {
    "rate_limited": "the provider is rate limiting; slow down or raise max_retries",
    "provider_timeout": "the model did not answer in time; retry later or raise the timeout",
    "provider_unavailable": "the provider failed or could not be reached; retry later",
    "auth_failed": "check the API key (OPENAI_API_KEY) and its permissions; not retried",
    "bad_request": "the request itself is wrong; fix it, retrying cannot help",
    "conflict": "the provider reported a conflict; retry later",
}


def _classify(exc: Exception) -> tuple[str, int | None]:
    """Map an SDK exception (or a truncated stream) to (error code, HTTP status)."""
    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError: it is a subclass
        return "provider_timeout", None
    if isinstance(exc, (openai.APIConnectionError, _StreamEndedEarly)):
        return "provider_unavailable", None
    if isinstance(exc, openai.APIStatusError):
        s = exc.status_code
        if s == 429:
            return "rate_limited", s
        if s == 408:
            return "provider_timeout", s
        if s == 409:
            return "conflict", s
        if s >= 500:
            return "provider_unavailable", s
        if s in (401, 403):
            return "auth_failed", s
        return "bad_request", s
    return "provider_unavailable", None  # an error event inside a 200 stream, a bad body, ...


class _Call:
    """Book-keeping for one chat/stream call: its attempts and its deadline."""

    def __init__(self, number: int, timeout: float | None) -> None:
        self.number = number
        self.t0 = time.monotonic()
        self.deadline = None if timeout is None else self.t0 + timeout
        self.attempts: list[Attempt] = []

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------

class LLMClient:
    """A chat-completions client with honest retries and robust parsing (notebook 01).

    Args:
        model: model name sent with every request.
        base_url, api_key: for the ``openai.OpenAI`` built here (ignored when ``client`` is given).
        max_retries: retries after the first attempt (so at most ``max_retries + 1`` requests).
        retry_base_delay: backoff base in seconds (ceiling of the first retry's jittered delay).
        timeout: seconds allowed per request.
        client: an ``openai.OpenAI`` to use (the simulator and tests plug in here); its own
            retries are switched off with ``with_options(max_retries=0)``.
        max_retry_delay: cap on any single backoff, ``Retry-After`` included.
        seed: seed for the jitter, for reproducible schedules in notebooks and tests.
        sleep: the function used to wait between attempts (tests can record instead of sleep).
    """

    HISTORY_LIMIT = 10_000  # attempts kept in ``.history`` (oldest dropped first)

    def __init__(self, model: str = DEFAULT_MODEL, base_url: str | None = None,
                 api_key: str | None = None, max_retries: int = 3, retry_base_delay: float = 1.0,
                 timeout: float = 60.0, client: openai.OpenAI | None = None, *,
                 max_retry_delay: float = 30.0, seed: int | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
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
        self._rng = random.Random(seed)
        self._sleep = sleep
        self._lock = threading.Lock()
        self._calls = 0
        self.attempts: list[Attempt] = []
        self.history: deque[Attempt] = deque(maxlen=self.HISTORY_LIMIT)

    def __repr__(self) -> str:
        return (f"LLMClient(model={self.model!r}, base_url={str(self.client.base_url)!r}, "
                f"max_retries={self.max_retries})")

    @classmethod
    def from_env(cls, *, simulator: Any = None, **kw: Any) -> "LLMClient":
        """A real client when ``OPENAI_API_KEY`` is set, else one on the built-in simulator.

        ``OPENAI_BASE_URL`` and ``AGENTLAB_MODEL`` are honoured; explicit keywords win.
        ``simulator``: the ``agentlab.sim.Simulator`` to use when there is no key.
        """
        kw.setdefault("model", os.environ.get("AGENTLAB_MODEL") or DEFAULT_MODEL)
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            kw.setdefault("api_key", key)
            kw.setdefault("base_url", os.environ.get("OPENAI_BASE_URL") or None)
            return cls(**kw)
        if simulator is None:
            simulator = SimulatedAPI()
        return cls(client=simulator.client(), **kw)

    # -- public calls -------------------------------------------------------------------------

    def chat(self, messages: list[dict], tools: list[dict] | None = None,
             tool_choice: Any = "auto", temperature: float = 0.0, *,
             timeout: float | None = None, **params: Any) -> LLMResponse:
        """One completion. ``timeout`` (seconds) bounds the whole call, retries included.

        Extra ``params`` (``max_tokens``, ``parallel_tool_calls``, ...) go into the request body.
        Raises ``ProviderError`` when the request is malformed or the provider keeps failing.
        """
        body = self._body(messages, tools, tool_choice, temperature, params)
        call = self._start_call(timeout)
        n = 0
        while True:
            n += 1
            started = time.monotonic()
            try:
                raw = self.client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                       options={"timeout": self._attempt_timeout(call)})
            except openai.APIError as exc:
                self._retry_or_raise(exc, call, n, started)
                continue
            self._record(call, n, started, 200, None, 0.0)
            return self._parse_completion(raw)

    def stream(self, messages: list[dict], tools: list[dict] | None = None,
               tool_choice: Any = "auto", temperature: float = 0.0, *,
               timeout: float | None = None, **params: Any) -> Iterator[LLMResponse]:
        """Stream a completion: text deltas as ``LLMResponse(content=delta)``, then one final
        ``LLMResponse(content=None, tool_calls=..., usage=..., finish_reason=...)``.

        A stream that closes before any finish reason is retried while nothing has been yielded;
        once text has been yielded it cannot be taken back, so the final response then has
        ``finish_reason="incomplete"`` (its tool calls may be partial: do not run them), and a
        transport error raises ``ProviderError`` with ``details["partial"] = True``.
        The request is checked here, before the first ``next()``.
        """
        body = self._body(messages, tools, tool_choice, temperature, params)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        return self._stream(body, timeout)

    @staticmethod
    def to_assistant_message(response: LLMResponse, content: str | None = None) -> dict:
        """The assistant message to append to the history after ``response``.

        Arguments go back exactly as the model sent them (``raw_arguments``), so a call whose
        arguments did not parse is still answered by its tool message. ``content`` overrides the
        response's text (a streamed final response has ``content=None``; pass the joined deltas).
        """
        text = content if content is not None else response.content
        if text is None and not response.tool_calls:
            text = ""  # the API wants a content string when there are no tool calls
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        if response.tool_calls:
            msg["tool_calls"] = [
                {"id": tc.id, "type": "function",
                 "function": {"name": tc.name,
                              "arguments": tc.raw_arguments or
                              json.dumps(tc.arguments, ensure_ascii=False)}}
                for tc in response.tool_calls]
        return msg

    # -- request building and checking --------------------------------------------------------

    def _body(self, messages: Any, tools: Any, tool_choice: Any, temperature: float,
              params: dict) -> dict:
        # Cheap structural checks (O(n) dict lookups, no copies): what would come back as a 400
        # anyway is refused here, before any network and without spending a retry.
        if not isinstance(messages, list) or not messages:
            raise self._bad("messages must be a non-empty list of dicts", "messages")
        for i, m in enumerate(messages):
            if not isinstance(m, dict):
                raise self._bad(f"messages[{i}] is a {type(m).__name__}, not a dict",
                                f"messages[{i}]")
            if m.get("role") not in ROLES:
                raise self._bad(f"messages[{i}] has unknown role {m.get('role')!r} "
                                f"(expected one of {sorted(ROLES)})", f"messages[{i}].role")
        body: dict[str, Any] = {"model": self.model, "messages": messages,
                                "temperature": temperature}
        if tools:
            if not isinstance(tools, list):
                raise self._bad("tools must be a list of function schemas", "tools")
            for i, t in enumerate(tools):
                fn = t.get("function") if isinstance(t, dict) else None
                if (not isinstance(t, dict) or t.get("type") != "function"
                        or not isinstance(fn, dict) or not isinstance(fn.get("name"), str)
                        or not fn["name"]):
                    raise self._bad(f"tools[{i}] is not a function schema "
                                    "({'type': 'function', 'function': {'name': ...}})",
                                    f"tools[{i}]")
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        body.update(params)
        return body

    @staticmethod
    def _bad(message: str, param: str) -> ProviderError:
        return ProviderError("bad_request", f"invalid request: {message}; not sent",
                             details={"status": None, "attempts": 0, "param": param})

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
                                "the next attempt; " + _ADVICE["provider_timeout"],
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
        code, status = _classify(exc)
        retryable = code in ("rate_limited", "provider_timeout", "provider_unavailable",
                             "conflict")
        retry_after = _retry_after_s(exc)
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
        label = f"HTTP {status}" if status is not None else type(exc).__name__
        details = {"status": status, "attempts": n, "body": getattr(exc, "body", None),
                   "retry_after_s": retry_after, "model": self.model}
        if partial:
            details["partial"] = True
        raise ProviderError(code, f"{label}{why}: {_ADVICE[code]}", retryable=retryable,
                            details=details) from exc

    # -- parsing ------------------------------------------------------------------------------

    @staticmethod
    def _parse_completion(raw: ChatCompletion) -> LLMResponse:
        if not raw.choices:
            return LLMResponse(usage=_usage(raw.usage))
        choice = raw.choices[0]
        msg = choice.message
        calls = []
        for i, tc in enumerate(getattr(msg, "tool_calls", None) or []):
            fn = getattr(tc, "function", None)
            raw_args = getattr(fn, "arguments", None) or ""
            args, err = parse_arguments(raw_args)
            calls.append(ToolCall(getattr(tc, "id", None) or f"call_{i}",
                                  getattr(fn, "name", None) or "", args, raw_args, err))
        return LLMResponse(getattr(msg, "content", None), calls, _usage(raw.usage),
                           choice.finish_reason or "")

    def _stream(self, body: dict, timeout: float | None) -> Iterator[LLMResponse]:
        call = self._start_call(timeout)
        n = 0
        while True:
            n += 1
            started = time.monotonic()
            acc = _Assembler()
            yielded = False
            try:
                chunks = self.client.post("/chat/completions", body=body, cast_to=ChatCompletion,
                                          options={"timeout": self._attempt_timeout(call)},
                                          stream=True, stream_cls=_STREAM_CLS)
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
                if acc.finish_reason is None and not yielded:
                    raise _StreamEndedEarly("stream ended before a finish_reason")
            except (openai.APIError, _StreamEndedEarly) as exc:
                self._retry_or_raise(exc, call, n, started, partial=yielded)
                continue
            self._record(call, n, started, 200, None, 0.0)
            yield acc.final()
            return


class _Assembler:
    """Builds the final streamed response from chunks.

    Robust to what real providers send: a tool-call delta without ``function``, the id and name
    only on the first fragment (or repeated on every one), interleaved indices of parallel calls,
    a missing index, a usage chunk with no choices.
    """

    def __init__(self) -> None:
        self.calls: dict[int, dict] = {}
        self.finish_reason: str | None = None
        self.usage: dict = {}

    def add(self, chunk: ChatCompletionChunk) -> str | None:
        """Take one chunk; return its text delta (if any)."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = _usage(usage)
        text = None
        for choice in getattr(chunk, "choices", None) or []:
            if (getattr(choice, "index", 0) or 0) != 0:
                continue  # we ask for one choice; ignore any other
            delta = getattr(choice, "delta", None)
            if delta is not None:
                text = getattr(delta, "content", None) or text
                for tc in getattr(delta, "tool_calls", None) or []:
                    self._add_fragment(tc)
            if getattr(choice, "finish_reason", None):
                self.finish_reason = choice.finish_reason
        return text

    def _add_fragment(self, tc: Any) -> None:
        idx, tc_id = getattr(tc, "index", None), getattr(tc, "id", None)
        if idx is None:
            # Some providers omit the index: a known id continues its call, a new id opens a
            # new one, no id continues the latest call.
            by_id = {s["id"]: i for i, s in self.calls.items() if s["id"]}
            if tc_id in by_id:
                idx = by_id[tc_id]
            elif tc_id or not self.calls:
                idx = max(self.calls, default=-1) + 1
            else:
                idx = max(self.calls)
        slot = self.calls.setdefault(idx, {"id": "", "name": "", "args": []})
        if tc_id and not slot["id"]:
            slot["id"] = tc_id
        fn = getattr(tc, "function", None)
        if fn is None:
            return
        name = getattr(fn, "name", None)
        if name and name != slot["name"]:
            slot["name"] += name  # set once, or a name sent in pieces
        if getattr(fn, "arguments", None):
            slot["args"].append(fn.arguments)

    def final(self) -> LLMResponse:
        calls = []
        for idx in sorted(self.calls):
            s = self.calls[idx]
            raw = "".join(s["args"])
            args, err = parse_arguments(raw)
            calls.append(ToolCall(s["id"] or f"call_{idx}", s["name"], args, raw, err))
        return LLMResponse(None, calls, self.usage, self.finish_reason or "incomplete")

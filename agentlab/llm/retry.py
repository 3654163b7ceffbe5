"""Which failures to retry, how long to wait, and what to tell the reader (notebook 01).

* ``should_retry`` / ``backoff_delay``: the two small rules the chapter-01 exercise rebuilds
  (408, 409, 429 and 5xx are worth retrying; full-jitter exponential backoff with the server's
  ``Retry-After`` as a floor and a cap).
* ``classify``: an SDK exception (or a broken or empty stream) -> a stable ``ProviderError`` code.
* ``describe``: the error message and details a reader needs to act: the HTTP status, the
  server's own message (trimmed) and the host that answered, so "HTTP 404 from
  api.example.com: The model `gpt-5x` does not exist" says which endpoint and what it said.
"""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

import openai

from ..redaction import redact, redact_text

__all__ = ["RETRYABLE_STATUS", "RETRYABLE_CODES", "ADVICE", "Attempt", "should_retry",
           "backoff_delay", "classify", "retry_after_s", "describe", "StreamEndedEarly",
           "EmptyResponse", "ErrorInBody"]

#: HTTP statuses worth retrying besides every 5xx (timeout, conflict/lock, rate limit).
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: Error codes a retry can fix. ``empty_response`` (a 200 with no choice in it) is a provider
#: glitch, not a verdict on the request, so it is retried like a 5xx.
RETRYABLE_CODES = frozenset({"rate_limited", "provider_timeout", "provider_unavailable",
                             "conflict", "empty_response"})
_MESSAGE_LIMIT = 300  # characters of the server's message kept in ours
_BODY_LIMIT = 2000  # characters of a non-JSON body kept in details["body"]

#: What each error code means for the reader, appended to the error message.
ADVICE = {
    "rate_limited": "the provider is rate limiting; slow down or raise max_retries",
    "provider_timeout": "the model did not answer in time; retry later or raise the timeout",
    "provider_unavailable": "the provider failed or could not be reached; retry later",
    "empty_response": "the provider answered 200 with no choice in it; retry later",
    "auth_failed": "check the API key (OPENAI_API_KEY) and its permissions; not retried",
    "model_not_found": "check the model name (AGENTLAB_MODEL) and the base URL; a local model "
                       "must be registered with agentlab.models.register_model; not retried",
    "context_overflow": "the conversation does not fit the model's context window; trim it "
                        "(chapter 04) or lower max_tokens; not retried",
    "bad_request": "the request itself is wrong; fix it, retrying cannot help",
    "conflict": "the provider reported a conflict; retry later",
    "bad_response": "the endpoint answered 200 with something that is not a chat completion "
                    "(a login or proxy page?); check OPENAI_BASE_URL and the network; not retried",
}


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


class StreamEndedEarly(Exception):
    """The SSE stream closed before it was complete (no finish reason, no ``[DONE]``, and tool
    arguments that are not whole JSON yet)."""


class EmptyResponse(Exception):
    """A 200 answer with no choice (or no message) in it."""


class ErrorInBody(Exception):
    """A 200 answer that is not a completion: ``body`` is its ``error`` object (a dict), or
    the text of a body that is not JSON (an HTML page)."""

    def __init__(self, body: dict | str) -> None:
        super().__init__(body.get("message", "") if isinstance(body, dict) else body[:200])
        self.body = body


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


def _body_code(exc: Exception) -> str | None:
    body = getattr(exc, "body", None)
    return body.get("code") if isinstance(body, dict) else None


def _status_code(s: int) -> str:
    """The error code for an HTTP status (or a status an error object names) >= 400."""
    if s == 429:
        return "rate_limited"
    if s == 408:
        return "provider_timeout"
    if s == 409:
        return "conflict"
    if s >= 500:
        return "provider_unavailable"
    if s in (401, 403):
        return "auth_failed"
    return "bad_request"


def _error_object_code(body: Any) -> str:
    """The code for an ``{"error": ...}`` object in a 200 (a body or a stream event): what it
    blames, by its ``type`` or the status it names; otherwise a provider failure, retried."""
    if not isinstance(body, dict):
        return "provider_unavailable"
    if body.get("code") == "context_length_exceeded":
        return "context_overflow"
    if body.get("type") == "invalid_request_error":
        return "bad_request"
    status = body.get("status_code", body.get("code"))
    if isinstance(status, int) and not isinstance(status, bool) and 400 <= status < 600:
        return _status_code(status)
    return "provider_unavailable"


def classify(exc: Exception) -> tuple[str, int | None]:
    """Map an SDK exception (or a broken or empty stream) to ``(error code, HTTP status)``."""
    if isinstance(exc, EmptyResponse):
        return "empty_response", 200
    if isinstance(exc, ErrorInBody):
        if isinstance(exc.body, str):
            return "bad_response", 200
        return _error_object_code(exc.body), 200
    if isinstance(exc, openai.APITimeoutError):  # before APIConnectionError: it is a subclass
        return "provider_timeout", None
    if isinstance(exc, (openai.APIConnectionError, StreamEndedEarly)):
        return "provider_unavailable", None
    if isinstance(exc, openai.APIStatusError):
        s = exc.status_code
        if s == 404 and _body_code(exc) == "model_not_found":
            return "model_not_found", s
        if s < 500 and _body_code(exc) == "context_length_exceeded":
            return "context_overflow", s
        return _status_code(s), s
    # an {"error": ...} event inside a 200 stream: one that blames the request (Groq's
    # tool_use_failed, OpenRouter's "Token limit reached") would fail the same way again
    return _error_object_code(getattr(exc, "body", None)), None


def retry_after_s(exc: Exception) -> float | None:
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


def _server_message(exc: Exception) -> str:
    """The provider's own words: the error object's ``message``, else the body text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        text = body.get("message") or body.get("error") or ""
        text = text if isinstance(text, str) else str(text)
    elif body is not None:
        text = str(body)
    elif isinstance(exc, (StreamEndedEarly, EmptyResponse)):
        text = str(exc)
    else:
        text = ""
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def describe(exc: Exception, code: str, status: int | None, host: str) -> tuple[str, dict]:
    """``(message head, details)`` for a ``ProviderError``: status or exception type, the host,
    the server's message. The caller appends why it gave up and the advice. Secrets are
    masked (``agentlab.redaction``): a 401 body may echo the API key it refused."""
    request = getattr(exc, "request", None)
    url = getattr(request, "url", None)
    if url is not None:
        host = url.host or host
    if code == "empty_response":
        label = "empty response"
    elif isinstance(exc, ErrorInBody):
        label = "non-JSON body in HTTP 200" if isinstance(exc.body, str) else "error in a 200 body"
    elif status is not None:
        label = f"HTTP {status}"
    elif type(exc) is openai.APIError:
        label = "error event in the stream"  # a 200 whose SSE carried {"error": ...}
    else:
        label = type(exc).__name__
    said = _server_message(exc)
    body = getattr(exc, "body", None)
    if isinstance(body, str) and len(body) > _BODY_LIMIT:
        body = body[:_BODY_LIMIT]  # the first bytes of a page, not the whole page
    details: dict[str, Any] = {"status": status, "host": host, "server_message": said,
                               "body": body}
    if url is not None:
        port = f":{url.port}" if url.port else ""
        details["url"] = f"{url.scheme}://{url.host}{port}{url.path}"  # no query string
    head = f"{label} from {host}" + (f": {said}" if said else "")
    return redact_text(head), redact(details)

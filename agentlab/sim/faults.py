"""Injected failures and simulated latency (taught in notebooks 00 and 01).

A real endpoint fails in a handful of ways that an agent runtime must survive: rate limits
(429 with ``Retry-After``), server errors (500/503), read timeouts, tool-call arguments that are
not valid JSON, and streams that stop half way. ``Faults`` draws them at random per request
from a seeded generator; ``FaultPlan`` lists them request by request, which is what a test or a
notebook wants ("429, then 500, then succeed"). ``Latency`` makes replies take time like a real
model: a time to first token, then a steady token rate, all scaled by ``time_scale``.

``FaultPlan`` entries (one per chat-completions request, in order; past the end: no fault):

- ``None`` or ``"ok"``: answer normally;
- ``"rate_limit"`` (429), ``"server_error"`` (500), ``"unavailable"`` (503);
- ``"timeout"``: no answer (in-process: ``httpx2.ReadTimeout``, i.e. ``openai.APITimeoutError``;
  over HTTP: the server stalls, then drops the connection);
- ``"disconnect"``: the connection drops without a reply (``openai.APIConnectionError``);
- ``"malformed_arguments"``: tool-call arguments cut in half (not valid JSON), both modes;
- ``"truncated_stream"``: a stream that stops half way (inside a tool call's arguments when it
  has calls), without ``finish_reason`` or ``[DONE]`` (a non-streaming request gets a dropped
  connection instead);
- ``"error_in_body"``: HTTP 200 whose body (or first SSE event) is an ``{"error": {"code": 502,
  "message": ...}}`` object, as OpenRouter documents for an error after the model started;
- an ``int`` HTTP status, e.g. ``401``, ``400``, ``429``, ``503``: an OpenAI-shaped error;
- ``(entry, {"retry_after": 0.5})``: an entry with options (``retry_after`` seconds for a 429,
  ``message`` to replace the error text).
"""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable

from .strict import api_error
from ..models import DEFAULT_MODEL

__all__ = ["Faults", "FaultPlan", "FaultSpec", "Latency", "FAULT_KINDS", "fault_response"]

#: Named faults and the HTTP status they answer with (None: no HTTP error response).
FAULT_KINDS: dict[str, int | None] = {
    "rate_limit": 429, "server_error": 500, "unavailable": 503, "timeout": None,
    "disconnect": None, "malformed_arguments": None, "truncated_stream": None,
    "error_in_body": None,
}
_STATUS_KIND = {429: "rate_limit", 500: "server_error", 503: "unavailable"}


@dataclass(frozen=True)
class FaultSpec:
    """One fault to apply to one request: ``kind`` (a ``FAULT_KINDS`` name or ``http_<status>``),
    ``status`` for HTTP errors, ``retry_after`` seconds for 429s, optional ``message``."""
    kind: str
    status: int | None = None
    retry_after: float | None = None
    message: str | None = None

    @classmethod
    def parse(cls, entry: Any, retry_after: float | None = None) -> "FaultSpec | None":
        """Read one ``FaultPlan`` entry (see the module docstring for the syntax)."""
        options: dict = {}
        if isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[1], dict):
            entry, options = entry
        if entry is None or entry == "ok":
            return None
        unknown = set(options) - {"retry_after", "message"}
        if unknown:
            raise ValueError(f"unknown fault option(s) {sorted(unknown)}; "
                             "use 'retry_after' and/or 'message'")
        ra = options.get("retry_after", retry_after)
        if isinstance(entry, bool) or not isinstance(entry, (int, str)):
            raise ValueError(f"bad fault entry {entry!r}: use None, a name from "
                             f"{sorted(FAULT_KINDS)}, an HTTP status int, or (entry, options)")
        if isinstance(entry, int):
            if not 400 <= entry <= 599:
                raise ValueError(f"fault status {entry} is not an HTTP error status (400-599)")
            kind = _STATUS_KIND.get(entry, f"http_{entry}")
            return cls(kind, entry, ra if entry == 429 else None, options.get("message"))
        if entry not in FAULT_KINDS:
            raise ValueError(f"unknown fault {entry!r}; known: {sorted(FAULT_KINDS)}")
        status = FAULT_KINDS[entry]
        return cls(entry, status, ra if status == 429 else None, options.get("message"))


class FaultPlan:
    """Faults listed request by request: ``FaultPlan(["rate_limit", 500, None])``.

    Entry *i* applies to the *i*-th chat-completions request; past the end every request is
    answered normally. ``retry_after`` is the default ``Retry-After`` (seconds) for 429s.
    """

    def __init__(self, entries: Iterable[Any], retry_after: float | None = None):
        self.entries = list(entries)
        self.retry_after = retry_after
        self._specs = [FaultSpec.parse(e, retry_after) for e in self.entries]  # validate now
        self._next = 0
        self._lock = threading.Lock()

    def next(self) -> FaultSpec | None:
        """The fault for the next request (None: answer normally)."""
        with self._lock:
            i, self._next = self._next, self._next + 1
        return self._specs[i] if i < len(self._specs) else None

    def reset(self) -> None:
        """Start again from the first entry."""
        with self._lock:
            self._next = 0

    def __repr__(self) -> str:
        return f"FaultPlan({self.entries!r})"


@dataclass
class Faults:
    """Random faults: each field is the probability that a request gets that fault.

    At most one fault per request; the probabilities must sum to at most 1. Draws come from
    ``random.Random(seed)`` so a run is reproducible. ``retry_after`` (seconds) is sent as a
    ``Retry-After`` header on 429s.
    """
    rate_limit: float = 0.0
    server_error: float = 0.0
    timeout: float = 0.0
    malformed_arguments: float = 0.0
    truncated_stream: float = 0.0
    retry_after: float | None = None
    seed: int = 0
    unavailable: float = 0.0
    _rng: random.Random = field(init=False, repr=False, compare=False)
    _lock: Any = field(init=False, repr=False, compare=False)

    _ORDER = ("rate_limit", "server_error", "unavailable", "timeout", "malformed_arguments",
              "truncated_stream")

    def __post_init__(self) -> None:
        probs = [getattr(self, k) for k in self._ORDER]
        if any(not 0.0 <= p <= 1.0 for p in probs) or sum(probs) > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must each be in [0, 1] and sum to <= 1: "
                             f"{dict(zip(self._ORDER, probs))}")
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Restart the random sequence from ``seed``."""
        self._rng = random.Random(self.seed)

    def next(self) -> FaultSpec | None:
        """Draw the fault for the next request (one uniform draw per request)."""
        with self._lock:
            u = self._rng.random()
        for kind in self._ORDER:
            p = getattr(self, kind)
            if u < p:
                return FaultSpec.parse(kind, self.retry_after)
            u -= p
        return None


@dataclass
class Latency:
    """Simulated model speed: ``first_token_ms`` before the first token, then
    ``tokens_per_second``; each request's times are scaled by ``1 ± jitter`` (seeded) and by
    ``time_scale`` (0 means no sleeping at all; 0.01 makes a notebook 100x faster)."""
    first_token_ms: float = 200.0
    tokens_per_second: float = 80.0
    jitter: float = 0.1
    time_scale: float = 1.0

    def factor(self, rng: random.Random) -> float:
        """The multiplier for one request: ``time_scale * (1 + uniform(-jitter, jitter))``."""
        if self.time_scale <= 0:
            return 0.0
        return self.time_scale * (1.0 + rng.uniform(-self.jitter, self.jitter))

    def first_token_s(self, factor: float) -> float:
        """Seconds until the first token for a request with this ``factor``."""
        return self.first_token_ms / 1000.0 * factor

    def tokens_s(self, n_tokens: int, factor: float) -> float:
        """Seconds to generate ``n_tokens`` for a request with this ``factor``."""
        if self.tokens_per_second <= 0:
            return 0.0
        return n_tokens / self.tokens_per_second * factor


# ---------------------------------------------------------------- error bodies

_ERRORS: dict[int, tuple[str, str, str | None]] = {
    400: ("Invalid request (simulated fault).", "invalid_request_error", None),
    401: ("Incorrect API key provided: sk-sim. You can find your API key at "
          "https://platform.openai.com/account/api-keys.", "invalid_request_error",
          "invalid_api_key"),
    403: ("You are not allowed to sample from this model.", "invalid_request_error", None),
    404: ("The model `{model}` does not exist or you do not have access to it.",
          "invalid_request_error", "model_not_found"),
    408: ("Request timed out.", "timeout", None),
    409: ("The request conflicted with another request. Please try again.",
          "invalid_request_error", None),
    422: ("The request could not be processed (simulated fault).", "invalid_request_error", None),
    429: ("Rate limit reached for {model} in organization org-sim on requests per min (RPM): "
          "Limit 3, Used 3, Requested 1. Please try again in {wait}. Visit "
          "https://platform.openai.com/account/rate-limits to learn more.", "requests",
          "rate_limit_exceeded"),
    500: ("The server had an error while processing your request. Sorry about that!",
          "server_error", None),
    502: ("Bad gateway.", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", None),
}


def fault_response(spec: FaultSpec, model: str = DEFAULT_MODEL) -> tuple[int, dict, dict]:
    """``(status, body, headers)`` for an HTTP-error fault, shaped like the real API's."""
    status = spec.status or 500
    message, kind, code = _ERRORS.get(status, ("Simulated HTTP error.", "server_error"
                                               if status >= 500 else "invalid_request_error",
                                               None))
    wait = f"{spec.retry_after:g}s" if spec.retry_after is not None else "20s"
    message = spec.message or message.format(model=model, wait=wait)
    headers: dict[str, str] = {}
    if status == 429:
        headers = {"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0",
                   "x-ratelimit-reset-requests": wait}
        if spec.retry_after is not None:
            headers["retry-after"] = f"{spec.retry_after:g}"
    return status, api_error(message, type=kind, code=code), headers

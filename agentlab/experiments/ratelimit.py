"""Client-side limits for sweeps against real endpoints: rate, output length, spend (notebook 14).

A sweep of a thousand runs against a real provider hits its limits within seconds: requests
per minute (RPM) and tokens per minute (TPM), answered with 429s that the client then retries,
which wastes both time and quota. The fix is to stay under the limits on our side.

``TokenBucket`` is the classic algorithm: a bucket holds up to ``capacity`` tokens and refills
at ``rate_per_minute / 60`` per second; taking ``n`` waits until ``n`` are there. A request
larger than the bucket is let through when the bucket is full and leaves a debt that later
refills pay back, so one large prompt never blocks forever. ``RateLimiter`` holds one bucket
for requests and one for tokens. Like a provider, it counts a request's tokens *before* it is
sent as prompt tokens plus the output cap, then settles the difference with the usage the
reply reports.

``LimitedLLM`` wraps an ``LLMClient`` by composition (nothing in ``agentlab.llm`` changes):
every ``chat``/``stream`` call waits for the limiter, carries an output cap
(``max_completion_tokens``), and is refused with ``ProviderError("cost_budget")`` before it is
sent when the run's spend plus the call's worst case would pass ``budget_usd``. That last check
is what makes the sweep's cost cap hard.

In a process pool every worker has its own limiter, so the runner gives each worker
``limit / workers`` (a static split: simple, and never over the limit).
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Iterator

from ..errors import ConfigError, ProviderError
from ..llm import LLMClient
from ..tokens import count_messages_tokens
from .pricing import cost_usd, require_prices

__all__ = ["TokenBucket", "RateLimiter", "LimitedLLM"]


class TokenBucket:
    """A token bucket refilled at ``rate_per_minute``; ``acquire(n)`` blocks until it can take n.

    Args:
        rate_per_minute: refill rate (tokens per minute, > 0).
        capacity: the most it holds (the burst); default ``rate_per_minute * burst_s / 60``.
        burst_s: seconds of refill the bucket can hold when ``capacity`` is not given.
        clock, sleep: injectable for tests (``time.monotonic`` / ``time.sleep``).

    Thread-safe; it never sleeps while holding its lock.
    """

    def __init__(self, rate_per_minute: float, capacity: float | None = None, *,
                 burst_s: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if not rate_per_minute > 0:
            raise ConfigError("invalid_config",
                              f"rate_per_minute must be > 0, got {rate_per_minute!r}")
        self.rate_per_s = float(rate_per_minute) / 60.0
        self.capacity = float(capacity) if capacity is not None else max(
            1.0, self.rate_per_s * burst_s)
        if not self.capacity > 0:
            raise ConfigError("invalid_config", f"capacity must be > 0, got {capacity!r}")
        self._clock, self._sleep = clock, sleep
        self._tokens = self.capacity  # starts full
        self._last = clock()
        self._lock = threading.Lock()
        self.waited_s = 0.0

    @property
    def tokens(self) -> float:
        """Tokens available now (negative while a debt is being paid back)."""
        with self._lock:
            self._refill()
            return self._tokens

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate_per_s)
        self._last = now

    def acquire(self, n: float = 1.0) -> float:
        """Take ``n`` tokens, waiting as needed; returns the seconds waited."""
        if n < 0:
            raise ConfigError("invalid_argument", f"cannot acquire a negative amount ({n})")
        need = min(float(n), self.capacity)  # a request larger than the bucket: wait for full
        waited = 0.0
        while True:
            with self._lock:
                self._refill()
                if self._tokens >= need - 1e-9:  # tolerance: refills are float sums
                    self._tokens -= n  # may go below zero: a debt repaid by later refills
                    self.waited_s += waited
                    return waited
                delay = (need - self._tokens) / self.rate_per_s
            self._sleep(delay)
            waited += delay

    def adjust(self, delta: float) -> None:
        """Take ``delta`` more tokens (or give back ``-delta``) without waiting."""
        with self._lock:
            self._refill()
            self._tokens = min(self.capacity, self._tokens - delta)


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits (either may be None: no limit)."""

    def __init__(self, requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, *, burst_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        kw = {"burst_s": burst_s, "clock": clock, "sleep": sleep}
        self.requests = TokenBucket(requests_per_minute, **kw) if requests_per_minute else None
        self.tokens = TokenBucket(tokens_per_minute, **kw) if tokens_per_minute else None

    @property
    def counts_tokens(self) -> bool:
        return self.tokens is not None

    def acquire(self, tokens: float = 0.0) -> float:
        """Wait for one request and ``tokens`` tokens; returns the seconds waited."""
        waited = self.requests.acquire(1) if self.requests is not None else 0.0
        if self.tokens is not None and tokens:
            waited += self.tokens.acquire(tokens)
        return waited

    def settle(self, estimated: float, actual: float) -> None:
        """Correct the token bucket once the reply says how many tokens the call used."""
        if self.tokens is not None:
            self.tokens.adjust(actual - estimated)

    @property
    def waited_s(self) -> float:
        return sum(b.waited_s for b in (self.requests, self.tokens) if b is not None)


class LimitedLLM:
    """An ``LLMClient`` behind a rate limiter, an output cap and a spend budget (composition).

    Args:
        llm: the client to wrap; every other attribute (``model``, ``attempts``...) is its own.
        limiter: a ``RateLimiter`` shared by the runs of this process, or None.
        max_output_tokens: sent as ``max_completion_tokens`` unless a call sets it.
        budget_usd: refuse a call when ``spent_usd`` + its worst case would exceed this.
    """

    to_assistant_message = staticmethod(LLMClient.to_assistant_message)

    def __init__(self, llm: Any, limiter: RateLimiter | None = None, *,
                 max_output_tokens: int | None = None, budget_usd: float | None = None) -> None:
        self.llm, self.limiter = llm, limiter
        self.max_output_tokens, self.budget_usd = max_output_tokens, budget_usd
        self.spent_usd = 0.0
        self.waited_s = 0.0
        if budget_usd is not None:
            require_prices(llm.model)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    def chat(self, messages: list[dict], tools: list[dict] | None = None, *args: Any,
             **params: Any) -> Any:
        estimate = self._before(messages, tools, params)
        response = self.llm.chat(messages, tools, *args, **params)
        self._after(estimate, response)
        return response

    def stream(self, messages: list[dict], tools: list[dict] | None = None, *args: Any,
               **params: Any) -> Iterator[Any]:
        estimate = self._before(messages, tools, params)
        final = None
        for chunk in self.llm.stream(messages, tools, *args, **params):
            if getattr(chunk, "content", "") is None:
                final = chunk  # the assembled response carries the usage
            yield chunk
        self._after(estimate, final)

    # -- the checks around one call -----------------------------------------------------------
    def _before(self, messages: list[dict], tools: list[dict] | None, params: dict) -> int:
        if self.max_output_tokens is not None:
            params.setdefault("max_completion_tokens", self.max_output_tokens)
        out_cap = int(params.get("max_completion_tokens") or params.get("max_tokens") or 0)
        counting = self.budget_usd is not None or (self.limiter is not None
                                                   and self.limiter.counts_tokens)
        prompt = count_messages_tokens(messages, self.model, tools) if counting else 0
        if self.budget_usd is not None:
            worst = self._price(prompt, out_cap)
            if self.spent_usd + worst > self.budget_usd:
                left = self.budget_usd - self.spent_usd
                raise ProviderError("cost_budget", f"not sent: this call could cost up to "
                                    f"${worst:.4f} and the run has ${left:.4f} "
                                    "left of its budget; raise the sweep's cost cap or lower "
                                    "max_turns / context_tokens", details={
                                        "spent_usd": self.spent_usd, "budget_usd": self.budget_usd,
                                        "call_worst_case_usd": worst})
        if self.limiter is not None:
            self.waited_s += self.limiter.acquire(prompt + out_cap)
        return prompt + out_cap

    def _after(self, estimate: int, response: Any) -> None:
        usage = getattr(response, "usage", None) or {}
        prompt = int(usage.get("prompt_tokens") or 0)
        completion = int(usage.get("completion_tokens") or 0)
        if self.budget_usd is not None:
            self.spent_usd += self._price(prompt, completion)
        if self.limiter is not None:
            self.limiter.settle(estimate, prompt + completion)

    def _price(self, prompt_tokens: int, completion_tokens: int) -> float:
        return cost_usd(self.model, prompt_tokens, completion_tokens)

"""Chapter 14 client-side limits: the token bucket, the rate limiter, ``LimitedLLM``."""
from __future__ import annotations

import threading

import pytest

from agentlab import sim
from agentlab.errors import ConfigError, ProviderError
from agentlab.experiments import LimitedLLM, RateLimiter, TokenBucket
from agentlab.runtime import AgentRuntime, RuntimeConfig
from agentlab.tools import ToolRegistry


class FakeClock:
    """A clock that only moves when someone sleeps (so waits are exact and instant)."""

    def __init__(self) -> None:
        self.now, self.sleeps = 0.0, []
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def sleep(self, s: float) -> None:
        with self.lock:
            self.sleeps.append(s)
            self.now += s


def test_bucket_starts_full_then_waits_for_the_refill():
    clock = FakeClock()
    bucket = TokenBucket(60, capacity=3, clock=clock, sleep=clock.sleep)  # 1 token per second
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.acquire() == pytest.approx(1.0)
    assert bucket.acquire(2) == pytest.approx(2.0)
    assert clock.now == pytest.approx(3.0) and bucket.waited_s == pytest.approx(3.0)


def test_default_capacity_is_burst_seconds_of_refill():
    assert TokenBucket(600).capacity == 100.0           # 10 s at 10 per second
    assert TokenBucket(600, burst_s=1).capacity == 10.0
    with pytest.raises(ConfigError):
        TokenBucket(0)


def test_a_request_larger_than_the_bucket_waits_for_full_and_leaves_a_debt():
    clock = FakeClock()
    bucket = TokenBucket(60, capacity=10, clock=clock, sleep=clock.sleep)
    bucket.acquire(4)
    assert bucket.acquire(25) == pytest.approx(4.0)   # waits until full (10), then takes 25
    assert bucket.tokens == pytest.approx(-15.0)
    assert bucket.acquire(1) == pytest.approx(16.0)   # the debt is paid back first


def test_adjust_settles_estimates_against_actual_use():
    clock = FakeClock()
    bucket = TokenBucket(60, capacity=100, clock=clock, sleep=clock.sleep)
    bucket.acquire(80)        # estimated
    bucket.adjust(30 - 80)    # actually used 30
    assert bucket.tokens == pytest.approx(70.0)
    bucket.adjust(-500)
    assert bucket.tokens == 100.0  # never above capacity


def test_threads_never_get_more_than_the_rate_allows():
    clock = FakeClock()
    bucket = TokenBucket(600, capacity=5, clock=clock, sleep=clock.sleep)  # 10 per second
    got = []

    def worker():
        for _ in range(20):
            bucket.acquire()
            got.append(clock())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 80
    assert clock.now >= (80 - 5) / 10 - 1e-9  # 5 at once, then 10 per second


def test_rate_limiter_holds_both_limits():
    clock = FakeClock()
    lim = RateLimiter(requests_per_minute=120, tokens_per_minute=600, burst_s=1, clock=clock,
                      sleep=clock.sleep)  # 2 requests/s, 10 tokens/s, bursts of one second
    assert lim.acquire(10) == 0.0
    assert lim.acquire(10) == pytest.approx(1.0)   # tokens are the tighter limit here
    lim.settle(10, 4)
    assert lim.tokens.tokens == pytest.approx(6.0)
    assert RateLimiter().acquire(10**9) == 0.0      # no limits: never waits


def _llm(policy, **kw):
    s = sim.Simulator(policy)
    return LimitedLLM(s.llm(), **kw), s


def test_limited_llm_caps_the_output_and_settles_the_token_bucket():
    clock = FakeClock()
    limiter = RateLimiter(tokens_per_minute=600_000, clock=clock, sleep=clock.sleep)
    llm, s = _llm(sim.Script([sim.text("word " * 300)]), limiter=limiter, max_output_tokens=50)
    full = limiter.tokens.tokens
    resp = llm.chat([{"role": "user", "content": "hi"}])
    assert s.requests[0]["body"]["max_completion_tokens"] == 50
    assert resp.finish_reason == "length" and resp.usage["completion_tokens"] == 50
    assert limiter.tokens.tokens == pytest.approx(full - resp.usage["total_tokens"])
    assert llm.model == "gpt-4o" and llm.attempts  # everything else is the wrapped client's


def test_limited_llm_refuses_a_call_that_could_pass_its_budget_without_sending_it():
    # gpt-4o: $2.50 in / $10 out per 1M; a call's worst case is its prompt + 1000 output
    # tokens, about $0.01002 for the first call and $0.01005 for the second
    llm, s = _llm(sim.Script([sim.text("ok"), sim.text("again")]), budget_usd=0.01004,
                  max_output_tokens=1000)
    llm.chat([{"role": "user", "content": "hi"}])
    assert 0 < llm.spent_usd < 0.001
    with pytest.raises(ProviderError) as info:
        llm.chat([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"},
                  {"role": "user", "content": "more"}])
    assert info.value.code == "cost_budget" and "raise the sweep's cost cap" in info.value.message
    assert len(s.requests) == 1  # the refused call never went over the wire


def test_limited_llm_streams_and_runs_an_agent_with_tool_calls():
    reg = ToolRegistry()

    @reg.tool()
    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: the key.
        """
        return key.upper()

    clock = FakeClock()
    limiter = RateLimiter(requests_per_minute=60, burst_s=1, clock=clock, sleep=clock.sleep)
    llm, s = _llm(sim.Script([sim.call("lookup", {"key": "a"}), sim.text("A")]), limiter=limiter)
    result = AgentRuntime(llm, reg, config=RuntimeConfig(max_turns=4)).run("look a up")
    assert result.ok and result.content == "A"
    assert clock.sleeps == [pytest.approx(1.0)]  # the second model call waited for its slot
    chunks = list(llm.stream([{"role": "user", "content": "hi"}]))
    assert chunks[-1].content is None and clock.now == pytest.approx(2.0)

"""Chapter 09: adaptive timeouts — percentiles, units, alerts, censoring, enforcement."""
from __future__ import annotations

import math
import random
import threading
import time

import numpy as np
import pytest
from scipy import stats

from agentlab.sim.tool_latency import LogNormal, Slowdown, replay
from agentlab.errors import ConfigError
from agentlab.timeouts import AdaptiveTimeoutManager, adaptive_timeout_s, percentile


def fed(values, tool="t", **kw):
    m = AdaptiveTimeoutManager(**kw)
    for v in values:
        m.record_execution(tool, v)
    return m


def test_percentile_matches_numpy_for_many_sizes_and_q():
    rng = random.Random(3)
    for n in (1, 2, 3, 7, 10, 19, 20, 51, 100):
        data = [rng.lognormvariate(3, 1) for _ in range(n)]
        for q in (0, 1, 25, 50, 90, 95, 99, 99.9, 100):
            assert percentile(data, q) == pytest.approx(np.percentile(data, q), rel=1e-12)


def test_percentile_with_nan_is_nan_in_any_order_like_numpy():
    for data in ([math.nan, 1.0, 2.0, 4.0], [3.0, 1.0, math.nan, 2.0], [1.0, 2.0, math.nan]):
        for q in (0, 50, 99):
            assert math.isnan(percentile(data, q)) and math.isnan(np.percentile(data, q))
            assert math.isnan(percentile(list(reversed(data)), q))


def test_percentile_of_nothing_is_none_and_bad_q_is_refused():
    assert percentile([], 50) is None
    with pytest.raises(ConfigError) as err:
        percentile([1.0], 101)
    assert err.value.code == "invalid_argument" and isinstance(err.value, ValueError)


def test_stats_are_in_ms_and_agree_with_numpy():
    data = LogNormal(40, 0.6, seed=1).samples(150)
    s = fed(data, window=100).get_stats("t")
    window = data[-100:]
    assert s.count == 100 and s.total_calls == 150
    for q, got in ((50, s.p50), (95, s.p95), (99, s.p99)):
        assert got == pytest.approx(np.percentile(window, q))
    assert s.mean == pytest.approx(np.mean(window))
    assert s.stddev == pytest.approx(np.std(window, ddof=1))


def test_timeout_is_seconds_from_the_article_rule_and_clamped():
    data = [100.0] * 90 + [400.0] * 10            # ms
    m = fed(data, min_timeout=0.01, max_timeout=120)
    p95, p99 = np.percentile(data, 95), np.percentile(data, 99)
    assert m.get_timeout("t") == pytest.approx((p95 + 2 * (p99 - p95)) * 1.5 / 1000)
    assert fed(data).get_timeout("t") == 5.0                  # default min_timeout 5 s
    assert fed([90_000.0] * 20).get_timeout("t") == 120.0      # 90 s * 1.5 clamps to 120 s
    assert adaptive_timeout_s(100, 200, 1.0) == pytest.approx(0.3)


def test_no_adapting_before_min_samples():
    m = fed([20.0] * 9, min_timeout=0.01, initial_timeout=30.0, min_samples=10)
    assert m.get_timeout("t") == 30.0
    assert m.get_timeout("never-seen") == 30.0
    m.record_execution("t", 20.0)
    assert m.get_timeout("t") == pytest.approx(0.03)


def test_alert_compares_with_history_before_the_sample():
    alerts = []
    m = fed([10.0], alert_min_samples=1, on_alert=alerts.append)
    # including the sample, p95 of [10, 100] would be 95.5 and 100 < 3 * 95.5: no alert
    alert = m.record_execution("t", 100.0)
    assert alert is not None and alert["p95_ms"] == 10.0 and alert["ratio"] == 10.0
    assert alerts == [alert] and m.get_slow_queries() == [alert]
    assert m.record_execution("t", 12.0) is None


def test_alerts_after_a_warm_up_of_three_samples_and_log_is_bounded():
    m = fed([10.0] * 2, min_samples=10)
    assert m.record_execution("t", 10_000.0) is None  # two samples: no baseline yet
    m = fed([10.0] * 3, min_samples=10)
    assert m.record_execution("t", 10_000.0) is not None  # long before the timeout adapts
    assert fed([10.0] * 5, alert_min_samples=10).record_execution("t", 10_000.0) is None
    m = fed([10.0] * 100, min_samples=10, slow_log_size=3, window=10_000)
    for i in range(5):
        m.record_execution("t", 1000.0 + i)
    assert [a["duration_ms"] for a in m.get_slow_queries()] == [1002.0, 1003.0, 1004.0]
    assert [a["duration_ms"] for a in m.get_slow_queries(limit=1)] == [1004.0]
    assert m.get_stats("t").slow == 5


def test_a_slow_regime_keeps_alerting_after_it_fills_the_window():
    m = fed([10.0 + i % 3 for i in range(50)], window=50)
    alerts = [m.record_execution("t", 100.0 + i % 5) for i in range(200)]  # 4x the window
    assert all(alerts) and alerts[-1]["p95_ms"] == pytest.approx(np.percentile([10, 11, 12] * 17, 95), abs=0.1)
    assert m.get_stats("t").p95 >= 100  # the timeout's window did move to the new regime
    m.reset("t")  # a new normal is accepted by resetting the tool
    assert [m.record_execution("t", 100.0) for _ in range(5)] == [None] * 5


def test_censored_timeouts_let_the_timeout_grow_after_a_slowdown():
    trace = Slowdown(LogNormal(100, 0.3, seed=2), start_call=200, factor=8).samples(500)
    censored = replay(AdaptiveTimeoutManager(min_timeout=0.05), trace)
    success_only = replay(AdaptiveTimeoutManager(min_timeout=0.05), trace, learn="success_only")
    assert sum(success_only.killed[200:]) == 300          # stuck: every slow call killed
    assert sum(censored.killed[200:]) < 10                 # grows back within a few calls
    assert censored.timeouts_s[-1] > 5 * censored.timeouts_s[199]


def test_timed_out_sample_is_kept_and_counted():
    m = fed([20.0] * 20, min_timeout=0.01)
    m.record_execution("t", 90.0, success=False, timed_out=True)
    s = m.get_stats("t")
    assert s.count == 21 and s.timed_out == 1 and s.failures == 1 and s.max == 90.0


def test_record_from_many_threads_loses_nothing():
    m = AdaptiveTimeoutManager(window=10_000)

    def work(k):
        for i in range(500):
            m.record_execution(f"tool{k % 2}", float(i))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {n: s.count for n, s in m.get_all_stats().items()} == {"tool0": 2000, "tool1": 2000}


def test_report_and_bad_input():
    m = fed([20.0] * 12, "search")
    text = m.generate_report()
    assert "search" in text and "durations in ms, timeout in s" in text and "5.000" in text
    assert "p99 <=" in text and text.splitlines()[3].split()[6] == "+inf"  # 12 < 368 calls
    big = fed([float(i % 50) for i in range(400)], "t", window=400)
    ci = stats.quantile_test(np.array(big.get_history("t")), p=0.99).confidence_interval()
    assert big.generate_report().splitlines()[3].split()[6] == f"{ci.high:.1f}"
    with pytest.raises(ValueError):
        m.record_execution("search", -1.0)
    assert m.get_stats("other") is None


def test_learned_timeout_is_enforced_by_the_tool_executor():
    from agentlab.executor import ToolExecutor
    from agentlab.llm import ToolCall
    from agentlab.tools import ToolRegistry
    reg = ToolRegistry()

    @reg.tool()
    def lookup(delay_ms: int = 20) -> str:
        """Sleep for delay_ms milliseconds."""
        time.sleep(delay_ms / 1000)
        return "ok"
    # min_timeout 0.2 s: a 20 ms call on a loaded 2-core machine must not count as a kill
    m = AdaptiveTimeoutManager(min_timeout=0.2)
    ex = ToolExecutor(reg, default_timeout=30.0, timeout_manager=m)
    ex.execute([ToolCall(f"c{i}", "lookup", {}) for i in range(40)])
    t0 = time.perf_counter()
    [res] = ex.execute([ToolCall("slow", "lookup", {"delay_ms": 10_000})])
    elapsed = time.perf_counter() - t0
    assert not res.success and res.error_code == "tool_timeout"
    # learned ~0.2 s idle, not the 30 s default; a loaded machine stretches the 20 ms samples
    # (Python 3.13 beside a busy suite failed the old bound of 1 s), so the bound is loose
    assert elapsed < 5.0, elapsed
    s = m.get_stats("lookup")
    assert s.count == 41 and s.timed_out == 1


def test_naive_manager_reads_ms_as_seconds_and_misses_the_tail():
    from agentlab.naive.timeouts import NaiveTimeoutManager
    naive = NaiveTimeoutManager()
    for _ in range(20):
        naive.record_execution("t", 20.0)
    assert naive.get_timeout("t") == 30.0           # 20 ms * 1.5 read as 30 seconds
    assert fed([20.0] * 20, min_timeout=0.01).get_timeout("t") == pytest.approx(0.03)
    small = NaiveTimeoutManager()
    for v in range(10, 101, 10):
        small.record_execution("t", float(v))
    assert small.p99["t"] == 90.0 != np.percentile(range(10, 101, 10), 99)


def test_rare_hangs_do_not_ratchet_the_timeout_up():
    from agentlab.sim.tool_latency import Hanging
    trace = Hanging(LogNormal(800, 0.5, seed=1), hang_rate=0.02, seed=11).samples(500)
    aware = replay(AdaptiveTimeoutManager(min_timeout=0.5), trace)
    plain = replay(AdaptiveTimeoutManager(min_timeout=0.5, rule="article"), trace)
    assert aware.hung_killed == plain.hung_killed > 5
    assert max(aware.timeouts_s[100:]) < 8 < 15 < max(plain.timeouts_s[100:])
    assert aware.wasted_ms < plain.wasted_ms / 1.5

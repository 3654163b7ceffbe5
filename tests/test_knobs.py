"""Every timeout, budget and size is checked at construction (issue #12, Build 7): 0, negative,
inf, NaN, None and bools give ``ConfigError("invalid_config")`` naming the argument, instead of
a tool_timeout for every call, an OverflowError out of execute, or a run that ends in ERROR."""
from __future__ import annotations

import math

import pytest

from agentlab.dag import DependencyAwareExecutor, simulate_schedule
from agentlab.errors import ConfigError
from agentlab.knobs import fraction, positive_int, positive_number
from agentlab.runtime import RuntimeConfig
from agentlab.timeouts import AdaptiveTimeoutManager
from agentlab.tools import ToolRegistry

BAD = [0, -1, math.inf, math.nan, None, True, "5"]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name", ["initial_timeout", "alert_threshold", "multiplier",
                                  "min_timeout", "max_timeout", "window", "min_samples",
                                  "slow_log_size"])
def test_adaptive_timeout_manager_knobs(name, bad):
    with pytest.raises(ConfigError) as info:
        AdaptiveTimeoutManager(**{name: bad})
    assert info.value.code == "invalid_config" and name in info.value.message


def test_adaptive_timeout_manager_other_misuse_is_a_config_error():
    for kwargs in ({"min_timeout": 10, "max_timeout": 5}, {"rule": "magic"}):
        with pytest.raises(ConfigError):  # was: a bare ValueError
            AdaptiveTimeoutManager(**kwargs)
    m = AdaptiveTimeoutManager()
    for bad in (math.nan, -1, None, math.inf):
        with pytest.raises(ConfigError):
            m.record_execution("t", bad)
    with pytest.raises(ConfigError):
        m.get_timeout("t", multiplier=0)


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("name", ["max_turns", "max_total_time", "tool_timeout", "max_workers",
                                  "loop_detection_window", "loop_detection_threshold"])
def test_runtime_config_knobs(name, bad):
    with pytest.raises(ConfigError) as info:
        RuntimeConfig(**{name: bad})
    assert name in info.value.message


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, True])
def test_step_timeout_zero_is_refused_none_means_no_limit(bad):
    with pytest.raises(ConfigError):  # was: RuntimeConfig(step_timeout=0) ran and ended in ERROR
        RuntimeConfig(step_timeout=bad)
    assert RuntimeConfig(step_timeout=None).step_timeout is None
    assert RuntimeConfig(step_timeout=2.5).step_timeout == 2.5


@pytest.mark.parametrize("kwargs", [{"max_workers": 0}, {"max_workers": 2.5},
                                    {"default_timeout": 0}, {"default_timeout": math.inf},
                                    {"default_timeout": None}, {"strategy": "eager"},
                                    {"priority": "random"}])
def test_dependency_aware_executor_knobs(kwargs):
    with pytest.raises(ConfigError) as info:  # was: ValueError
        DependencyAwareExecutor(ToolRegistry(), **kwargs)
    assert info.value.code == "invalid_config"


def test_dependency_batch_timeout_and_simulation_are_checked():
    ex = DependencyAwareExecutor(ToolRegistry())
    with pytest.raises(ConfigError):
        ex.execute_with_dependencies([], timeout=-1)
    for kwargs in ({"max_workers": 0}, {"max_workers": 2, "strategy": "eager"}):
        with pytest.raises(ConfigError):
            simulate_schedule({"a": 1.0}, None, **{"max_workers": 1, **kwargs})


def test_the_helpers_accept_what_they_promise():
    assert positive_number("x", 2) == 2.0 and positive_number("x", None, allow_none=True) is None
    assert positive_int("n", 3) == 3 and fraction("f", 1) == 1.0
    for call in (lambda: positive_int("n", 1.0), lambda: fraction("f", 0),
                 lambda: positive_number("x", "1")):
        with pytest.raises(ConfigError):
            call()

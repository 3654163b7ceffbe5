"""The package surface: lazy exports, a light import, the error contract."""
from __future__ import annotations

import subprocess
import sys

import agentlab
from agentlab import errors


def test_import_is_light_and_offline():
    code = ("import sys, agentlab; heavy = [m for m in ('openai', 'tiktoken', 'matplotlib', "
            "'ipywidgets', 'httpx2', 'numpy') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_all_lists_only_real_names():
    assert "AgentRuntime" in agentlab.__all__
    assert agentlab.AgentError is errors.AgentError
    try:
        agentlab.NoSuchThing
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("unknown attribute did not raise")


def test_error_contract():
    err = errors.ProviderError("rate_limited", "slow down", retryable=True, details={"status": 429})
    assert isinstance(err, errors.AgentError)
    assert (err.code, err.message, err.retryable, err.details) == \
        ("rate_limited", "slow down", True, {"status": 429})
    assert err.to_dict()["type"] == "ProviderError"
    assert str(err) == "[rate_limited] slow down"
    for cls in (errors.ToolError, errors.ConfigError, errors.CheckpointError, errors.StateError):
        assert issubclass(cls, errors.AgentError)

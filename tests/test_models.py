"""The model table: known models, unknown ones, registering a local model."""
import pytest

from agentlab.errors import ConfigError
from agentlab.models import DEFAULT_MODEL, known_models, model_info, register_model


def test_default_model_is_in_the_table_with_its_window_and_price():
    info = model_info(DEFAULT_MODEL)
    assert info is not None and info.context_window == 128000
    assert info.max_output_tokens == 16384 and info.input_usd_per_1m == 2.50


def test_unknown_model_has_no_entry_never_another_models_numbers():
    assert model_info("gpt-4o-but-not-really") is None


def test_register_a_local_model_and_refuse_nonsense():
    info = register_model("llama3.1:8b-test", context_window=8192, max_output_tokens=2048)
    assert model_info("llama3.1:8b-test") == info and "llama3.1:8b-test" in known_models()
    with pytest.raises(ConfigError):
        register_model("x", context_window=0, max_output_tokens=10)

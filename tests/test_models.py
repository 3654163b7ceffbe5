"""The model table: known models, unknown ones, registering a local model."""
import pytest

from agentlab.errors import ConfigError
from agentlab.models import (DEFAULT_MODEL, known_models, model_info, register_model,
                             unregister_model)


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


def test_prices_live_in_the_model_table_and_the_observer_reads_them():
    import json
    from agentlab.models import MODELS_PATH, price_table
    from agentlab.observe import PRICING_PATH, AgentObserver, load_pricing
    table = json.loads(MODELS_PATH.read_text())["models"]
    prices = {k: {"input": v["input"], "output": v["output"]} for k, v in table.items()}
    assert PRICING_PATH == MODELS_PATH and load_pricing(PRICING_PATH) == prices
    assert AgentObserver("r").pricing == price_table() == prices
    register_model("priced-local-test", context_window=4096, max_output_tokens=512,
                   input_usd_per_1m=1.0, output_usd_per_1m=2.0)
    try:
        assert price_table()["priced-local-test"]["output"] == 2.0
        obs = AgentObserver("r", model="priced-local-test")
        obs.record_llm_call(model="priced-local-test", prompt_tokens=1_000_000, completion_tokens=0)
        assert obs.generate_report().cost_usd == 1.0
    finally:
        unregister_model("priced-local-test")
    assert "priced-local-test" not in price_table()


def test_gpt5_has_a_separate_input_limit():
    info = model_info("gpt-5")
    assert (info.context_window, info.max_input_tokens, info.input_limit) == (400000, 272000, 272000)
    assert model_info("gpt-4o").input_limit == 128000
    with pytest.raises(ConfigError):
        register_model("y", context_window=10, max_output_tokens=5, max_input_tokens=0)

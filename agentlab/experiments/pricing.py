"""Token prices for sweeps, from the one model table (``agentlab.models``; notebook 14)."""
from __future__ import annotations

import math

from ..errors import ConfigError
from ..models import model_info

__all__ = ["cost_usd", "require_prices"]


def cost_usd(model: str, prompt_tokens: float, completion_tokens: float) -> float:
    """What the tokens cost at the table's prices (USD); NaN for a model without prices."""
    info = model_info(model)
    if info is None or info.input_usd_per_1m is None or info.output_usd_per_1m is None:
        return math.nan
    return (prompt_tokens * info.input_usd_per_1m
            + completion_tokens * info.output_usd_per_1m) / 1e6


def require_prices(model: str) -> None:
    """Raise ``ConfigError("unpriced_model")`` when ``model`` has no price (a cap needs one)."""
    if math.isnan(cost_usd(model, 1, 1)):
        raise ConfigError("unpriced_model", f"model {model!r} has no price in agentlab.models; "
                          "call agentlab.models.register_model(name, ..., input_usd_per_1m=..., "
                          "output_usd_per_1m=...) or run without a cost cap")

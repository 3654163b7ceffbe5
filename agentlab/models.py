"""The models agentlab knows: context window, output limit and price, from one table.

``data/models.json`` (provenance and date in ``data/models.md``) is read once,
on first use. The simulator checks requests against it (unknown model, prompt + ``max_tokens``
over the window), ``MessageManager`` derives its default budget from it, and the observer and
the cost cap price tokens with it. A model missing from the table is unknown: no window, no
price — never another model's numbers. ``register_model`` adds one (a local model, a fine-tune).

**A model not in the table** gets no price, ever. For its *budget* (``MessageManager``'s default
``max_tokens``) one rule applies: ``model_family`` -- a name that extends a table name at a
``-`` (``gpt-4o-mini-2099-01-01``, ``gpt-5-chat-latest``) takes the window of the longest such
name; any other name (``gpt-4``, ``llama3``) gets a conservative default with a warning.

``DEFAULT_MODEL`` is the model every constructor defaults to (``LLMClient``, ``MessageManager``,
``AgentObserver``, ``Simulator.llm``); ``AGENTLAB_MODEL`` overrides it for ``LLMClient.from_env``.
"""
from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass

from .bundle import data_path
from .errors import ConfigError

__all__ = ["DEFAULT_MODEL", "MODELS_PATH", "ModelInfo", "model_info", "register_model",
           "known_models", "price_table", "unregister_model", "cost_usd", "require_prices",
           "model_family"]

#: The model used when none is given (an OpenAI model name; the simulator answers as it).
DEFAULT_MODEL = "gpt-4o"
#: The bundled model table (``data/models.json``: edit it, or ``register_model``).
MODELS_PATH = data_path("models.json")


@dataclass(frozen=True)
class ModelInfo:
    """What the table says about one model (prices in USD per 1M tokens; None when unknown)."""

    name: str
    context_window: int
    max_output_tokens: int
    input_usd_per_1m: float | None = None
    output_usd_per_1m: float | None = None
    max_input_tokens: int | None = None  # when the window is shared with a reserved output

    @property
    def input_limit(self) -> int:
        """The most prompt tokens a request may have (``max_input_tokens`` or the window)."""
        return min(self.context_window, self.max_input_tokens or self.context_window)


_lock = threading.Lock()
_table: dict[str, ModelInfo] | None = None
_custom: dict[str, ModelInfo] = {}


def _load() -> dict[str, ModelInfo]:
    global _table
    with _lock:
        if _table is None:
            raw = json.loads(MODELS_PATH.read_text(encoding="utf-8"))["models"]
            _table = {name: ModelInfo(name, int(m["context_window"]), int(m["max_output_tokens"]),
                                      m.get("input"), m.get("output"), m.get("max_input_tokens"))
                      for name, m in raw.items()}
        return _table


def model_info(name: str) -> ModelInfo | None:
    """The table's entry for ``name`` (exact name; registered models first), or None."""
    return _custom.get(name) or _load().get(name)


def model_family(name: str) -> str | None:
    """The known model ``name`` belongs to: itself if known, else the longest known name it
    extends at a ``-`` (``gpt-4o-mini-2099-01-01`` -> ``gpt-4o-mini``), else None.

    Used for a context budget only, never for a price: ``gpt-4`` extends nothing (it is an
    8,192-token model, not a ``gpt-4o``), so it has no family."""
    if model_info(name) is not None:
        return name
    names = [k for k in (*_custom, *_load()) if name.startswith(k + "-")]
    return max(names, key=len) if names else None


def price_table() -> dict[str, dict[str, float]]:
    """``{model: {"input": usd_per_1m, "output": usd_per_1m}}`` for every priced model, table and
    registered ones (what ``agentlab.observe`` prices with)."""
    models = {**_load(), **_custom}
    return {name: {"input": info.input_usd_per_1m, "output": info.output_usd_per_1m}
            for name, info in models.items()
            if info.input_usd_per_1m is not None and info.output_usd_per_1m is not None}


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


def known_models() -> list[str]:
    """Every model name in the table and registered in this process, sorted."""
    return sorted(set(_load()) | set(_custom))


def register_model(name: str, *, context_window: int, max_output_tokens: int,
                   input_usd_per_1m: float | None = None,
                   output_usd_per_1m: float | None = None,
                   max_input_tokens: int | None = None) -> ModelInfo:
    """Make a model known in this process (e.g. a local model served by vLLM or Ollama).

    The simulator then accepts it (strict mode answers 404 for unknown models), and the
    observer prices it when prices are given.
    """
    if not isinstance(name, str) or not name:
        raise ConfigError("invalid_argument", "a model needs a non-empty name")
    for label, value in (("context_window", context_window),
                         ("max_output_tokens", max_output_tokens)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError("invalid_argument", f"{label} must be a positive int, got {value!r}")
    if max_input_tokens is not None and (not isinstance(max_input_tokens, int)
                                         or isinstance(max_input_tokens, bool)
                                         or max_input_tokens < 1):
        raise ConfigError("invalid_argument",
                          f"max_input_tokens must be a positive int, got {max_input_tokens!r}")
    info = ModelInfo(name, context_window, max_output_tokens, input_usd_per_1m,
                     output_usd_per_1m, max_input_tokens)
    _custom[name] = info
    return info


def unregister_model(name: str) -> None:
    """Forget a model added with ``register_model`` (the bundled table is not changed)."""
    _custom.pop(name, None)

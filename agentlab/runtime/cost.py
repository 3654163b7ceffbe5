"""The cost cap: a run stops *before* a model call that could take it over its budget.

Taught in ``notebooks/13_fleet.ipynb`` (a fleet runs many long runs at once, so each one gets a
budget in dollars, not only in turns). ``RuntimeConfig(max_cost_usd=0.05)`` makes the runtime
add a ``CostCap`` gate (``agentlab.runtime.gates``) with the public ``add_gate``; the loop does
not know it is there.

- **Spend** is the run's token usage (prompt and completion, restored on resume) priced from
  the one model table (``agentlab.models.cost_usd``, ``data/models.json``; the observer prices
  with the same numbers). ``AgentResult.cost_usd`` reports it for every run of a priced model
  (None for a model without prices): ``spent_usd``.
- **Before each model call** the worst case of that call is priced: the prompt as it will be
  sent (history and tool schemas, counted like the message budget of chapter 04) plus the most
  the model may answer — the client's output cap (``max_output_tokens`` / ``max_tokens``) or
  else the model's ``max_output_tokens`` from the table. If spend + worst case would exceed
  the cap, the call is not sent: the run ends ``EXHAUSTED`` with ``stopped_reason``
  ``"cost_budget ($0.05)"`` and an error with code ``cost_budget`` (spent, worst case, cap in
  its details). So the cap holds even when the next answer is as long as it can be.
- A cap on a model without prices is refused when the runtime is built
  (``ConfigError("unpriced_model")``): the cap could not be kept.
"""
from __future__ import annotations

import math
from typing import Any

from ..errors import AgentError
from ..models import DEFAULT_MODEL, cost_usd, model_info, require_prices
from ..tokens import count_messages_tokens
from .context import RunContext
from .gates import Gate, Stop, Verdict
from .types import RunState

__all__ = ["CostCap", "spent_usd", "worst_case_output_tokens", "COST_BUDGET"]

#: The error code (and the start of ``stopped_reason``) of a run stopped by its cost cap.
COST_BUDGET = "cost_budget"
_OUTPUT_CAPS = ("max_output_tokens", "max_completion_tokens", "max_tokens")


def worst_case_output_tokens(llm: Any) -> int:
    """The most completion tokens one call of ``llm`` can return (its cap, else the table's)."""
    for name in _OUTPUT_CAPS:
        value = getattr(llm, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    info = model_info(getattr(llm, "model", DEFAULT_MODEL))
    return info.max_output_tokens if info is not None else 0


def spent_usd(llm: Any, ctx: RunContext) -> float | None:
    """What the run's tokens cost so far, or None for a model without prices."""
    spent = cost_usd(getattr(llm, "model", DEFAULT_MODEL), ctx.usage["prompt_tokens"],
                     ctx.usage["completion_tokens"])
    return None if math.isnan(spent) else spent


class CostCap(Gate):
    """Stops the run before a model call whose worst case would exceed ``cap`` dollars.

    ``runtime`` gives the model client (its name and output cap), the conversation and the
    tool schemas: what the next request will cost at most."""

    name = "cost_cap"

    def __init__(self, runtime: Any, cap: float) -> None:
        require_prices(getattr(runtime.llm, "model", DEFAULT_MODEL))  # else it cannot be kept
        self.runtime, self.cap = runtime, cap

    def before_model(self, ctx: RunContext) -> Verdict:
        rt, cap = self.runtime, self.cap
        model = getattr(rt.llm, "model", DEFAULT_MODEL)
        count = getattr(rt.messages, "count_tokens", None)
        prompt = count() if count is not None else count_messages_tokens(
            rt.messages.get_messages(), model, rt.registry.get_all_schemas() or None)
        worst = cost_usd(model, prompt, worst_case_output_tokens(rt.llm))
        spent = spent_usd(rt.llm, ctx)
        if spent is None or math.isnan(worst):
            return Stop(RunState.ERROR, "unpriced_model", AgentError(
                "unpriced_model", f"model {model!r} has no price, so max_cost_usd cannot be kept"))
        if spent + worst <= cap:
            return None
        return Stop(RunState.EXHAUSTED, f"{COST_BUDGET} (${cap:g})", AgentError(
            COST_BUDGET, f"the next model call was not sent: it could cost up to "
            f"${worst:.4f} and the run has ${cap - spent:.4f} of its ${cap:g} budget left; "
            "raise max_cost_usd, lower the output cap, or narrow the task",
            details={"spent_usd": spent, "call_worst_case_usd": worst, "max_cost_usd": cap,
                     "prompt_tokens": prompt}))

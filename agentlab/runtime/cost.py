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
- **A call without reported usage is charged all the same** (``charged_usage``): a provider
  that omits ``usage`` (or a field of it) still bills, so the missing counts come from the local
  tokenizer -- the prompt as counted before the call (what was sent), the completion as
  tokenised from the reply (text, refusal, each call's name and arguments). A cancelled model
  call is charged for the prompt it sent (``charge_prompt``). So the cap holds with or without
  usage, and ``cost_usd`` is never a silent 0.
- A cap on a model without prices is refused when the runtime is built
  (``ConfigError("unpriced_model")``): the cap could not be kept.
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable

from ..errors import AgentError
from ..models import DEFAULT_MODEL, cost_usd, model_info, require_prices
from ..tokens import count_messages_tokens, count_text_tokens
from .context import RunContext
from .gates import Gate, Stop, Verdict
from .types import RunState

__all__ = ["CostCap", "spent_usd", "worst_case_output_tokens", "COST_BUDGET", "prompt_tokens_sent",
           "completion_tokens_of", "charged_usage", "charge_prompt", "over_budget"]

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


def prompt_tokens_sent(rt: Any, msgs: list, tools: list | None) -> int:
    """The prompt tokens of the request about to be sent, counted locally (the message
    manager's cached count when it has one: the same number its budget uses). The turn asks
    only when the provider reported no usage or the call was cancelled: counting builds the
    tokenizer, which a run far under its budget never needs (chapter 04)."""
    count = getattr(rt.messages, "count_tokens", None)
    if count is not None:
        return int(count())
    return count_messages_tokens(msgs, getattr(rt.llm, "model", DEFAULT_MODEL), tools)


def completion_tokens_of(reply: Any, content: str, model: str) -> int:
    """A reply's completion tokens, tokenised locally: its text, refusal, and each tool call's
    name and arguments (as the provider counts what it generated)."""
    texts = [content or "", getattr(reply, "refusal", None) or ""]
    for call in getattr(reply, "tool_calls", None) or ():
        texts += [call.name or "", getattr(call, "raw_arguments", "") or json.dumps(
            getattr(call, "arguments", None) or {}, ensure_ascii=False)]
    return sum(count_text_tokens(t, model) for t in texts if t)


def charged_usage(reported: dict | None, prompt: int | Callable[[], int],
                  completion: Callable[[], int]) -> tuple[dict, bool]:
    """``(usage to charge, estimated?)``: the provider's counts where it reported them, the
    local ones (``prompt`` or ``prompt()``, ``completion()``) where it did not."""
    usage = dict(reported or {})
    estimated = False
    if not isinstance(usage.get("prompt_tokens"), int) or usage["prompt_tokens"] < 0:
        usage["prompt_tokens"], estimated = prompt() if callable(prompt) else prompt, True
    if not isinstance(usage.get("completion_tokens"), int) or usage["completion_tokens"] < 0:
        usage["completion_tokens"], estimated = completion(), True
    if estimated or not isinstance(usage.get("total_tokens"), int):
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage, estimated


def charge_prompt(ctx: RunContext, turn: dict, prompt: int) -> None:
    """Charge a model call that never answered (cancelled) for the prompt it sent."""
    ctx.usage["prompt_tokens"] += prompt
    ctx.usage["total_tokens"] += prompt
    turn.update(prompt_tokens=prompt, usage_estimated=True)


def spent_usd(llm: Any, ctx: RunContext) -> float | None:
    """What the run's tokens cost so far, or None for a model without prices."""
    spent = cost_usd(getattr(llm, "model", DEFAULT_MODEL), ctx.usage["prompt_tokens"],
                     ctx.usage["completion_tokens"])
    return None if math.isnan(spent) else spent


class CostCap(Gate):
    """Stops the run before a model call whose worst case would exceed ``cap`` dollars.

    ``runtime`` gives the model client (its name and output cap), the conversation and the
    tool schemas: what the next request will cost at most. With ``cap=None`` the gate follows
    ``runtime.config.max_cost_usd`` as it is at each check (the runtime's own cap: setting the
    config after construction still holds)."""

    name = "cost_cap"

    def __init__(self, runtime: Any, cap: float | None = None) -> None:
        require_prices(getattr(runtime.llm, "model", DEFAULT_MODEL))  # else it cannot be kept
        self.runtime, self.cap = runtime, cap

    @property
    def follows_config(self) -> bool:
        """True for the runtime's own cap (``RuntimeConfig.max_cost_usd``)."""
        return self.cap is None

    def before_model(self, ctx: RunContext) -> Verdict:
        rt = self.runtime
        cap = rt.config.max_cost_usd if self.cap is None else self.cap
        if cap is None:  # the config's cap was removed after construction
            return None
        model = getattr(rt.llm, "model", DEFAULT_MODEL)
        count = getattr(rt.messages, "count_tokens", None)
        prompt = count() if count is not None else count_messages_tokens(
            rt.messages.get_messages(), model, rt.registry.get_all_schemas() or None)
        worst = cost_usd(model, prompt, worst_case_output_tokens(rt.llm))
        spent = spent_usd(rt.llm, ctx)
        if spent is None or math.isnan(worst):
            return Stop(RunState.ERROR, "unpriced_model", AgentError(
                "unpriced_model", f"model {model!r} has no price, so max_cost_usd cannot be kept"))
        return over_budget(cap, spent, worst, prompt,
                           "raise max_cost_usd, lower the output cap, or narrow the task")


def over_budget(cap: float, spent: float, worst: float, prompt: int, advice: str) -> Verdict:
    """None while ``spent + worst`` fits in ``cap``; else the Stop that ends the run EXHAUSTED
    (``cost_budget``) before the call is sent. ``advice``: what the user can change."""
    if spent + worst <= cap:
        return None
    return Stop(RunState.EXHAUSTED, f"{COST_BUDGET} (${cap:g})", AgentError(
        COST_BUDGET, f"the next model call was not sent: it could cost up to ${worst:.4f} and "
        f"the run has ${cap - spent:.4f} of its ${cap:g} budget left; {advice}",
        details={"spent_usd": spent, "call_worst_case_usd": worst, "max_cost_usd": cap,
                 "prompt_tokens": prompt}))

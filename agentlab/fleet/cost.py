"""What a fleet run costs across all its attempts, and a cap that counts it (chapter 13).

Taught in ``notebooks/13_fleet.ipynb``. The runtime's own ``RuntimeConfig(max_cost_usd=...)``
(``agentlab.runtime.cost``) prices the usage of the run it restored from a checkpoint, so a
model call made by an attempt that was killed before its next checkpoint is forgotten, although
the provider billed it. The fleet keeps the bill in the run's record instead, written as the
calls happen:

- ``llm_start``: the call counts (``model_calls``) and its prompt is charged at once (estimated
  like the runtime's budget: a call that never answers because its worker died was still sent);
- ``llm_end``: the charge is corrected to the usage the call reported, completion included.

The record's ``spent_usd`` (``agentlab runs show``) is therefore every model call of every
attempt, priced from the one model table; ``<prefix>ledger:model:<run_id>`` keeps each
answered call as ``"<turn> <usd> <prompt tokens> <completion tokens>"``. ``FleetCostCap`` is the runtime's cost-cap gate on that bill: before each model call,
spent so far (all attempts) + the call's worst case (prompt + the most the model may answer)
must stay within ``RunSpec.max_cost_usd``, else the run ends ``EXHAUSTED`` with
``stopped_reason`` ``"cost_budget ($X)"``, as a local run with a cap does.
"""
from __future__ import annotations

from typing import Any

from ..models import DEFAULT_MODEL, cost_usd, require_prices
from ..runtime.cost import over_budget, prompt_tokens_sent, worst_case_output_tokens
from ..runtime.gates import Gate, Stop, Verdict
from ..runtime.types import RunState
from .reach import UNREACHABLE

__all__ = ["FleetSpend", "FleetCostCap", "spend_of"]

_FIELDS = ("model_calls", "spent_prompt_tokens", "spent_completion_tokens")


def spend_of(client: Any, record_key: str) -> dict:
    """The bill kept in a run's record: calls, tokens and ``spent_usd`` (zeros when none)."""
    raw = client.hmget(record_key, *_FIELDS, "spent_usd")
    out = {name: int(value or 0) for name, value in zip(_FIELDS, raw)}
    out["spent_usd"] = float(raw[-1] or 0.0)
    return out


class FleetSpend:
    """The hooks that write every model call's cost into the run's record (module docstring)."""

    def __init__(self, rt: Any, client: Any, record_key: str, ledger_key: str) -> None:
        self.rt, self.client, self.key, self.ledger_key = rt, client, record_key, ledger_key
        self.model = getattr(rt.llm, "model", DEFAULT_MODEL)
        self._sent, self._first_usd = 0, 0.0  # charged at llm_start, corrected at llm_end
        rt.on("llm_start", self.started)
        rt.on("llm_end", self.ended)

    def _charge(self, calls: int, prompt: int, completion: int) -> float:
        usd = cost_usd(self.model, prompt, completion)
        usd = 0.0 if usd != usd else usd  # NaN: a model without prices costs nothing we know of
        pipe = self.client.pipeline()
        for name, n in zip(_FIELDS, (calls, prompt, completion)):
            if n:
                pipe.hincrby(self.key, name, n)
        pipe.hincrbyfloat(self.key, "spent_usd", usd)
        pipe.execute()
        return usd

    def started(self, event: dict) -> None:
        rt = self.rt
        self._sent = prompt_tokens_sent(rt, rt.messages.get_messages(),
                                        rt.registry.get_all_schemas() or None)
        self._first_usd = self._charge(1, self._sent, 0)

    def ended(self, event: dict) -> None:
        usage = event.get("usage") or {}
        prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
        usd = self._charge(0, prompt - self._sent, completion)
        self.client.rpush(self.ledger_key, f"{event.get('turn')} {self._first_usd + usd:.8f} "
                                           f"{prompt} {completion}")
        self._sent = 0


class FleetCostCap(Gate):
    """Stops the run before a model call that could take the bill of all its attempts over
    ``cap`` dollars (see the module docstring)."""

    name = "fleet_cost_cap"

    def __init__(self, rt: Any, client: Any, record_key: str, cap: float,
                 on_unreachable: Any = lambda: None) -> None:
        require_prices(getattr(rt.llm, "model", DEFAULT_MODEL))  # else it cannot be kept
        self.rt, self.client, self.key, self.cap = rt, client, record_key, cap
        self.on_unreachable = on_unreachable

    def before_model(self, ctx: Any) -> Verdict:
        rt, cap = self.rt, self.cap
        model = getattr(rt.llm, "model", DEFAULT_MODEL)
        try:
            spent = spend_of(self.client, self.key)["spent_usd"]
        except UNREACHABLE:  # no bill, no call: the attempt stops as if its lease were lost
            self.on_unreachable()
            return Stop(RunState.CANCELLED, "lease lost: Redis cannot be reached")
        prompt = prompt_tokens_sent(rt, rt.messages.get_messages(),
                                    rt.registry.get_all_schemas() or None)
        worst = cost_usd(model, prompt, worst_case_output_tokens(rt.llm))
        return over_budget(cap, spent, worst, prompt,
                           "all its attempts counted; raise max_cost_usd or narrow the task")

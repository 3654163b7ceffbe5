"""Token prices for sweeps, from the one model table (``agentlab.models``; notebook 14).

``cost_usd`` and ``require_prices`` live in ``agentlab.models`` (the runtime's cost cap, chapter
13, prices with them too); they are re-exported here for the experiment modules.
"""
from __future__ import annotations

from ..models import cost_usd, require_prices

__all__ = ["cost_usd", "require_prices"]

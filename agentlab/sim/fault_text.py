"""Faults and latency as text: ``agentlab serve --faults/--latency`` and per-request headers.

Documented in the README ("serve as a test endpoint"); ``notebooks/00_quickstart.ipynb`` shows
``agentlab serve`` itself. Any framework's client can meet the simulator's failures over HTTP, and see how
its own retries behave. The faults are the simulator's own (``agentlab.sim.faults``: a
``FaultSpec`` per request, a ``FaultPlan`` for scripts); this module only reads them from text
and lets one request override them.

Fault syntax, items separated by ``;``::

    KIND[:PROBABILITY][,OPTION=VALUE...]

- ``KIND``: a ``FaultPlan`` name (``rate_limit``, ``server_error``, ``unavailable``,
  ``timeout``, ``disconnect``, ``malformed_arguments``, ``truncated_stream``,
  ``error_in_body``), an HTTP status (``429``, ``500``, ``401``, ...), ``ok`` (no fault), or an
  alias: ``truncate``, ``malformed``, ``5xx`` (500), ``refusal`` (the model declines:
  ``message.refusal`` set, no content);
- ``OPTION``: ``retry_after`` (seconds, sent as a 429's ``Retry-After``), ``message``.

With probabilities, each request draws at most one fault (seeded; they sum to at most 1):
``"429:0.2,retry_after=2;truncate:0.1"``. Without, the items are a script, one per request in
order, then no fault: ``"429,retry_after=1;ok;truncate"``.

Latency syntax: ``Latency``'s fields, ``"first_token_ms=300,tokens_per_second=40,jitter=0.1,
time_scale=1"`` (unnamed fields keep their defaults), or ``none``.

Per request: the headers ``X-Agentlab-Faults`` (that syntax; a script's first entry, or one
draw, applies to this request instead of the server's) and ``X-Agentlab-Latency``. They work
on a simulator whose ``faults``/``latency`` are ``RequestFaults``/``RequestLatency`` (what
``agentlab serve`` builds); ``server.py`` sets them for the request with ``overrides``.
"""
from __future__ import annotations

import contextvars
import random
import threading
from contextlib import contextmanager
from dataclasses import fields
from typing import Any, Iterator

from .faults import FaultPlan, FaultSpec, Latency
from .policies import Policy, refuse

__all__ = ["FaultMix", "FaultScript", "parse_faults", "parse_latency", "RequestFaults", "RequestLatency",
           "Refusing", "overrides", "FAULTS_HEADER", "LATENCY_HEADER", "REFUSAL"]

FAULTS_HEADER, LATENCY_HEADER = "x-agentlab-faults", "x-agentlab-latency"
#: The fault kind that makes the model decline (a reply, not an HTTP error).
REFUSAL = "refusal"
_ALIASES = {"truncate": "truncated_stream", "malformed": "malformed_arguments", "5xx": 500}
_override: contextvars.ContextVar = contextvars.ContextVar("agentlab_faults", default=None)
_latency: contextvars.ContextVar = contextvars.ContextVar("agentlab_latency", default=None)
_drawn: contextvars.ContextVar = contextvars.ContextVar("agentlab_drawn", default=None)


def _spec(item: str) -> tuple[float | None, FaultSpec | None]:
    """One ``KIND[:P][,OPTION=VALUE...]`` item: (probability or None, spec or None for ok)."""
    head, *opts = [p.strip() for p in item.split(",")]
    kind, _, prob = head.partition(":")
    options: dict[str, Any] = {}
    for opt in opts:
        name, eq, value = opt.partition("=")
        if not eq or name not in ("retry_after", "message"):
            raise ValueError(f"bad fault option {opt!r} in {item!r}: use retry_after=SECONDS "
                             "or message=TEXT")
        options[name] = float(value) if name == "retry_after" else value
    kind = kind.strip()
    entry: Any = _ALIASES.get(kind, kind)
    if isinstance(entry, str) and entry.isdigit():
        entry = int(entry)
    p = float(prob) if prob else None
    if p is not None and not 0.0 <= p <= 1.0:
        raise ValueError(f"fault probability {prob} in {item!r} is not in [0, 1]")
    if entry == REFUSAL:
        return p, FaultSpec(REFUSAL, message=options.get("message"))
    return p, FaultSpec.parse((entry, options) if options else entry)


class FaultMix:
    """At most one fault per request, each with its probability (``Faults`` for any kind)."""

    def __init__(self, choices: list[tuple[float, FaultSpec | None]], seed: int = 0) -> None:
        if sum(p for p, _ in choices) > 1.0 + 1e-9:
            raise ValueError("fault probabilities must sum to <= 1")
        self.choices, self.seed = choices, seed
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self._rng = random.Random(self.seed)

    def next(self) -> FaultSpec | None:
        with self._lock:
            u = self._rng.random()
        for p, spec in self.choices:
            if u < p:
                return spec
            u -= p
        return None

    def __repr__(self) -> str:
        return f"FaultMix({[(p, s.kind if s else 'ok') for p, s in self.choices]!r})"


class FaultScript(FaultPlan):
    """A ``FaultPlan`` of specs already parsed (``refusal`` is no plan entry name)."""

    def __init__(self, specs: list[FaultSpec | None], texts: list[str]) -> None:
        super().__init__([])
        self.entries, self._specs = texts, specs


def parse_faults(text: str | None, seed: int = 0) -> FaultMix | FaultScript | None:
    """The faults ``text`` describes (see the module docstring); None for none.
    Raises ``ValueError`` saying what is wrong."""
    items = [i for i in (text or "").split(";") if i.strip()]
    if not items:
        return None
    parsed = [_spec(i) for i in items]
    with_p = [p is not None for p, _ in parsed]
    if all(with_p):
        return FaultMix([(p, s) for p, s in parsed], seed)  # type: ignore[misc]
    if any(with_p):
        raise ValueError("give every fault a probability (a random mix) or none (a script)")
    return FaultScript([s for _, s in parsed], [i.strip() for i in items])


def parse_latency(text: str | None) -> Latency | None:
    """The ``Latency`` ``text`` describes (``name=value`` pairs), or None for ``none``/empty."""
    if not text or text.strip().lower() == "none":
        return None
    known = {f.name for f in fields(Latency)}
    values = {}
    for pair in text.split(","):
        name, eq, value = (s.strip() for s in pair.partition("="))
        if not eq or name not in known:
            raise ValueError(f"bad latency item {pair!r}: use {', '.join(sorted(known))}")
        values[name] = float(value)
    return Latency(**values)


class RequestFaults:
    """A simulator's ``faults``: the request's own (``X-Agentlab-Faults``) else the server's.
    Notes the fault drawn for the request, so ``Refusing`` can answer a refusal."""

    def __init__(self, default: Any = None) -> None:
        self.default = default

    def next(self) -> FaultSpec | None:
        source = _override.get() or self.default
        spec = source.next() if source is not None else None
        _drawn.set(spec)
        return spec

    def reset(self) -> None:
        if self.default is not None:
            self.default.reset()

    def __repr__(self) -> str:
        return f"RequestFaults({self.default!r})"


class RequestLatency:
    """A simulator's ``latency``: the request's own (``X-Agentlab-Latency``) else the server's
    (none: answer at once). Quacks like ``Latency``."""

    def __init__(self, default: Latency | None = None) -> None:
        self.default = default

    def _now(self) -> Latency | None:
        return _latency.get() or self.default

    def factor(self, rng: random.Random) -> float:
        latency = self._now()
        return latency.factor(rng) if latency is not None else 0.0

    def first_token_s(self, factor: float) -> float:
        latency = self._now()
        return latency.first_token_s(factor) if latency is not None else 0.0

    def tokens_s(self, n_tokens: int, factor: float) -> float:
        latency = self._now()
        return latency.tokens_s(n_tokens, factor) if latency is not None else 0.0

    def __repr__(self) -> str:
        return f"RequestLatency({self.default!r})"


class Refusing(Policy):
    """A policy that declines (``refuse``) when the request drew the ``refusal`` fault."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def respond(self, messages: list, tools: list) -> Any:
        spec = _drawn.get()
        if spec is not None and spec.kind == REFUSAL:
            return refuse(spec.message) if spec.message else refuse()
        return self.inner.respond(messages, tools)

    def __repr__(self) -> str:
        return f"Refusing({self.inner!r})"


@contextmanager
def overrides(faults_text: str | None, latency_text: str | None) -> Iterator[None]:
    """Use these faults/latency (header text) for the request run inside (this context and
    the worker thread it hands the request to). Raises ``ValueError`` for bad text."""
    faults = parse_faults(faults_text, seed=random.randrange(2**32)) if faults_text else None
    latency = parse_latency(latency_text) if latency_text else None
    tokens = (_override.set(faults), _latency.set(latency))
    try:
        yield
    finally:
        _override.reset(tokens[0])
        _latency.reset(tokens[1])

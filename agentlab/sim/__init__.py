"""agentlab.sim: the embedded, offline, OpenAI-compatible model (notebooks 00 and 01).

The real ``openai`` SDK talks to ``Simulator`` through an in-process ``httpx2`` transport
(``sim.client()``) or over real HTTP on 127.0.0.1 (``with sim.serve() as url: ...``), so every
notebook and test runs end to end with no network and no key::

    from agentlab import sim
    s = sim.Simulator(sim.Script([sim.call("web_search", {"query": "agents"}), sim.text("Done.")]))
    client = s.client()                      # a real openai.OpenAI
    client.chat.completions.create(model="gpt-4o", messages=[...], tools=[...])
    s.requests                               # what went over the wire

The simulator is built on chapter 01's client (``Simulator.llm()`` returns an ``LLMClient``), so
this package imports ``agentlab.llm`` and ``agentlab.llm`` never imports it: the client finds its
offline default through an entry point (``agentlab/llm/offline.py``). Importing this package does
no work: no encodings, no threads, no sockets.
"""
from __future__ import annotations

from .core import SimulatedAPI
from .faults import FAULT_KINDS, FaultPlan, Faults, FaultSpec, Latency
from .policies import (SCRIPT_ENDED, Call, Filtered, Function, Policy, Refusal, ReplyParts,
                       Script, Text, ToolUser, call, filtered, normalize_reply, refuse,
                       reply_parts, synthesize_arguments, text)
from .researcher import Auto, Researcher
from .simulator import Simulator
from .strict import SimulatorHTTPError, check_model, check_request, check_window

__all__ = [
    "Simulator", "SimulatedAPI",
    "Policy", "Script", "Function", "ToolUser", "Researcher", "Auto",
    "Text", "Call", "Refusal", "Filtered", "ReplyParts", "text", "call", "refuse", "filtered",
    "normalize_reply", "reply_parts", "synthesize_arguments", "SCRIPT_ENDED",
    "Faults", "FaultPlan", "FaultSpec", "FAULT_KINDS", "Latency",
    "SimulatorHTTPError", "check_request", "check_model", "check_window",
]

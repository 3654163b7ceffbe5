"""Checks for exercise 07, stream fragment assembly
(``notebooks/exercises/07_fragment_assembly.ipynb``).

The student writes ``assemble(fragments) -> list[dict]``. ``fragments`` are the
``delta.tool_calls`` entries of a streamed reply, in arrival order, as plain dicts:
``{"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{\\"a"}}``.
Only the first fragment of a call carries ``id`` and ``name``; ``arguments`` come in pieces;
a fragment may lack ``function`` altogether; parallel calls interleave by ``index``.
Return one ``{"id", "name", "arguments"}`` per call, ordered by ``index``, where ``arguments`` is
the parsed JSON object, ``{}`` when no argument text arrived, and ``None`` when the text is not
a JSON object. Never raise.
"""
from __future__ import annotations

import json
import random
from typing import Callable

from .cases import Case, run_cases

__all__ = ["check_fragments", "reference_assemble", "stream_fragments"]


def reference_assemble(fragments: list[dict]) -> list[dict]:
    """The reference answer."""
    calls: dict[int, dict] = {}
    for f in fragments:
        slot = calls.setdefault(f.get("index", 0), {"id": None, "name": None, "text": ""})
        slot["id"] = slot["id"] or f.get("id")
        fn = f.get("function") or {}
        slot["name"] = slot["name"] or fn.get("name")
        slot["text"] += fn.get("arguments") or ""
    out = []
    for _, slot in sorted(calls.items()):
        try:
            args = json.loads(slot["text"]) if slot["text"].strip() else {}
        except ValueError:
            args = None
        out.append({"id": slot["id"], "name": slot["name"],
                    "arguments": args if isinstance(args, dict) else None})
    return out


def stream_fragments(calls: list[tuple[str, dict]], seed: int = 0) -> list[dict]:
    """The tool-call fragments the simulator streams for ``calls`` (one parallel turn)."""
    from .. import sim  # lazy: heavy

    s = sim.Simulator([[sim.call(n, a) for n, a in calls]], seed=seed)
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
             for n in dict.fromkeys(n for n, _ in calls)]
    out = []
    for chunk in s.client().chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "go"}], tools=tools, stream=True):
        for tc in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            out.append(tc.model_dump(exclude_none=True))
    return out


def _interleave(fragments: list[dict], seed: int) -> list[dict]:
    """Shuffle fragments of different calls while keeping each call's own order."""
    rng = random.Random(seed)
    queues: dict[int, list] = {}
    for f in fragments:
        queues.setdefault(f["index"], []).append(f)
    out = []
    while any(queues.values()):
        i = rng.choice([k for k, q in queues.items() if q])
        out.append(queues[i].pop(0))
    return out


def check_fragments(fn: Callable[[list[dict]], list[dict]]) -> str:
    """Check ``fn(fragments) -> list[dict]``."""
    one = stream_fragments([("web_search", {"query": "asyncio best practices", "max_results": 3})])
    two = stream_fragments([("read_url", {"url": "https://docs.example.org/asyncio/timeouts"}),
                            ("read_url", {"url": "https://docs.example.org/asyncio/testing"})])
    no_fn = [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "f", "arguments": ""}},
             {"index": 0},
             {"index": 0, "function": {"arguments": "{\"x\": 1}"}}]
    cases = [
        ("one call from the simulator", one, "join the argument pieces, then json.loads once."),
        ("two parallel calls", two, "keep one slot per `index`."),
        ("parallel calls interleaved", _interleave(two, 3),
         "fragments of different calls can alternate: append each piece to its own index."),
        ("a fragment without `function`", no_fn, "use f.get('function') or {}: it may be missing."),
        ("a call with no arguments", [{"index": 0, "id": "c", "function": {"name": "now", "arguments": ""}}],
         "no argument text means {}."),
        ("broken JSON", [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{\"x\": "}}],
         "catch the ValueError and return arguments None."),
        ("JSON that is not an object", [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "[1, 2]"}}],
         "arguments must be a dict; anything else is None."),
        ("calls returned in index order", [dict(f) for f in two if f["index"] == 1]
         + [dict(f) for f in two if f["index"] == 0], "sort by index at the end."),
    ]
    return run_cases("fragment assembly", [
        Case(name, (lambda frags=frags: fn([json.loads(json.dumps(f)) for f in frags])),
             reference_assemble(frags), hint=hint) for name, frags, hint in cases])

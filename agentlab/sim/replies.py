"""Wire formats: a ChatCompletion JSON and the SSE chunks that stream it (notebook 01).

The streamed form is derived from the non-streamed one, so concatenating a stream always gives
back exactly the non-streamed reply. Streaming follows what the real API sends:

1. a first chunk with ``role: "assistant"`` (and ``content: ""`` for text, ``null`` for calls;
   ``refusal: ""`` and ``content: null`` for a refusal);
2. text (or the refusal) in small deltas of a few tokens;
3. per tool call, a first fragment with ``index``, ``id``, ``type``, ``function.name`` and
   ``arguments: ""``, then argument fragments of a few characters with only ``index`` and
   ``function.arguments``;
4. a last choice chunk with an empty delta and ``finish_reason``;
5. with ``stream_options.include_usage``: one more chunk with ``choices: []`` and ``usage``
   (every earlier chunk then carries ``usage: null``), then ``data: [DONE]``.
"""
from __future__ import annotations

import json
from typing import Iterator

__all__ = ["CREATED", "completion", "stream_events", "token_pieces", "sse", "iter_sse"]

#: ``created`` timestamp of every simulated reply (fixed, so runs are reproducible).
CREATED = 1735689600  # 2025-01-01T00:00:00Z
_FINGERPRINT = "fp_agentlab_sim"


def completion(*, cid: str, model: str, content: str | None, calls: list[dict],
               finish_reason: str, usage: dict, refusal: str | None = None) -> dict:
    """A ``chat.completion`` object exactly like the real API's (one choice).

    ``calls`` are ``{"id", "type": "function", "function": {"name", "arguments"}}`` dicts with
    ``arguments`` already a JSON string. A refusal has ``content: null`` and ``refusal`` set.
    """
    message: dict = {"role": "assistant", "content": content, "refusal": refusal,
                     "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": cid, "object": "chat.completion", "created": CREATED, "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": finish_reason}],
        "usage": usage, "service_tier": "default", "system_fingerprint": _FINGERPRINT,
    }


def token_pieces(text: str, enc, per: int = 3) -> list[tuple[str, int]]:
    """Split ``text`` into ``(piece, n_tokens)`` of about ``per`` tokens each.

    Pieces end only on whole UTF-8 characters (a token can hold half of a Chinese character),
    so every piece is valid text and ``"".join(pieces) == text``.
    """
    pieces: list[tuple[str, int]] = []
    buf, n = b"", 0
    for tok in enc.encode(text, disallowed_special=()):
        buf += enc.decode_single_token_bytes(tok)
        n += 1
        if n >= per:
            try:
                pieces.append((buf.decode("utf-8"), n))
                buf, n = b"", 0
            except UnicodeDecodeError:
                continue  # wait for the rest of the character
    if buf or n:
        pieces.append((buf.decode("utf-8", errors="replace"), n))
    return pieces


def _chunk(base: dict, delta: dict | None, finish: str | None = None,
           with_usage: bool = False) -> dict:
    out = dict(base)
    out["choices"] = [{"index": 0, "delta": delta or {}, "logprobs": None,
                       "finish_reason": finish}]
    if with_usage:
        out["usage"] = None
    return out


def stream_events(reply: dict, enc, *, include_usage: bool = False,
                  truncated: bool = False) -> list[tuple[dict | None, int]]:
    """The chunks that stream ``reply``, each with the number of tokens it carries (for pacing).

    ``(None, 0)`` stands for the final ``data: [DONE]``. With ``truncated`` the stream stops
    about half way (inside a call's arguments when there are calls, so the JSON is never
    whole): no ``finish_reason``, no usage chunk and no ``[DONE]``.
    """
    base = {"id": reply["id"], "object": "chat.completion.chunk", "created": reply["created"],
            "model": reply["model"], "service_tier": reply.get("service_tier", "default"),
            "system_fingerprint": reply.get("system_fingerprint", _FINGERPRINT)}
    choice = reply["choices"][0]
    msg = choice["message"]
    content, calls = msg.get("content"), msg.get("tool_calls") or []
    refusal = msg.get("refusal")
    events: list[tuple[dict | None, int]] = []

    # 1. role first; content "" when text follows, null for a tool-call-only reply or a refusal
    first = {"role": "assistant", "content": "" if content is not None else None,
             "refusal": "" if refusal else None}
    events.append((_chunk(base, first, with_usage=include_usage), 0))
    # 2. text (or the refusal) in deltas of a few tokens
    for piece, n in token_pieces(content or "", enc, per=3):
        events.append((_chunk(base, {"content": piece}, with_usage=include_usage), n))
    for piece, n in token_pieces(refusal or "", enc, per=3):
        events.append((_chunk(base, {"refusal": piece}, with_usage=include_usage), n))
    # 3. each call: header fragment (id, type, name), then argument fragments
    cut = max(1, (len(events) + 1) // 2) if not calls else None
    for index, tc in enumerate(calls):
        fn = tc["function"]
        head = {"index": index, "id": tc["id"], "type": "function",
                "function": {"name": fn["name"], "arguments": ""}}
        events.append((_chunk(base, {"tool_calls": [head]}, with_usage=include_usage),
                       len(enc.encode(fn["name"], disallowed_special=()))))
        pieces = token_pieces(fn["arguments"], enc, per=2)
        if index == len(calls) // 2:  # a truncated stream stops inside this call's arguments
            cut = len(events) + len(pieces) // 2
        for piece, n in pieces:
            frag = {"index": index, "function": {"arguments": piece}}
            events.append((_chunk(base, {"tool_calls": [frag]}, with_usage=include_usage), n))
    if truncated:  # stop part way (mid-arguments when there are calls): no finish_reason,
        return events[:cut]  # no usage, no [DONE]
    # 4. the last choice chunk carries finish_reason
    events.append((_chunk(base, {}, choice["finish_reason"], with_usage=include_usage), 0))
    # 5. usage chunk when asked for, then [DONE]
    if include_usage:
        events.append(({**base, "choices": [], "usage": reply["usage"]}, 0))
    events.append((None, 0))
    return events


def sse(event: dict | None) -> bytes:
    """One server-sent event line: ``data: {json}\\n\\n`` (or ``data: [DONE]\\n\\n``)."""
    if event is None:
        return b"data: [DONE]\n\n"
    return b"data: " + json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() \
        + b"\n\n"


def iter_sse(events: list[tuple[dict | None, int]]) -> Iterator[bytes]:
    """The SSE byte lines of ``events`` without any pacing."""
    for event, _ in events:
        yield sse(event)

"""Turning a policy's reply into the ChatCompletion the real API would send (notebook 00).

* **ids** depend only on the request (seed, history length, last message): a retried request
  gets the same ids, and two runs with the same seed are identical;
* **usage** is counted with tiktoken: the prompt with the cookbook's recipe
  (``agentlab.tokens``, cached per message because histories repeat), the completion as the
  content, refusal, and each call's name and arguments;
* **max_tokens** (or ``max_completion_tokens``) cuts the reply where the real model would stop:
  text mid-answer, or tool-call arguments mid-JSON (later calls dropped), with
  ``finish_reason`` ``length``.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any

from ..tokens import REPLY_PRIMING, count_message_tokens, count_tools_tokens, encoding_for
from .policies import ReplyParts
from .replies import completion

__all__ = ["digest", "prompt_tokens", "build_completion"]

_CACHE_LIMIT = 50_000


def digest(*parts: Any) -> str:
    """A stable hex digest of ``parts`` (ids of simulated replies)."""
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def prompt_tokens(messages: list, model: str, tools: Any, cache: dict) -> tuple[int, int]:
    """``(prompt tokens, of which tool schemas)`` for a request, caching each message's count."""
    enc = encoding_for(model).name
    total = REPLY_PRIMING
    for m in messages:
        if not isinstance(m, dict):
            continue
        k = (enc, json.dumps(m, sort_keys=True, default=str))
        n = cache.get(k)
        if n is None:
            if len(cache) > _CACHE_LIMIT:
                cache.clear()
            n = cache[k] = count_message_tokens(m, model)
        total += n
    tools_n = count_tools_tokens(tools, model) if isinstance(tools, list) and tools else 0
    return total + tools_n, tools_n


class _Budget:
    """Completion tokens left under ``max_tokens``; cuts text at a token boundary."""

    def __init__(self, enc, limit: int | None) -> None:
        self.enc, self.limit, self.used, self.cut = enc, limit, 0, False

    def take(self, text: str) -> str:
        toks = self.enc.encode(text, disallowed_special=())
        if self.limit is not None and self.used + len(toks) > self.limit:
            toks = toks[: max(0, self.limit - self.used)]
            text = self.enc.decode_bytes(toks).decode("utf-8", errors="ignore")
            self.cut = True
        self.used += len(toks)
        return text


def build_completion(body: dict, model: str, messages: list, parts: ReplyParts, *, seed: int,
                     malformed: bool, prompt: int) -> dict:
    """The ``chat.completion`` dict for ``parts`` (see the module docstring)."""
    last = json.dumps(messages[-1], sort_keys=True, default=str) if messages else ""
    key = digest(seed, len(messages), last)
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    budget = _Budget(encoding_for(model), limit if isinstance(limit, int) and limit > 0 else None)
    content = budget.take(parts.content) if parts.content else parts.content
    refusal = budget.take(parts.refusal) if parts.refusal else None
    wire_calls = []
    for i, c in enumerate(parts.calls):
        if budget.cut:
            break  # the model ran out of tokens before this call
        args = json.dumps(c.arguments, ensure_ascii=False)
        if malformed:
            args = args[: max(1, len(args) // 2)]  # cut off: not valid JSON
        name = budget.take(c.name)
        args = budget.take(args) if not budget.cut else ""
        wire_calls.append({"id": "call_" + digest(key, i, c.name)[:24], "type": "function",
                           "function": {"name": name, "arguments": args}})
    finish = parts.finish_reason or ("length" if budget.cut else
                                     "tool_calls" if wire_calls else "stop")
    usage = {"prompt_tokens": prompt, "completion_tokens": budget.used,
             "total_tokens": prompt + budget.used}
    return completion(cid="chatcmpl-" + key[:29], model=model, content=content, calls=wire_calls,
                      finish_reason=finish, usage=usage, refusal=refusal)

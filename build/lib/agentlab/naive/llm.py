"""A naive LLM client written the way the article's step 1 writes it, defects included.

Used by ``notebooks/01_llm_client.ipynb`` and ``benchmarks/bench_llm.py`` to measure against
``agentlab.llm.LLMClient``. What goes wrong here, on purpose:

* the retry tuple contains ``APIError``, the base class of *every* SDK error, so a 401 or a 400
  is retried as if it were a rate limit;
* the SDK's own retries stay on (its default is 2), so each of our attempts can be three requests
  on the wire and the two backoff loops multiply;
* a fixed exponential delay with no jitter: clients that failed together retry together;
* ``chat.completions.create()`` walks the whole history on every call;
* ``json.loads`` on tool arguments and ``tc.function.name`` on every fragment: malformed
  arguments or a fragment without ``function`` raise out of the client.

Do not use this in real code.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from openai import APIError, APITimeoutError, OpenAI, RateLimitError

__all__ = ["NaiveToolCall", "NaiveResponse", "NaiveLLMClient", "SDK_DEFAULT_RETRIES"]

SDK_DEFAULT_RETRIES = 2  # what openai.OpenAI() does when nobody says otherwise


@dataclass
class NaiveToolCall:
    id: str
    name: str
    arguments: dict


@dataclass
class NaiveResponse:
    content: str | None = None
    tool_calls: list[NaiveToolCall] = field(default_factory=list)
    usage: dict = field(default_factory=dict)
    finish_reason: str = ""


class NaiveLLMClient:
    """Article-style client. ``client``: an ``openai.OpenAI`` to wrap (e.g. the simulator's)."""

    RETRYABLE_ERRORS = (RateLimitError, APITimeoutError, APIError)  # APIError catches them all

    def __init__(self, model="gpt-4o", base_url=None, api_key=None, max_retries=3,
                 retry_base_delay=1.0, timeout=60.0, client=None):
        self.model = model
        self.max_retries = max_retries
        self.retry_base_delay = retry_base_delay
        if client is None:
            self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout)
        else:
            # The article builds its own OpenAI(), whose retries default to 2; keep that default.
            self.client = client.with_options(max_retries=SDK_DEFAULT_RETRIES, timeout=timeout)

    def chat(self, messages, tools=None, tool_choice="auto", temperature=0.0):
        kwargs = {"model": self.model, "messages": messages, "temperature": temperature}
        if tools:
            kwargs.update(tools=tools, tool_choice=tool_choice)
        raw = self._call_with_retry(**kwargs)
        choice = raw.choices[0]
        calls = [NaiveToolCall(tc.id, tc.function.name,
                               json.loads(tc.function.arguments) if tc.function.arguments else {})
                 for tc in choice.message.tool_calls or []]
        usage = {"prompt_tokens": raw.usage.prompt_tokens,
                 "completion_tokens": raw.usage.completion_tokens,
                 "total_tokens": raw.usage.total_tokens}
        return NaiveResponse(choice.message.content, calls, usage, choice.finish_reason)

    def stream(self, messages, tools=None, tool_choice="auto", temperature=0.0):
        kwargs = {"model": self.model, "messages": messages, "temperature": temperature,
                  "stream": True}  # no include_usage: the streamed usage is never asked for
        if tools:
            kwargs.update(tools=tools, tool_choice=tool_choice)
        acc: dict[int, dict] = {}
        for chunk in self._call_with_retry(**kwargs):
            delta = chunk.choices[0].delta if chunk.choices else None
            if not delta:
                continue
            if delta.content:
                yield NaiveResponse(content=delta.content)
            for tc in delta.tool_calls or []:
                slot = acc.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                if tc.id:
                    slot["id"] = tc.id
                if tc.function.name:  # AttributeError when a fragment has no `function`
                    slot["name"] = tc.function.name
                if tc.function.arguments:
                    slot["arguments"] += tc.function.arguments
        if acc:  # json.loads raises on malformed arguments; finish_reason is dropped
            yield NaiveResponse(tool_calls=[
                NaiveToolCall(d["id"], d["name"], json.loads(d["arguments"]) if d["arguments"] else {})
                for d in acc.values()])

    def _call_with_retry(self, **kwargs):
        last_error = None
        for attempt in range(self.max_retries + 1):
            try:
                return self.client.chat.completions.create(**kwargs)
            except self.RETRYABLE_ERRORS as e:
                last_error = e
                if attempt < self.max_retries:
                    time.sleep(self.retry_base_delay * (2 ** attempt))  # no jitter
        raise last_error

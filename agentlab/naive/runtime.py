"""A naive agent loop written the way the article's section 4 writes it, defects included.

Used by ``notebooks/06_runtime_loop.ipynb``, ``07_streaming.ipynb`` and
``benchmarks/bench_runtime.py`` to measure against ``agentlab.runtime.AgentRuntime``.
What goes wrong here, on purpose:

* no run state: the result only carries a free-text ``stopped_reason``; a loop stop returns a
  canned sentence as ``content`` that reads like an answer, and at ``max_turns`` the last thing
  the model said is dropped (``content=""``);
* loop detection counts identical turn signatures in a window of 4 with threshold 3, so an
  alternation A->B->A->B (two of each in any window of 4) is never caught;
* the total time budget is checked only at the top of a turn: a slow model call or a slow tool
  runs past it by a whole step;
* on a loop stop the assistant ``tool_calls`` message is already in the history and its calls
  never get results: the next request on that history is a 400 from a strict API;
* a model or tool-executor exception escapes ``run()``;
* the streaming loop runs tools serially and never asks for usage.

Do not use this in real code.
"""
from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from .executor import NaiveToolExecutor
from .messages import NaiveMessageManager

__all__ = ["NaiveRuntimeConfig", "NaiveAgentResult", "NaiveAgentRuntime"]


@dataclass
class NaiveRuntimeConfig:
    max_turns: int = 20
    max_total_time: float = 300.0
    parallel_tool_calls: bool = True
    loop_detection_window: int = 4
    loop_detection_threshold: int = 3


@dataclass
class NaiveAgentResult:
    content: str
    turns: int = 0
    total_tokens: int = 0
    tool_calls_made: list = field(default_factory=list)
    duration_ms: float = 0.0
    stopped_reason: str = ""


class NaiveAgentRuntime:
    """Article-style loop. ``executor``/``messages`` default to the naive chapter 03/04 versions."""

    def __init__(self, llm, registry, system_prompt="You are a helpful assistant.",
                 config: Optional[NaiveRuntimeConfig] = None, executor=None, messages=None):
        self.llm = llm
        self.registry = registry
        self.executor = executor or NaiveToolExecutor(registry)
        self.config = config or NaiveRuntimeConfig()
        self.messages = messages or NaiveMessageManager(system_prompt=system_prompt,
                                                        model=llm.model)
        self.on_tool_start: Optional[Callable] = None
        self.on_tool_end: Optional[Callable] = None

    def run(self, user_input):
        start = time.monotonic()
        self.messages.append({"role": "user", "content": user_input})
        tools = self.registry.get_all_schemas() or None
        turns, total_tokens, made, history = 0, 0, [], []
        content, stopped = "", "completed"
        while turns < self.config.max_turns:
            turns += 1
            if time.monotonic() - start > self.config.max_total_time:  # only checked here
                stopped = f"timeout ({self.config.max_total_time}s)"
                break
            resp = self.llm.chat(self.messages.get_messages(), tools=tools)  # may raise
            total_tokens += resp.usage.get("total_tokens", 0)
            if resp.tool_calls:
                self.messages.append({"role": "assistant", "content": resp.content, "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in resp.tool_calls]})
                history.append(json.dumps([(c.name, c.arguments) for c in resp.tool_calls],
                                          sort_keys=True))
                if self._detect_loop(history):
                    stopped = "loop_detected"  # the tool_calls above stay unanswered
                    content = "I'm repeating the same actions. Stopping to summarize findings."
                    break
                if self.on_tool_start:
                    self.on_tool_start(resp.tool_calls)
                if self.config.parallel_tool_calls and len(resp.tool_calls) > 1:
                    results = self.executor.execute_parallel(resp.tool_calls)
                else:
                    results = self.executor.execute(resp.tool_calls)
                if self.on_tool_end:
                    self.on_tool_end(results)
                for c, r in zip(resp.tool_calls, results):
                    made.append({"turn": turns, "name": c.name, "arguments": c.arguments,
                                 "success": r.success, "duration_ms": r.duration_ms})
                self.messages.extend(self.executor.results_to_messages(results))
            else:
                content = resp.content or ""
                self.messages.append({"role": "assistant", "content": content})
                break
        else:
            stopped = f"max_turns ({self.config.max_turns})"
        return NaiveAgentResult(content, turns, total_tokens, made,
                                (time.monotonic() - start) * 1000, stopped)

    def _detect_loop(self, history):
        w, t = self.config.loop_detection_window, self.config.loop_detection_threshold
        if len(history) < t:
            return False
        return any(n >= t for n in Counter(history[-w:]).values())

    def run_stream(self, user_input):
        self.messages.append({"role": "user", "content": user_input})
        tools = self.registry.get_all_schemas() or None
        turns = 0
        while turns < self.config.max_turns:
            turns += 1
            content, calls = "", None
            for chunk in self.llm.stream(self.messages.get_messages(), tools=tools):
                if chunk.content:
                    content += chunk.content
                    yield {"type": "text", "content": chunk.content}
                if chunk.tool_calls:
                    calls = chunk.tool_calls
            if calls:
                yield {"type": "tool_start", "calls": [{"name": c.name} for c in calls]}
                self.messages.append({"role": "assistant", "content": content, "tool_calls": [
                    {"id": c.id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                    for c in calls]})
                results = self.executor.execute(calls)  # serial, even for parallel calls
                self.messages.extend(self.executor.results_to_messages(results))
                yield {"type": "tool_end", "results": [{"name": r.name, "ok": r.success}
                                                       for r in results]}
            else:
                self.messages.append({"role": "assistant", "content": content})
                yield {"type": "done", "content": content}
                break

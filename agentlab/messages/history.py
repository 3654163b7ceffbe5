"""A deterministic agent conversation for notebooks, tests and benchmarks (chapter 04)."""
from __future__ import annotations

import random

__all__ = ["synthetic_history"]

_WORDS = ("agent tool result search page read write answer model context token budget message "
          "history window summary task step plan check data file query source note python "
          "async loop event thread timeout retry error state store").split()


def synthetic_history(turns: int, *, seed: int = 0, max_parallel: int = 3,
                      result_words: tuple[int, int] = (20, 300),
                      task: str = "Research asyncio and write a short report.") -> list[dict]:
    """A deterministic agent conversation for notebooks, tests and benchmarks (no system prompt).

    The task comes first; then each turn is either a tool turn (an assistant message with 1 to
    ``max_parallel`` parallel ``tool_calls`` and one ``tool`` result per call, each result
    ``result_words`` long) or, one time in four, an assistant text and a follow-up user message.
    """
    rng = random.Random(seed)
    words = lambda lo, hi: " ".join(rng.choices(_WORDS, k=rng.randint(lo, hi)))  # noqa: E731
    out: list[dict] = [{"role": "user", "content": task}]
    for t in range(turns):
        if rng.random() < 0.25:
            out.append({"role": "assistant", "content": words(10, 60)})
            out.append({"role": "user", "content": "Next: " + words(5, 20)})
            continue
        calls = [{"id": f"call_{t}_{j}", "type": "function",
                  "function": {"name": rng.choice(("web_search", "read_url", "write_file")),
                               "arguments": f'{{"query": "{words(1, 4)}"}}'}}
                 for j in range(rng.randint(1, max_parallel))]
        out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out.extend({"role": "tool", "tool_call_id": c["id"], "content": words(*result_words)}
                   for c in calls)
    return out

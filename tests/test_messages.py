"""MessageManager: cached counts, pair-safe compression the strict simulator accepts, the task
kept, summaries with a fallback."""
from __future__ import annotations

import random
import time

import pytest

import agentlab.messages.manager as messages_mod
from agentlab import sim
from agentlab.errors import ConfigError, ProviderError
from agentlab.messages import MessageManager, synthetic_history
from agentlab.naive.messages import NaiveMessageManager
from agentlab.sim import SimulatorHTTPError, check_request
from agentlab.tokens import count_messages_tokens

TASK = "Research asyncio and write a short report."


def strict(msgs: list[dict]) -> None:
    """Raise SimulatorHTTPError when the real API would answer 400."""
    check_request({"model": "gpt-4o", "messages": msgs})


def turns_of(history: list[dict]) -> list[list[dict]]:
    """Split a history into what a runtime appends at once: a call, then all its results."""
    out: list[list[dict]] = []
    for m in history:
        if m["role"] == "tool" and out and out[-1][0]["role"] == "tool":
            out[-1].append(m)
        elif m["role"] == "tool":
            out.append([m])
        else:
            out.append([m])
    return out


def feed(mm: MessageManager, history: list[dict], rng: random.Random) -> None:
    """Append like a runtime (assistant via append, results via extend or one by one),
    checking the history with the strict validator after every complete step."""
    for chunk in turns_of(history):
        if chunk[0]["role"] == "tool" and rng.random() < 0.5:
            for m in chunk:
                mm.append(m)
        else:
            mm.extend(chunk)
        if chunk[0]["role"] != "assistant" or not chunk[0].get("tool_calls"):
            check_invariants(mm)


def check_invariants(mm: MessageManager) -> None:
    msgs = mm.get_messages()
    strict(msgs)
    assert msgs[0]["role"] == "system" and msgs[0]["content"].startswith("You are a researcher.")
    assert [m["role"] for m in msgs].count("system") == 1  # the note joins the system prompt
    assert msgs[1] == {"role": "user", "content": TASK}, "the task must survive compression"
    assert mm.count_tokens() == count_messages_tokens(msgs, mm.model)
    assert mm.count_tokens() <= mm.threshold_tokens or mm.compressions[-1].over_budget


def test_validator_catches_an_orphaned_tool_message():
    with pytest.raises(SimulatorHTTPError) as info:
        strict([{"role": "user", "content": "x"}, {"role": "tool", "tool_call_id": "c1", "content": "r"}])
    assert info.value.status == 400 and "tool_calls" in info.value.message


@pytest.mark.parametrize("seed", range(12))
def test_long_random_conversations_always_pass_the_strict_check(seed):
    rng = random.Random(seed)
    mm = MessageManager("You are a researcher.", max_tokens=rng.choice([1500, 3000, 8000]),
                        keep_recent=rng.randint(1, 8))
    history = synthetic_history(rng.randint(60, 160), seed=seed, max_parallel=4,
                                result_words=(5, rng.choice([80, 300, 900])))
    feed(mm, history, rng)
    assert mm.compressions, "the conversation was long enough to need compressing"
    assert all(r.messages_removed > 0 or r.truncated > 0 for r in mm.compressions)


def test_get_messages_returns_copies_and_append_copies_input():
    mm = MessageManager("sys")
    msg = {"role": "user", "content": "hello"}
    mm.append(msg)
    msg["content"] = "changed by caller"
    out = mm.get_messages()
    out[1]["content"] = "changed by reader"
    assert mm.get_messages()[1]["content"] == "hello"
    assert mm.count_tokens() == count_messages_tokens(mm.get_messages())


def test_count_tokens_of_empty_list_is_not_the_history():
    mm = MessageManager("sys")
    mm.extend(synthetic_history(5))
    assert mm.count_tokens([]) == 3
    assert mm.count_tokens() > 100
    naive = NaiveMessageManager("sys")
    naive.extend(synthetic_history(5))
    assert naive.count_tokens([]) == naive.count_tokens()  # the article's `msgs or` slip


def test_compression_record_has_when_tokens_and_removed():
    mm = MessageManager("You are a researcher.", max_tokens=2000)
    start = time.time()
    mm.extend(synthetic_history(40, seed=3))
    rec = mm.compressions[0]
    assert start - 1 <= rec.when <= time.time() + 1
    assert rec.tokens_before > mm.threshold_tokens >= rec.tokens_after
    assert rec.messages_removed > 0 and rec.strategy == "sliding_window"
    assert f"{mm.compressions[-1].messages_removed}" in rec.note or "removed" in rec.note
    first = mm.get_messages()[0]
    assert first["role"] == "system" and first["content"].startswith("You are a researcher.\n\n[")
    assert "earlier messages were removed" in first["content"]


def test_note_counts_all_removed_messages_across_compressions():
    mm = MessageManager("sys", max_tokens=1500)
    mm.extend([{"role": "user", "content": TASK}])
    for i in range(200):
        mm.append({"role": "assistant" if i % 2 else "user", "content": f"message {i} " * 20})
    removed = sum(r.messages_removed for r in mm.compressions)
    assert removed == 201 - (len(mm) - 1)  # everything but the system message is kept or removed
    assert f"[{removed} earlier messages" in mm.get_messages()[0]["content"]


def test_append_counts_each_message_once(monkeypatch):
    calls = []
    real = messages_mod.count_message_tokens
    monkeypatch.setattr(messages_mod, "count_message_tokens", lambda m, model: calls.append(1) or real(m, model))
    mm = MessageManager("sys", max_tokens=6000)
    history = synthetic_history(300, seed=1)
    mm.extend(history[:1])
    for m in history[1:]:
        mm.append(m)
    # one count per message, plus one per compression note: linear, not quadratic
    assert len(calls) <= len(history) + 2 * len(mm.compressions) + 2
    assert len(mm.compressions) >= 5


def test_oversized_message_is_truncated_with_a_marker_and_history_survives():
    mm = MessageManager("sys", max_tokens=4000)
    mm.extend(synthetic_history(6, seed=2, result_words=(20, 40)))
    before = len(mm)
    mm.append({"role": "user", "content": "word " * 20000})
    last = mm.get_messages()[-1]["content"]
    assert "truncated by MessageManager" in last and len(last) < 20000
    assert mm.compressions[0].strategy == "truncate"
    assert len(mm) >= before - 4, "one huge message must not flush the conversation"
    assert mm.count_tokens() <= mm.threshold_tokens


def test_keep_recent_messages_survive():
    mm = MessageManager("sys", max_tokens=3000, keep_recent=5)
    history = synthetic_history(80, seed=4, result_words=(10, 60))
    mm.extend(history)
    tail = mm.get_messages()[-5:]
    assert tail == history[-5:]


def test_pending_tool_calls_are_never_dropped():
    """A call appended before its results arrives must still be there when they do."""
    mm = MessageManager("sys", max_tokens=1200, keep_recent=1)
    mm.append({"role": "user", "content": TASK})
    for t in range(30):
        call = {"id": f"c{t}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        mm.append({"role": "assistant", "content": None, "tool_calls": [call]})
        mm.append({"role": "tool", "tool_call_id": f"c{t}", "content": "x " * 300})
        strict(mm.get_messages())


class FakeLLM:
    def __init__(self, fail=False):
        self.fail, self.seen = fail, []

    def chat(self, messages, **kw):
        self.seen.append(messages)
        if self.fail:
            raise RuntimeError("provider down")
        return type("R", (), {"content": "The agent searched asyncio docs and found the event loop."})()


def test_summarize_replaces_removed_messages_with_the_summary():
    llm = FakeLLM()
    mm = MessageManager("sys", max_tokens=3000, strategy="summarize", llm=llm)
    mm.extend(synthetic_history(40, seed=5))
    note = mm.get_messages()[0]["content"]
    assert "found the event loop" in note and mm.compressions[0].strategy == "summarize"
    assert "call_0_0" in llm.seen[0][1]["content"] or "web_search" in llm.seen[0][1]["content"]
    strict(mm.get_messages())


def test_summarize_failure_falls_back_to_sliding_window_and_is_recorded():
    mm = MessageManager("sys", max_tokens=3000, strategy="summarize", llm=FakeLLM(fail=True))
    mm.extend(synthetic_history(40, seed=5))
    rec = mm.compressions[0]
    assert rec.strategy == "sliding_window" and rec.fallback == "RuntimeError: provider down"
    assert "earlier messages were removed" in mm.get_messages()[0]["content"]
    strict(mm.get_messages())


def test_summarize_without_llm_is_a_config_error():
    with pytest.raises(ConfigError) as info:
        MessageManager(strategy="summarize")
    assert info.value.code == "invalid_config"


def test_restore_round_trips_get_messages_and_keeps_counting_removals():
    mm = MessageManager("sys", max_tokens=3000)
    mm.extend(synthetic_history(30, seed=6))
    saved = mm.get_messages()
    again = MessageManager("sys", max_tokens=3000)
    again.restore(saved)
    assert again.get_messages() == saved and again.count_tokens() == mm.count_tokens()
    removed_before = sum(r.messages_removed for r in mm.compressions)
    more = synthetic_history(30, seed=8)[1:]
    again.extend(more)
    total = removed_before + sum(r.messages_removed for r in again.compressions)
    assert again.get_messages()[0]["content"].startswith(f"sys\n\n[{total} earlier messages were")


def test_compressed_history_is_accepted_by_the_simulator_end_to_end():
    s = sim.Simulator(sim.Function(lambda msgs, tools: sim.text(f"seen {len(msgs)} messages")))
    llm = s.llm()
    mm = MessageManager("You are a researcher.", max_tokens=2500, strategy="summarize", llm=llm)
    for chunk in turns_of(synthetic_history(60, seed=7, max_parallel=3)):
        mm.extend(chunk)
        if chunk[0]["role"] != "assistant" or not chunk[0].get("tool_calls"):
            assert llm.chat(mm.get_messages()).content.startswith("seen ")
    assert all(r["status"] == 200 for r in s.requests)
    summaries = [r for r in mm.compressions if r.strategy == "summarize"]
    assert len(summaries) >= 2 and "seen 2 messages" in mm.get_messages()[0]["content"]


def test_naive_trim_is_rejected_by_the_simulator_with_a_400():
    llm = sim.Simulator(sim.Function(lambda msgs, tools: sim.text("ok"))).llm(max_retries=0)
    naive = NaiveMessageManager("sys", max_tokens=2000)
    errors = []
    for chunk in turns_of(synthetic_history(40, seed=0)):
        naive.extend(chunk)
        if chunk[0].get("tool_calls"):
            continue  # its results come next
        try:
            llm.chat(naive.get_messages())
        except ProviderError as exc:
            errors.append(exc)
    assert errors and errors[0].code == "bad_request" and errors[0].details["status"] == 400
    assert "role 'tool' must be a response" in errors[0].details["body"]["message"]


def test_naive_trim_orphans_a_tool_message():
    naive = NaiveMessageManager("sys", max_tokens=2000)
    history = synthetic_history(40, seed=0)
    failures = 0
    for chunk in turns_of(history):
        naive.extend(chunk)
        if chunk[0]["role"] == "tool":
            try:
                strict(naive.get_messages())
            except SimulatorHTTPError:
                failures += 1
    assert failures > 0


def test_a_history_far_under_budget_never_builds_the_tokenizer(monkeypatch):
    """Chapter 04's lean start: the UTF-8 bound decides; exact counts only near the budget."""
    from agentlab import research, tokens
    built = []
    real = tokens.get_encoding
    monkeypatch.setattr(tokens, "get_encoding", lambda name: built.append(name) or real(name))
    history = synthetic_history(6, seed=1)
    mm = MessageManager(research.SYSTEM_PROMPT, tools=research.research_tools().get_all_schemas())
    mm.extend(history)
    assert built == [] and not mm.over_budget
    assert mm.upper_bound() >= mm.count_tokens() == tokens.count_messages_tokens(
        mm.get_messages(), mm.model, mm._tools)
    assert built == ["o200k_base"] * len(built) and built  # asked: counted exactly
    tight = MessageManager(research.SYSTEM_PROMPT, max_tokens=mm.count_tokens() - mm.tools_tokens)
    built.clear()
    tight.extend(history)  # the bound passes the threshold: counted, then compressed
    assert built and tight.compressions and tight.count_tokens() <= tight.threshold_tokens

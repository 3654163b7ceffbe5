"""agentlab.research: the offline corpus, the four tools, the Researcher policy and the demo."""
from __future__ import annotations

import importlib.util
import json
import threading
from pathlib import Path

import pytest

from agentlab import research, sim
from agentlab.errors import ToolError
from agentlab.runtime import AgentRuntime, RunState
from agentlab.sim.researcher import Researcher


def test_corpus_has_enough_real_pages_and_a_matching_index():
    pages = research.corpus().pages
    assert len(pages) >= 12
    assert all(150 <= len(p.body.split()) <= 400 for p in pages.values())
    index = json.loads((research.CORPUS_DIR / "index.json").read_text())
    assert sorted(e["url"] for e in index["pages"]) == sorted(p.url for p in pages.values())


def test_web_search_ranks_by_keywords():
    hits = json.loads(research.web_search("asyncio common pitfalls", max_results=3))
    assert len(hits) == 3 and hits[0]["url"] == "https://docs.example.org/asyncio/common-pitfalls"
    assert hits[0]["score"] > hits[1]["score"] and hits[0]["snippet"]
    assert json.loads(research.web_search("zzzz qqqq")) == []


def test_read_url_returns_the_page_or_a_clear_not_found():
    text = research.read_url("https://docs.example.org/asyncio/timeouts/")
    assert text.startswith("# Timeouts in asyncio") and "asyncio.timeout" in text
    with pytest.raises(ToolError) as info:
        research.read_url("https://example.com/nope")
    assert info.value.code == "not_found" and "web_search" in info.value.message


def test_write_file_is_confined_to_output_dir(tmp_path):
    reg = research.research_tools(output_dir=tmp_path / "out")
    write = reg.get_function("write_file")
    assert not (tmp_path / "out").exists()  # created on the first write, not before
    assert write("r.md", "hello") == "Wrote 5 chars to r.md in the output folder"
    assert (tmp_path / "out" / "r.md").read_text() == "hello"
    for bad in ["../escape.md", "/etc/passwd", "a/../../x.md", ""]:
        with pytest.raises(ToolError):
            write(bad, "x")
    assert not (tmp_path / "escape.md").exists()


def test_parallel_writes_to_one_name_report_what_the_file_holds(tmp_path):
    write = research.research_tools(output_dir=tmp_path).get_function("write_file")
    for trial in range(60):
        go, outcomes = threading.Barrier(3), {}

        def one(i: int) -> None:
            go.wait()
            try:
                write("report.md", f"version {i} of trial {trial}\n" * 200)
                outcomes[i] = "ok"
            except Exception as exc:  # noqa: BLE001 - what a spurious failure looks like
                outcomes[i] = repr(exc)
        threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        assert outcomes == {0: "ok", 1: "ok", 2: "ok"}, trial
        held = (tmp_path / "report.md").read_text()
        assert held in {f"version {i} of trial {trial}\n" * 200 for i in range(3)}
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left


def test_ask_user_answers_from_a_script():
    ask = research.research_tools(answers=["asyncio", "yes"]).get_function("ask_user")
    assert [ask("topic?"), ask("sure?"), ask("more?")][:2] == ["asyncio", "yes"]
    ask = research.research_tools(answers={"topic?": "queues"}).get_function("ask_user")
    assert ask("topic?") == "queues"


def run_agent(tmp_path, registry=None, task=research.DEMO_TASK):
    s = sim.Simulator(Researcher(), strict=True)
    rt = AgentRuntime(s.llm(), registry or research.research_tools(tmp_path / "out"),
                      system_prompt=research.SYSTEM_PROMPT)
    return rt.run(task), s


def test_research_agent_follows_the_article_trace(tmp_path):
    r, s = run_agent(tmp_path)
    assert (r.state, r.turns) == (RunState.FINISHED, 6)
    by_turn = [[c["name"] for c in r.tool_calls_made if c["turn"] == t] for t in range(1, 6)]
    assert by_turn == [["web_search"], ["read_url", "read_url"], ["web_search"], ["read_url"],
                       ["write_file"]]
    read = [c["arguments"]["url"] for c in r.tool_calls_made if c["name"] == "read_url"]
    report = (tmp_path / "out" / "asyncio-report.md").read_text()
    assert all(url in report for url in read) and "TaskGroup" in report
    assert all(url in r.content for url in read)
    assert {x["status"] for x in s.requests} == {200}


def test_researcher_adapts_to_a_failing_read(tmp_path):
    reg = research.research_tools(tmp_path / "out")
    broken = "https://docs.example.org/python/concurrency-models"
    real = reg.get_function("read_url")

    def read_url(url: str) -> str:
        """Read a page.

        Args:
            url: address.
        """
        if url == broken:
            raise RuntimeError("connection reset")
        return real(url)
    reg.register(read_url, replace=True)
    r, _ = run_agent(tmp_path, reg)
    assert r.state is RunState.FINISHED
    assert broken not in (tmp_path / "out" / "asyncio-report.md").read_text()


def test_researcher_uses_a_tool_it_does_not_know(tmp_path):
    reg = research.research_tools(tmp_path / "out")
    reg.register(lambda topic: f"{topic}: 3 related talks", name="find_talks",
                 description="Find conference talks about a topic.")
    r, _ = run_agent(tmp_path, reg)
    assert "find_talks" in [c["name"] for c in r.tool_calls_made]
    assert "3 related talks" in (tmp_path / "out" / "asyncio-report.md").read_text()


def test_run_demo_prints_the_trace_and_report_path(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    lines: list[str] = []
    r = research.run_demo(lines.append, output_dir=tmp_path / "out")
    assert r.state is RunState.FINISHED
    assert lines[1].endswith("[parallel]") and lines[5].endswith("[no tool_calls] -> Done")
    assert any(line.startswith("Turns: 6 | Tokens: ") and "| completed" in line for line in lines)
    assert f"Report written to {(tmp_path / 'out' / 'asyncio-report.md').as_posix()}" in lines


def test_demo_llm_is_the_researcher_offline_and_honours_the_environment(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL"):
        monkeypatch.delenv(var, raising=False)
    offline = research.demo_llm()
    assert str(offline.client.base_url).startswith("http://sim.local/")
    assert offline.model == "gpt-4o"
    monkeypatch.setenv("AGENTLAB_MODEL", "gpt-4o-mini")
    assert research.demo_llm().model == "gpt-4o-mini"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    real = research.demo_llm(max_retries=0)
    assert str(real.client.base_url).rstrip("/") == "http://127.0.0.1:9/v1"
    assert real.model == "gpt-4o-mini"


def test_soak_accepts_the_seed_it_documents(capsys):
    spec = importlib.util.spec_from_file_location(
        "soak", Path(__file__).resolve().parents[1] / "benchmarks" / "soak.py")
    soak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(soak)
    assert soak.main(["--runs", "3", "--seed", "7"]) == 0
    first = capsys.readouterr().out
    assert "soak: 3 runs, finished " in first and first.rstrip().endswith(
        "0 escaped exceptions, 0 protocol 400s")
    soak.main(["--runs", "3", "--seed", "7"])
    again = capsys.readouterr().out  # the same seed replays the same runs
    assert again.splitlines()[2:] == first.splitlines()[2:]

"""The ``agentlab`` command: demo and chat run offline; serve answers a plain OpenAI client."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentlab import cli


def test_demo_runs_the_research_agent_offline(tmp_path, capsys):
    assert cli.main(["demo", "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "[parallel]" in out and "completed" in out
    reports = list(tmp_path.glob("*.md"))
    assert len(reports) == 1 and "https://" in reports[0].read_text()


def test_chat_streams_offline(capsys):
    assert cli.main(["chat", "what is an agent?"]) == 0
    out = capsys.readouterr().out
    assert "built-in simulator" in out and "finish_reason=stop" in out


def test_serve_answers_a_plain_openai_client(tmp_path):
    openai = pytest.importorskip("openai")
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    proc = subprocess.Popen([sys.executable, "-m", "agentlab.cli", "serve", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        url = line.split("listening on ")[1].strip()
        client = openai.OpenAI(base_url=url, api_key="sk-sim", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].finish_reason == "stop"
    finally:
        proc.terminate()
        proc.wait(timeout=10)

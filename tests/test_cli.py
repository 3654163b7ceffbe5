"""The ``agentlab`` command: a lean --help, a demo that streams and names its endpoint, clean
one-line errors, a real chat REPL (driven through a pty), and serve for a plain OpenAI client."""
from __future__ import annotations

import io
import os
import pty
import select
import signal
import subprocess
import sys
import time

import pytest

from agentlab import cli, research
from agentlab.cli import chat

CLI = [sys.executable, "-m", "agentlab.cli"]


def offline_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL")}
    return {**env, **extra}


def test_help_lists_every_command_and_imports_nothing_heavy():
    code = ("import sys\nfrom agentlab import cli\ntry:\n    cli.main(['--help'])\n"
            "except SystemExit:\n    pass\nprint([m for m in ('openai', 'tiktoken', 'matplotlib',"
            " 'nbclient') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    for name, help_line in cli.COMMANDS.items():
        assert f"    {name:<10}{help_line}" in lines
    assert lines[-1] == "[]"


def test_version(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert capsys.readouterr().out.startswith("agentlab 0.2.0 (Python 3.")


def test_demo_runs_offline_and_names_its_endpoint(tmp_path, capsys):
    assert cli.main(["demo", "--output-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ("agentlab demo: gpt-4o on the built-in simulator "
                                   "(no OPENAI_API_KEY / OPENAI_BASE_URL set)")
    assert "[parallel]" in out and "   read_url ok" in out and "| completed (finished)" in out
    assert "[no tool_calls] -> Done (" in out
    reports = list(tmp_path.glob("*.md"))
    assert len(reports) == 1 and "https://" in reports[0].read_text()


def test_demo_streams_progress_while_the_agent_works(tmp_path):
    proc = subprocess.Popen([*CLI, "demo", "--output-dir", str(tmp_path), "--time-scale", "0.3"],
                            stdout=subprocess.PIPE, text=True, env=offline_env())
    seen = {}
    for line in proc.stdout:
        for key in ("Turn 1:", "Turn 6:", "Turns: 6"):
            if line.startswith(key):
                seen.setdefault(key, time.monotonic())
    assert proc.wait(timeout=60) == 0
    # the first turn is on screen long before the run ends (it used to print all at the end)
    assert seen["Turns: 6"] - seen["Turn 1:"] > 0.5


def test_demo_says_in_one_line_that_the_endpoint_is_unreachable(tmp_path):
    env = offline_env(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL="http://127.0.0.1:9/v1")
    out = subprocess.run([*CLI, "demo", "--output-dir", str(tmp_path), "--max-retries", "0"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 1
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        "agentlab demo: cannot reach the model at http://127.0.0.1:9/v1"), out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def _interruptible() -> None:
    """In a child before exec: SIGINT at its default and unblocked, as a shell starts a program.
    A fork inherits an ignored SIGINT, and Python then leaves it ignored: beside two CPU burners
    and four test workers these tests saw Ctrl-C land and do nothing (demo exit 0, chat reply
    not stopped) -- the disposition the test process had at that moment, not the program's."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def test_demo_ctrl_c_is_one_line(tmp_path):
    proc = subprocess.Popen([*CLI, "demo", "--output-dir", str(tmp_path), "--time-scale", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=offline_env(), preexec_fn=_interruptible)
    for line in proc.stdout:
        if line.startswith("Turn 1:"):
            break
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.strip().splitlines() == [err.strip()] and \
        err.strip().startswith("agentlab demo: interrupted (Ctrl-C) during turn"), err


def test_run_demo_with_events_prints_only_the_summary(tmp_path):
    lines, events = [], []
    result = research.run_demo(lines.append, output_dir=tmp_path, on_event=events.append)
    assert result.state.name == "FINISHED" and lines[0] == "=" * 50
    kinds = [e["type"] for e in events]
    assert kinds[0] == "run_start" and kinds.count("tool_end") == 6 and "llm_end" in kinds
    assert "text" in kinds  # the answer streamed


# -- chat -------------------------------------------------------------------------------

def test_chat_streams_the_reply_in_pieces():
    out = io.StringIO()
    writes = []
    out.write = lambda s: writes.append(s) or len(s)  # type: ignore[method-assign]
    args = cli.build_parser(["chat"]).parse_args(["chat", "--time-scale", "0"])
    talk = chat.Conversation(chat.make_llm(args), out)
    assert talk.ask("how do timeouts work in asyncio?")
    text = "".join(writes)
    assert '  · web_search("timeout asyncio")  ok' in text
    assert "Source: Timeouts in asyncio" in text
    assert sum(1 for w in writes if w and not w.startswith(("  ", "agent>"))) > 5  # deltas


# pty.fork() in a threaded process warns on 3.12+; the child only calls exec (as pexpect does)
pty_warning = pytest.mark.filterwarnings("ignore:This process:DeprecationWarning")


class Terminal:
    """A program on a pseudo-terminal, the way a person runs it (Ctrl-C is a keypress)."""

    def __init__(self, args: list[str], env: dict) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: become the program, with Ctrl-C as a shell gives it
            _interruptible()
            os.execvpe(args[0], args, env)
        self.seen = ""

    def expect(self, text: str, timeout: float = 60.0) -> str:
        """Read until ``text`` appears; returns what came before it (and consumes it)."""
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"timed out waiting for {text!r}; got:\n{self.seen}")
            try:
                self.seen += os.read(self.fd, 4096).decode("utf-8", "replace")
            except OSError:  # the program ended
                raise AssertionError(f"ended before {text!r}; got:\n{self.seen}") from None
        before, _, self.seen = self.seen.partition(text)
        return before

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def wait(self) -> int:
        try:
            while os.read(self.fd, 4096):
                pass
        except OSError:
            pass
        return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])


@pty_warning
def test_chat_holds_a_conversation_in_a_terminal():
    term = Terminal([*CLI, "chat", "--time-scale", "0.2"], offline_env())
    assert "on the built-in simulator" in term.expect("you> ")
    term.send("how do I put a timeout on an asyncio call?\r")
    reply = term.expect("you> ")
    assert 'web_search("timeout asyncio call")' in reply
    assert "Source: Timeouts in asyncio" in reply
    term.send("\r")  # empty input: a polite hint, no model call
    assert "(type a question" in term.expect("you> ")
    term.send("tell me more\r")  # a follow-up: the history says what "more" is about
    reply = term.expect("you> ")
    assert "More on timeout asyncio call:" in reply and "Timeouts in asyncio" not in reply
    term.send("/reset\r")
    assert "(new conversation)" in term.expect("you> ")
    term.send("tell me more\r")  # nothing to follow up any more
    assert "Ask me about Python asyncio" in term.expect("you> ")
    term.send("\x04")  # Ctrl-D
    term.expect("bye")
    assert term.wait() == 0


@pty_warning
def test_chat_takes_a_pasted_block_as_one_question_and_shows_it_is_thinking():
    term = Terminal([*CLI, "chat", "--time-scale", "0.2"], offline_env())
    term.expect("you> ")
    term.send("how do I put a timeout\ron an asyncio call?\rthanks\r")  # three lines at once
    reply = term.expect("you> ")
    assert "thinking…" in reply and "\x1b[K" in reply  # shown, then erased by the first event
    assert reply.count('web_search(') == 1 and reply.count("agent> ") == 1
    assert "Source: Timeouts in asyncio" in reply
    term.send("/exit\r")
    assert "agent> " not in term.expect("bye")  # no second or third run was queued
    assert term.wait() == 0


@pty_warning
def test_chat_ctrl_c_stops_a_reply_then_leaves_cleanly():
    term = Terminal([*CLI, "chat", "--time-scale", "3"], offline_env())
    term.expect("you> ")
    term.send("what is a TaskGroup?\r")
    term.expect("web_search(")
    term.send("\x03")  # Ctrl-C while the model works
    term.expect("(stopped)")
    term.expect("you> ")
    term.send("what is a TaskGroup?\r")  # the conversation goes on
    assert "Source:" in term.expect("you> ", timeout=90)
    # Ctrl-C at the prompt: leave. readline notices a Ctrl-C only once it waits for keys, and
    # it draws the prompt just before; a person's keypress never lands in between, a test can.
    time.sleep(0.5)
    term.send("\x03")
    rest = term.expect("bye")
    assert term.wait() == 0
    assert "Traceback" not in rest + term.seen


def test_serve_answers_a_plain_openai_client(tmp_path):
    openai = pytest.importorskip("openai")
    proc = subprocess.Popen([*CLI, "serve", "--port", "0"], stdout=subprocess.PIPE, text=True,
                            env=offline_env())
    try:
        line = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in line
        url = line.split("listening on ")[1].strip()
        client = openai.OpenAI(base_url=url, api_key="sk-sim", max_retries=0)
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].finish_reason == "stop"
        assert client.models.retrieve("gpt-4o").id == "gpt-4o"  # was a 404
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            client.models.retrieve("gpt-nope")
        import httpx
        root = url.rsplit("/v1", 1)[0]
        for where in (root + "/", url):  # a person opening the address (was "Invalid URL")
            about = httpx.get(where, timeout=10)
            assert about.status_code == 200 and "/v1 (base_url)" in about.json()["message"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_lab_turns_on_saved_widget_state_then_starts_jupyterlab(tmp_path, monkeypatch, capsys):
    from agentlab.widgets import lab_settings
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # a fresh environment
    started = []
    monkeypatch.setattr(os, "execvp", lambda prog, argv: started.append(argv))
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert not lab_settings.is_installed()
    cli.main(["lab", "notebooks", "--", "--no-browser"])
    assert lab_settings.is_installed() and "save widget state" in capsys.readouterr().out
    assert started == [[sys.executable, "-m", "jupyterlab", "notebooks", "--no-browser"]]
    cli.main(["lab", "notebooks"])  # the second time: nothing to write, nothing said
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("argv, euid, expected", [
    (["lab", "--", "--no-browser"], 1000, ["notebooks", "--no-browser"]),  # the form --help shows
    (["lab", "work", "--", "--port", "9999", "--no-browser"], 1000,
     ["work", "--port", "9999", "--no-browser"]),
    (["lab"], 0, ["notebooks", "--allow-root"]),  # root in a container: Jupyter needs it
    (["lab", "--", "--allow-root"], 0, ["notebooks", "--allow-root"]),  # not twice
])
def test_lab_hands_everything_after_the_double_dash_to_jupyter(argv, euid, expected, tmp_path,
                                                               monkeypatch):
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    started = []
    monkeypatch.setattr(os, "execvp", lambda prog, args: started.append(args[3:]))
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    cli.main(argv)
    assert started == [expected]


def test_lab_help_says_it_runs_as_root_with_allow_root(capsys):
    with pytest.raises(SystemExit):
        cli.main(["lab", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "agentlab lab -- --no-browser" in out and "--allow-root" in out


def test_a_reader_that_leaves_early_ends_the_command_quietly_with_141():
    # `agentlab exercise list | head -0`: the pipe is closed before the command writes.
    proc = subprocess.Popen([*CLI, "exercise", "list"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=offline_env())
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert err == ""


@pytest.mark.parametrize("name", list(cli.COMMANDS))
def test_every_command_says_what_it_is_for_in_its_help(name, capsys):
    with pytest.raises(SystemExit):
        cli.main([name, "--help"])
    usage, description = capsys.readouterr().out.split("\n\n")[:2]
    assert usage.startswith(f"usage: agentlab {name}")
    assert len(description.strip()) > 20 and not description.lstrip().startswith(("-", "positional"))

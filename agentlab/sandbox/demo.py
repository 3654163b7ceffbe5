"""Misbehaving tools for ``notebooks/15_sandbox`` and the tests (chapter 15).

Each one does what a buggy or hostile tool does, boundedly enough that running it *without*
a sandbox in a test or a notebook does not take the machine down (the notebook shows their
unsandboxed harm on small sizes only).
"""
from __future__ import annotations

import os
import time

__all__ = ["noop", "hang_then_write", "memory_bomb", "fork_bomb", "infinite_output",
           "read_secret", "spawn_detached", "not_json", "TOOLS"]


def noop() -> str:
    """Do nothing (for measuring the overhead of a call)."""
    return "ok"


def hang_then_write(path: str, seconds: float = 10.0) -> str:
    """Sleep, then write ``path``: a side effect that lands after the caller gave up."""
    time.sleep(seconds)
    with open(path, "w", encoding="utf-8") as f:
        f.write("written after the timeout\n")
    return "written"


def memory_bomb(mb: int = 4096, hold_s: float = 0.0) -> int:
    """Allocate ``mb`` megabytes, one at a time, and hold them ``hold_s`` seconds."""
    chunks = [bytearray(1 << 20) for _ in range(mb)]
    time.sleep(hold_s)
    return len(chunks)


def fork_bomb(children: int = 200, seconds: float = 30.0, hold_s: float = 0.0) -> int:
    """Start up to ``children`` processes that each sleep ``seconds`` (a bounded fork bomb),
    then wait ``hold_s`` seconds before returning."""
    started = 0
    for _ in range(children):
        pid = os.fork()
        if pid == 0:  # the child: sleep, never return into the caller's code
            time.sleep(seconds)
            os._exit(0)
        started += 1
    time.sleep(hold_s)
    return started


def infinite_output(chunk: int = 65536) -> None:
    """Print until something stops it."""
    line = "x" * chunk
    while True:
        print(line)


def read_secret(path: str = "~/.ssh/id_rsa", variable: str = "OPENAI_API_KEY") -> dict:
    """Report whether a private key file and an API key can be read."""
    path = os.path.expanduser(path)
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            key_file = f"read {len(f.read())} characters"
    except OSError as exc:
        key_file = f"refused: {type(exc).__name__}"
    return {"file": key_file, "env": "found" if os.environ.get(variable) else "not set"}


def spawn_detached(path: str, seconds: float = 2.0) -> int:
    """Start a grandchild in a new session that writes ``path`` after ``seconds``; return."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(seconds)
            with open(path, "w", encoding="utf-8") as f:
                f.write("written by a detached process\n")
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


def not_json() -> object:
    """Return something that cannot cross as JSON."""
    return object()


#: The misbehaving tools, by the name the notebook's widget shows.
TOOLS = {"hang then write": hang_then_write, "memory bomb": memory_bomb,
         "fork bomb": fork_bomb, "infinite output": infinite_output,
         "read a secret": read_secret}

"""The same misbehaving tool in a thread and in the sandbox, side by side (``notebooks/15_sandbox``).

``side_by_side(kind)`` runs one of ``demo.TOOLS`` through a ``ToolExecutor`` twice -- registered
plainly (a worker thread, chapter 03) and with ``sandbox=policy`` -- at the same timeout, and
measures what happened *after* the executor answered:

    hang then write   was the file written after the timeout?
    memory bomb       how much memory did the caller's own process gain?
    fork bomb         how many processes were still running after the call?
    read a secret     could the tool read the API key and the private key file?

The thread side gets small sizes (200 MB, 30 processes): it cannot be stopped, so a real bomb
would take the notebook's kernel down with it.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
from typing import Any

from . import demo
from .policy import SandboxPolicy
from .pool import WORKER_CODE

__all__ = ["side_by_side", "outcome", "KINDS"]

KINDS = tuple(demo.TOOLS)


def outcome(ending: str, returned_s: float, effect: str, harm: float) -> dict:
    """One run: how the executor answered, after how long, and the measured after-effect
    (``harm`` as a number: files written, MB gained, processes left, secrets read)."""
    return {"ending": ending, "returned_s": round(returned_s, 1), "effect": effect, "harm": harm}


def _run(func: Any, kwargs: dict, timeout_s: float, policy: SandboxPolicy | None) -> tuple:
    from ..executor import ToolExecutor  # chapter 03: the same executor both ways
    from ..llm import ToolCall
    from ..tools import ToolRegistry
    reg = ToolRegistry()
    reg.register(func, timeout=timeout_s, sandbox=policy)
    executor = ToolExecutor(reg)
    t0 = time.perf_counter()
    [result] = executor.execute([ToolCall("c1", func.__name__, kwargs)])
    took = time.perf_counter() - t0
    # a thread the timeout abandoned goes on (that is the point): wait until it has finished
    # on its own, so what is measured next is everything it did, however busy the machine
    deadline = time.monotonic() + 30
    while executor.abandoned_threads and time.monotonic() < deadline:
        time.sleep(0.02)
    return (result.error_code or "ok"), took, result


def _allocated_mb(fn: Any, *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` and the peak of the memory Python allocated in this process meanwhile, in
    MB (tracemalloc). Not the resident size: the allocator may reuse memory an earlier cell
    freed, so a kernel that once peaked higher would show no gain at all."""
    import tracemalloc
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        value = fn(*args)
        return value, max(0.0, tracemalloc.get_traced_memory()[1] - base) / 2 ** 20
    finally:
        if started:
            tracemalloc.stop()


def _forked(sandboxed: bool) -> set[int]:
    """Running processes a fork-bomb tool could have started. In a thread: the caller's own
    children that are copies of it (a thread forks the caller). In the sandbox: copies of a
    worker of this process's pool that are not the workers themselves (a worker's parent is
    this process; what a tool forks has a worker for parent, or init once the worker is
    killed), searched machine-wide so orphans count too."""
    import psutil
    me = os.getpid()
    mine = psutil.Process().cmdline()
    worker = [sys.executable, "-c", WORKER_CODE]
    found = set()
    for p in psutil.process_iter(["cmdline", "ppid", "status"]):
        cmd, info = p.info["cmdline"] or [], p.info
        if p.pid == me or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if sandboxed and cmd[:3] == worker and info["ppid"] != me and _host(cmd) == me:
            found.add(p.pid)
        elif not sandboxed and cmd == mine and info["ppid"] == me:
            found.add(p.pid)
    return found


def _host(cmd: list[str]) -> int | None:
    try:
        return json.loads(cmd[5]).get("host")
    except (IndexError, ValueError, AttributeError):
        return None


def _end(pids: set[int]) -> None:
    """Kill the thread side's leftovers once counted (the demo cleans up after itself), and
    reap them: they are this process's children."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError, PermissionError):
            continue


def side_by_side(kind: str, *, timeout_s: float = 1.0, policy: SandboxPolicy | None = None,
                 secret_dir: str | None = None) -> dict[str, dict]:
    """``{"thread": outcome, "sandbox": outcome}`` for one of ``KINDS`` (module docstring).
    ``secret_dir``: a folder holding ``id_rsa``, hidden from the sandbox (``policy.hidden``)."""
    if kind not in demo.TOOLS:
        raise ValueError(f"kind is one of {', '.join(KINDS)}; got {kind!r}")
    policy = policy or SandboxPolicy(memory_mb=256, max_procs=16, workers=1,
                                     hidden=(secret_dir,) if secret_dir else ())
    out = {}
    for side, pol in (("thread", None), ("sandbox", policy)):
        small = side == "thread"
        if kind == "hang then write":
            path = os.path.join(tempfile.mkdtemp(prefix="agentlab-hang-"), "late.txt")
            ending, took, _ = _run(demo.hang_then_write,
                                   {"path": path, "seconds": timeout_s + 1.0}, timeout_s, pol)
            if pol is not None:  # a killed worker writes nothing later: give it the time anyway
                time.sleep(max(0.0, timeout_s + 1.3 - took))
            written = os.path.exists(path)
            out[side] = outcome(ending, took, "file written after the timeout" if written
                                else "file never written", float(written))
        elif kind == "memory bomb":
            # held past the timeout: the thread times out however fast the machine allocates
            (ending, took, _), mb = _allocated_mb(
                _run, demo.memory_bomb, {"mb": 200 if small else 4096,
                                         "hold_s": timeout_s + 0.5}, timeout_s, pol)
            gained = 50 * round(mb / 50)  # to 50 MB: not noise
            out[side] = outcome(ending, took, f"asked for {200 if small else 4096} MB; this "
                                f"process's peak memory rose about {gained} MB", gained)
        elif kind == "fork bomb":
            started = 30 if small else 200
            before = _forked(not small)
            # the thread side's children sleep long (they are killed once counted), so none
            # has ended by the time it is counted, however slowly a busy machine forks; the
            # bomb returns after the timeout, so the thread times out on any machine
            ending, took, _ = _run(demo.fork_bomb, {"children": started,
                                                    "seconds": 30.0 if small else 3.0,
                                                    "hold_s": timeout_s + 0.5}, timeout_s, pol)
            new = _forked(not small) - before  # the thread side: once it has forked all
            if small:
                _end(new)
            left = len(new)
            out[side] = outcome(ending, took, f"{left} of {started} processes still running "
                                "after the call", left)
        elif kind == "infinite output":
            if small:  # a thread printing forever would never stop: not run
                out[side] = outcome("not run", 0.0, "a thread cannot be stopped: it would print "
                                    "into the notebook forever", float("nan"))
                continue
            ending, took, _ = _run(demo.infinite_output, {}, timeout_s, pol)
            out[side] = outcome(ending, took, "stopped at the file-size limit", 0)
        else:  # read a secret
            key = os.path.join(secret_dir or tempfile.mkdtemp(), "id_rsa")
            ending, took, result = _run(demo.read_secret, {"path": key}, timeout_s, pol)
            text = result.result
            stolen = ("read " in text) + ('"env": "found"' in text)
            out[side] = outcome(ending, took, text, stolen)
    return out

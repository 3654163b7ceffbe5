"""A warm pool of sandbox workers, and one call's life in it (chapter 15).

Starting a Python process costs tens of milliseconds; handing a call to one that is already
running costs a pipe round trip. So each ``SandboxPolicy`` gets a pool (``pool_for``) of
``policy.workers`` warm workers (``worker.py``), each confined when it starts. A call takes an
idle worker (or starts one), sends it the request and waits for the answer until its
deadline. Then one of four things has happened:

- an answer came: the value (JSON only), or the tool's error as a typed ``ToolError``; any
  process the tool left running is killed and the worker goes back to the pool;
- the deadline passed, or the caller gave up (``SandboxCall.kill``): the worker is killed
  with *every* process it started (``cgroup.kill_all``), so the side effect stops where it
  was. The outcome is **unknown**: the error says so, and the call must not be retried
  automatically (chapter 11: a durable run records it and never runs it again);
- the worker died (CPU limit, a crash): a typed error naming the limit;
- the answer was larger than ``max_result_bytes``: the worker is killed, a typed error.

A worker that was killed or hit a limit is replaced in the background, so the pool stays warm.
"""
from __future__ import annotations

import atexit
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from ..errors import ToolError
from .cgroup import kill_all, make, members, remove
from .worker import function_spec, read_frame, write_frame

__all__ = ["SandboxPool", "SandboxCall", "pool_for", "close_pools", "sandbox_env", "BASE_ENV"]

#: Environment variables every sandboxed process sees (when the parent has them).
BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")

_pools: dict[Any, "SandboxPool"] = {}
_pools_lock = threading.Lock()
_START_S = 30.0  # a worker that is not ready by then is not coming


def sandbox_env(allowed: tuple[str, ...]) -> dict[str, str]:
    """The environment a sandboxed process gets: an allow-list of the parent's variables."""
    env = {k: os.environ[k] for k in (*BASE_ENV, *allowed) if k in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# A worker's command line is [sys.executable, "-c", WORKER_CODE, fd, fd, config]; every process
# it forks has the same one, and config's "host" is the pid of the pool's process. That is how
# ``compare`` finds what a sandboxed tool of this process left behind.
WORKER_CODE = "import sys; from agentlab.sandbox.worker import main; sys.exit(main(sys.argv[1:]))"


class _Worker:
    """One worker process, its pipes and its cgroup."""

    def __init__(self, policy: Any) -> None:
        self.destroyed = False
        self.group = make(policy.max_procs + 1)  # + the worker itself
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        hidden = [os.path.expanduser(p) for p in policy.hidden]
        config = {"memory_mb": policy.memory_mb, "cpu_s": policy.cpu_s * 8 + 1,
                  "file_mb": policy.file_mb, "max_procs": policy.max_procs,
                  "cgroup": self.group, "network": policy.network,
                  "hide": [p for p in hidden if os.path.isdir(p)],
                  "host": os.getpid()}  # unused by the worker: names whose sandbox it is
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_CODE, str(to_r), str(from_w), json.dumps(config)],
            pass_fds=(to_r, from_w), start_new_session=True,
            env=sandbox_env(policy.env), stdin=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        ready = self.answer(time.monotonic() + _START_S, 1 << 16)
        if not isinstance(ready, dict) or "ready" not in ready:
            self.destroy()
            raise ToolError("sandbox_unavailable", f"a sandbox worker did not start ({ready!r})")
        self.capabilities: dict = ready["ready"]

    def answer(self, deadline: float, limit: int) -> Any:
        """The next frame as JSON; ``"timeout"`` / ``"eof"`` / ``"too_big"`` when none came."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            ready, _, _ = select.select([self.from_r], [], [], min(left, 0.5))
            if ready:
                break
        try:
            frame = read_frame(self.from_r, limit)
        except OverflowError:
            return "too_big"
        except OSError:
            return "eof"
        if frame is None:
            return "eof"
        try:
            return json.loads(frame)
        except ValueError:
            return "eof"

    def leftovers(self) -> None:
        """Kill what the last call left running (the worker itself stays)."""
        for pid in set(members(self.group)) - {self.proc.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def destroy(self) -> None:
        if self.destroyed:  # never close the pipes twice: their numbers may be reused
            return
        self.destroyed = True
        kill_all(self.group, self.proc.pid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for fd in (self.to_w, self.from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        remove(self.group)


class SandboxCall:
    """One call running in a worker; ``wait()`` for its value, ``kill()`` to stop it now."""

    def __init__(self, pool: "SandboxPool", worker: _Worker, name: str, timeout_s: float) -> None:
        self.pool, self.worker, self.name = pool, worker, name
        self.timeout_s, self.deadline = timeout_s, time.monotonic() + timeout_s
        self.reason: str | None = None
        self._lock = threading.Lock()

    def kill(self, reason: str = "cancelled") -> bool:
        """Kill the call's worker and every process it started; True if this call stopped it."""
        with self._lock:
            if self.reason is not None:
                return False
            self.reason = reason
        self.worker.destroy()
        return True

    def wait(self) -> Any:
        """The tool's value; raises a ``ToolError`` for every other ending (module docstring)."""
        answer = self.worker.answer(self.deadline, self.pool.policy.max_result_bytes)
        if answer == "timeout":
            self.kill("timeout")
        elif answer in ("eof", "too_big"):
            self.kill(answer)
        elif isinstance(answer, dict) and answer.get("limit"):
            self.kill("limit")
        self.pool.release(self.worker, self.reason is None)
        if self.reason in (None, "limit") and isinstance(answer, dict):
            if answer.get("ok"):
                return answer.get("value")
            raise _tool_error(self.name, answer, self.pool.policy)
        raise self._ended_error(answer)

    def _ended_error(self, answer: Any) -> ToolError:
        name, policy = self.name, self.pool.policy
        if self.reason in ("timeout", "cancelled"):
            what = (f"did not finish within {self.timeout_s:.1f} s" if self.reason == "timeout"
                    else "was stopped because the run was cancelled")
            return ToolError("tool_timeout" if self.reason == "timeout" else "cancelled",
                             f"Tool '{name}' {what} and was killed with every process it "
                             "started. Its outcome is unknown: it may have done part of its "
                             "work. Check before calling it again; it is not retried "
                             "automatically.", details={"outcome": "unknown", "killed": True})
        if self.reason == "too_big":
            return ToolError("sandbox_limit", f"Tool '{name}' returned more than "
                             f"{policy.max_result_bytes:,} bytes of JSON and was stopped. Ask "
                             "for less (a smaller range, a summary).",
                             details={"limit": "result_size"})
        code = self.worker.proc.returncode
        if code == -signal.SIGXCPU:
            return ToolError("sandbox_limit", f"Tool '{name}' used more than {policy.cpu_s} s "
                             "of CPU and was killed. Ask for less work.",
                             details={"limit": "cpu"})
        return ToolError("sandbox_crashed", f"Tool '{name}' crashed its sandbox process "
                         f"(exit status {code}); it may have done part of its work.",
                         details={"exit_status": code})


def _tool_error(name: str, answer: dict, policy: Any) -> ToolError:
    limit, kind, message = answer.get("limit"), answer.get("type"), answer.get("message", "")
    if limit:
        bound = {"memory": f"{policy.memory_mb} MB of memory",
                 "file_size": f"{policy.file_mb} MB per file (its printed output included)",
                 "processes": f"{policy.max_procs} processes"}.get(limit, limit)
        return ToolError("sandbox_limit", f"Tool '{name}' hit its sandbox limit of {bound} "
                         f"({kind}: {message}) and was stopped. Ask for less.",
                         details={"limit": limit})
    if kind == "result_not_json":
        return ToolError("result_not_json", f"Tool '{name}' ran, but its result {message}; "
                         "its author must return JSON data (str, number, list, dict).")
    return ToolError("tool_failed", f"Tool '{name}' raised {kind}: {message}. Check the "
                     "arguments or try a different approach; do not repeat the same call "
                     "unchanged.", details={"type": kind})


class SandboxPool:
    """Warm workers for one policy (see the module docstring). Thread-safe."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self.workers_started = 0
        self.closed = False
        self._replacing: list[threading.Thread] = []  # close() waits for them

    def warm(self) -> "SandboxPool":
        """Start workers until ``policy.workers`` are idle."""
        while not self.closed:
            with self._lock:
                if len(self._idle) >= self.policy.workers:
                    return self
            worker = self._new()
            with self._lock:
                keep = not self.closed
                if keep:
                    self._idle.append(worker)
            if not keep:  # closed while it started
                worker.destroy()
        return self

    def _new(self) -> _Worker:
        worker = _Worker(self.policy)
        with self._lock:
            self.workers_started += 1
        return worker

    def submit(self, func: Any, kwargs: dict, timeout_s: float | None = None,
               name: str | None = None) -> SandboxCall:
        """Start ``func(**kwargs)`` in a worker; ``timeout_s`` defaults to the policy's."""
        request = pickle.dumps((function_spec(func), kwargs, self.policy.cpu_s))
        name = name or getattr(func, "__name__", "tool")
        for attempt in range(3):  # an idle worker that died meanwhile is replaced
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            worker = worker or self._new()
            call = SandboxCall(self, worker, name, self.policy.timeout_s if timeout_s is None
                               else max(float(timeout_s), 0.0))
            try:
                if worker.proc.poll() is not None:
                    raise BrokenPipeError("the worker had exited")
                write_frame(worker.to_w, request)
                return call
            except OSError:
                worker.destroy()
        call.reason = "eof"
        return call

    def call(self, func: Any, kwargs: dict, timeout_s: float | None = None) -> Any:
        return self.submit(func, kwargs, timeout_s).wait()

    def release(self, worker: _Worker, healthy: bool) -> None:
        """A call ended: a healthy worker goes back; a dead one is replaced in the background."""
        if healthy and not self.closed:
            worker.leftovers()
            with self._lock:
                self._idle.append(worker)
            return
        if not self.closed:
            thread = threading.Thread(target=self._replace, daemon=True)
            with self._lock:
                self._replacing = [t for t in self._replacing if t.is_alive()] + [thread]
            thread.start()

    def _replace(self) -> None:
        try:
            self.warm()
        except Exception:  # noqa: BLE001 - the next call starts a worker and reports why
            pass

    def close(self) -> None:
        """Kill every idle worker (running calls end with their own kill), and wait for a
        replacement that was starting: it sees ``closed`` and kills its worker, so when this
        returns no worker of the pool is left."""
        with self._lock:
            self.closed, idle, self._idle = True, self._idle, []
            replacing, self._replacing = self._replacing, []
        for worker in idle:
            worker.destroy()
        for thread in replacing:
            if thread is not threading.current_thread():
                thread.join(_START_S)


def pool_for(policy: Any) -> SandboxPool:
    """The process's pool for ``policy`` (made, not warmed, on first use)."""
    with _pools_lock:
        pool = _pools.get(policy)
        if pool is None or pool.closed:
            pool = _pools[policy] = SandboxPool(policy)
            if len(_pools) == 1:
                atexit.register(close_pools)
        return pool


def close_pools() -> None:
    """Kill every worker of every pool (at exit, and in tests)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()

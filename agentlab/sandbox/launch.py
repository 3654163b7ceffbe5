"""Run any command confined: ``python -m agentlab.sandbox.launch CONFIG -- CMD...`` (chapter 15).

The grader (``agentlab.exercises.grading``) starts each student's Jupyter kernel through this
launcher. It confines itself (``limits.confine``: the pids cgroup, an empty network namespace,
the class folder and the grades folder hidden under empty mounts, a new pid namespace, hard
resource limits), then starts ``CMD`` as the first process of the new pid namespace and waits
for it. Inside, the kernel cannot name a process outside (``os.getppid()`` is 0), so it cannot
kill the grader; when the launcher dies, the kernel and all its processes die with it.

``SandboxedKernelManager`` is a ``jupyter_client.KernelManager`` whose kernel command goes
through the launcher with a given config.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any

__all__ = ["main", "launcher_cmd", "sandboxed_kernel_manager"]


def launcher_cmd(config: dict, cmd: list[str]) -> list[str]:
    """The command that runs ``cmd`` confined by ``config`` (see ``limits.confine``)."""
    return [sys.executable, "-m", "agentlab.sandbox.launch", json.dumps(config), "--", *cmd]


def sandboxed_kernel_manager(config: dict, sockets: str) -> type:
    """A ``KernelManager`` class whose kernel starts through the launcher and talks over Unix
    sockets named ``sockets``-N (a kernel in its own network namespace has no reachable TCP).
    Lazy: Jupyter is heavy."""
    from jupyter_client.manager import AsyncKernelManager as KernelManager

    class SandboxedKernelManager(KernelManager):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**{"transport": "ipc", "ip": sockets, **kwargs})

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            return launcher_cmd(config, super().format_kernel_cmd(extra_arguments))

    return SandboxedKernelManager


def main(argv: list[str]) -> int:
    from .limits import confine
    config, cmd = json.loads(argv[0]), argv[argv.index("--") + 1:]
    report = confine(config)
    if config.get("workdir"):
        os.chdir(config["workdir"])
    if not config.get("pid_ns") or report.get("processes", "").startswith("shared"):
        os.execvp(cmd[0], cmd)
    pid = os.fork()
    if pid == 0:  # pid 1 of the new namespace: the command itself
        import signal
        from .limits import _libc
        _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the launcher
        os.execvp(cmd[0], cmd)
    import signal
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):  # pass requests on to the command
        signal.signal(sig, lambda s, _f: os.kill(pid, s))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status) & 0xFF
        except InterruptedError:
            continue


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""What a sandboxed tool may use: ``SandboxPolicy`` (chapter 15, ``notebooks/15_sandbox``).

A policy is a frozen record of hard limits. The pool (``pool.py``) keeps warm workers per
policy, and each worker applies the limits to itself before it runs anything (``limits.py``):

    memory_mb      RLIMIT_AS: an allocation past it raises MemoryError in the tool
    cpu_s          RLIMIT_CPU per call: past it the kernel kills the worker (SIGXCPU)
    file_mb        RLIMIT_FSIZE: a write past it fails (EFBIG), the tool's stdout included
    max_procs      processes and threads at once (a pids cgroup on Linux as root, else
                   RLIMIT_NPROC): a fork bomb gets ``BlockingIOError`` instead of the machine
    max_result_bytes  the JSON result may not be larger
    env            names of the parent's environment variables the tool may see, besides
                   ``BASE_ENV`` (no API key, no token: an allow-list, never a deny-list)
    network        False: the worker gets its own empty network namespace where the OS
                   allows it (``capabilities()`` says plainly when it does not)
    timeout_s      the limit of a direct call (``tool(**kwargs)``); an executor passes its own
    workers        warm workers kept ready
    hidden         folders replaced by an empty one for the tool (a private mount namespace,
                   where the OS allows it): ``~/.ssh`` and cloud credentials by default

``timeout_s`` is a wall-clock limit; at it the worker is killed with every process it started.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..knobs import positive_int, positive_number
from .pool import BASE_ENV

__all__ = ["SandboxPolicy", "BASE_ENV"]


@dataclass(frozen=True)
class SandboxPolicy:
    """Hard limits for tools run in the sandbox (see the module docstring)."""

    memory_mb: int = 512
    cpu_s: int = 10
    file_mb: int = 8
    max_procs: int = 32
    max_result_bytes: int = 1_000_000
    env: tuple[str, ...] = ()
    network: bool = False
    timeout_s: float = 30.0
    workers: int = 2
    hidden: tuple[str, ...] = ("~/.ssh", "~/.aws", "~/.config/gcloud")

    def __post_init__(self) -> None:
        for name in ("memory_mb", "cpu_s", "file_mb", "max_procs", "max_result_bytes", "workers"):
            positive_int(name, getattr(self, name))
        positive_number("timeout_s", self.timeout_s)
        object.__setattr__(self, "env", tuple(self.env))
        object.__setattr__(self, "hidden", tuple(self.hidden))

    def wrap(self, func, name: str | None = None):
        """``func`` as a ``SandboxedTool`` under this policy (``ToolRegistry.register(f,
        sandbox=policy)`` calls this)."""
        from .tool import SandboxedTool  # the tool needs the pool; the policy does not
        return SandboxedTool(func, self, name)

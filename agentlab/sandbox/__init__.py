"""Chapter 15: the execution sandbox (``notebooks/15_sandbox.ipynb``; book §3, figure 9-2).

A thread's timeout only stops the *waiting*: Python cannot kill a thread, so a hung tool keeps
running and still writes its file after the run has moved on (chapter 03). A process can be
killed. Register a tool with ``sandbox=SandboxPolicy(...)`` and each call runs in a warm worker
process with hard limits (memory, CPU, file size, processes), a private working folder, an
environment without the parent's secrets, a capped result, and no network where the OS allows
it; at its timeout the worker is killed with every process it started, and the call's
outcome is reported as unknown (not retried automatically).

    policy.py    SandboxPolicy: the limits
    tool.py      SandboxedTool: what the registry stores; SandboxFuture for the executor
    pool.py      the warm pool and one call's life in it
    worker.py    the worker process (JSON answers only)
    limits.py    confine(): what a process does to itself; capabilities(): what this OS gives
    cgroup.py    finding and killing every process a sandbox started
    launch.py    run any command confined (the grader's kernels)
    demo.py      misbehaving tools for the notebook and the tests
"""
from .limits import capabilities, confine
from .policy import SandboxPolicy
from .pool import SandboxCall, SandboxPool, close_pools, pool_for
from .tool import SandboxedTool, SandboxFuture

__all__ = ["SandboxPolicy", "SandboxedTool", "SandboxFuture", "SandboxPool", "SandboxCall",
           "pool_for", "close_pools", "capabilities", "confine"]

"""The limits a sandboxed process puts on itself, and what this platform can give (chapter 15).

``confine(config)`` runs *inside* the new process (the worker of a tool pool, or the launcher
of a grading kernel) before any untrusted code, in this order:

1. join its pids cgroup (Linux, when the parent could make one): a hard cap on processes and
   threads, and the list the parent reads to kill *every* process, even one started in a new
   session (``cgroup.py``);
2. new namespaces where permitted: network (an empty one: no interface but a down loopback),
   mount (to hide folders under an empty tmpfs), pid (the process cannot name any process
   outside); as a normal user a user namespace comes first, else they need root;
3. resource limits: ``RLIMIT_AS`` (memory), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``, ``RLIMIT_NPROC``
   (used when no cgroup could be made; root ignores it), ``RLIMIT_CORE`` 0;
4. ``PR_SET_CHILD_SUBREAPER``: orphans stay below it; with ``die_with_parent``,
   ``PR_SET_PDEATHSIG`` too (it dies with the thread that started it, so a pool's workers,
   started from passing threads, end at the end of their pipe instead).

Each step that the OS refuses is *reported*, never skipped silently: ``confine`` returns one
line per aspect, and ``capabilities()`` (which runs ``confine`` in a throw-away process)
tells a caller what a sandbox gets here, e.g. ``network: not isolated (unshare refused:
Operation not permitted)``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import signal
import subprocess
import sys
from typing import Any

__all__ = ["confine", "capabilities", "CLONE_NEWNET", "CLONE_NEWNS", "CLONE_NEWPID"]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x20000, 0x10000000, 0x20000000, 0x40000000
_PR_SET_PDEATHSIG, _PR_SET_CHILD_SUBREAPER = 1, 36
_MS_REC, _MS_PRIVATE, _MS_NOSUID, _MS_NODEV = 0x4000, 1 << 18, 2, 4

_capabilities: dict[str, str] | None = None


def _libc() -> Any:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _call(fn: Any, *args: Any) -> str | None:
    """None when ``fn(*args)`` succeeded, else the OS's reason."""
    if fn(*args) != 0:
        return os.strerror(ctypes.get_errno())
    return None


def _namespaces(libc: Any, config: dict, report: dict) -> None:
    """Step 2: network / mount / pid namespaces (a user namespace first when not root)."""
    flags = (CLONE_NEWNET if not config.get("network", False) else 0) | \
        (CLONE_NEWNS if config.get("hide") else 0) | (CLONE_NEWPID if config.get("pid_ns") else 0)
    if not flags:
        report["network"] = "allowed by the policy"
        return
    uid, gid = os.getuid(), os.getgid()
    user = os.geteuid() != 0
    why = _call(libc.unshare, flags | (CLONE_NEWUSER if user else 0))
    if why is None and user:  # keep our own uid and gid inside the new user namespace
        try:
            with open("/proc/self/setgroups", "w") as f:
                f.write("deny")
            for name, ident in (("uid_map", uid), ("gid_map", gid)):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(f"{ident} {ident} 1")
        except OSError:
            pass
    ok = why is None
    if flags & CLONE_NEWNET:
        report["network"] = "isolated (an empty network namespace)" if ok else \
            f"not isolated (unshare refused: {why})"
    if flags & CLONE_NEWPID:
        report["processes"] = "own pid namespace" if ok else f"shared pid namespace ({why})"
    if flags & CLONE_NEWNS:
        report["hidden"] = _hide(libc, config["hide"]) if ok else f"not hidden ({why})"


def _hide(libc: Any, paths: list[str]) -> str:
    """Mount an empty, read-only tmpfs over each path (in the private mount namespace)."""
    why = _call(libc.mount, b"none", b"/", None, _MS_REC | _MS_PRIVATE, None)
    hidden = []
    for path in paths:
        if why is None and os.path.isdir(path):
            why = _call(libc.mount, b"tmpfs", os.fsencode(path), b"tmpfs",
                        _MS_NOSUID | _MS_NODEV | 1, b"size=4k,mode=0")  # 1 = MS_RDONLY
            hidden.append(path)
    return f"not hidden ({why})" if why else f"{len(hidden)} folder(s) hidden"


def _rlimits(config: dict, report: dict) -> None:
    """Step 3: hard resource limits (soft = hard, so the tool cannot raise them)."""
    import resource
    mb = 1024 * 1024
    wanted = {"RLIMIT_AS": config.get("memory_mb", 0) * mb,
              "RLIMIT_CPU": config.get("cpu_s", 0),
              "RLIMIT_FSIZE": config.get("file_mb", 0) * mb, "RLIMIT_CORE": 0}
    if not config.get("cgroup") and config.get("max_procs"):
        wanted["RLIMIT_NPROC"] = _user_processes() + config["max_procs"]
    done = []
    for name, value in wanted.items():
        if value is None or (value == 0 and name != "RLIMIT_CORE"):
            continue
        try:
            resource.setrlimit(getattr(resource, name), (value, value))
            done.append(name[7:].lower())
        except (ValueError, OSError, AttributeError) as exc:
            report.setdefault("limits_refused", []).append(f"{name}: {exc}")
    report["limits"] = ", ".join(done)
    if "RLIMIT_NPROC" in wanted and os.geteuid() == 0:
        report["limits"] += " (nproc is not enforced for root)"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past file_mb raises EFBIG instead


def _user_processes() -> int:
    uid = os.getuid()
    try:
        return sum(1 for p in os.listdir("/proc") if p.isdigit() and os.stat(f"/proc/{p}").st_uid == uid)
    except OSError:
        return 0


def confine(config: dict) -> dict[str, Any]:
    """Apply the limits of ``config`` to this process (see the module docstring); returns
    what it got, one line per aspect."""
    report: dict[str, Any] = {"platform": sys.platform}
    if not sys.platform.startswith("linux"):
        report["network"] = "not isolated (namespaces are Linux only)"
        report["processes"] = "process group only (no cgroup on this OS)"
        if sys.platform != "win32":
            _rlimits(config, report)
        return report
    from .cgroup import join
    report["processes"] = join(config.get("cgroup"), config.get("max_procs", 0))
    libc = _libc()
    _namespaces(libc, config, report)
    _rlimits(config, report)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    if config.get("die_with_parent"):  # the signal follows the parent *thread*: a pool's
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # workers end at pipe EOF
    return report


def capabilities(refresh: bool = False) -> dict[str, str]:
    """What a sandboxed tool gets on this machine, probed once in a throw-away process:
    ``{"platform", "processes", "network", "limits", "files", "environment"}``."""
    global _capabilities
    if _capabilities is not None and not refresh:
        return dict(_capabilities)
    from .cgroup import make, remove
    group = make(4)
    code = ("import json,sys; from agentlab.sandbox.limits import confine; "
            "print(json.dumps(confine(json.loads(sys.argv[1]))))")
    config = {"memory_mb": 512, "cpu_s": 5, "file_mb": 8, "max_procs": 4, "cgroup": group}
    try:
        out = subprocess.run([sys.executable, "-c", code, json.dumps(config)],
                             capture_output=True, text=True, timeout=30)
        found = json.loads(out.stdout.strip().splitlines()[-1])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as exc:
        found = {"platform": sys.platform, "network": f"not isolated (probe failed: {exc})"}
    finally:
        remove(group)
    found.pop("limits_refused", None)
    found["files"] = ("a private temporary working folder; the rest of the file system is "
                      "readable and writable with the user's rights" if os.geteuid() != 0 else
                      "a private temporary working folder; running as root, the tool can "
                      "read and write any file (run the agent as a normal user)")
    found["environment"] = "an allow-list (SandboxPolicy.env); no API keys"
    _capabilities = {k: str(v) for k, v in found.items()}
    return dict(_capabilities)

"""Every process a sandbox started, found and killed: a pids cgroup, else the process tree.

Killing a process group is not enough: a tool can start a child in a new session
(``setsid``), or a grandchild whose parent exits (a daemon). On Linux, when the pids cgroup
hierarchy is writable (root, or a delegated cgroup), each sandboxed process gets its own
cgroup: ``pids.max`` caps how many processes and threads it may have at once (a fork bomb
stops there), and ``cgroup.procs`` lists every member wherever it moved in the tree, so
``kill_all`` leaves nothing behind. Without one, ``kill_all`` stops the process group and
every descendant psutil can see (the sandboxed process is a child subreaper, so orphans stay
below it), then kills them; a process that escaped before that is out of reach, and
``capabilities()`` says so.
"""
from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

__all__ = ["make", "join", "members", "kill_all", "remove", "ROOTS"]

#: Where a pids cgroup can be made (cgroup v1, then v2).
ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup"))


def _root() -> Path | None:
    for root in ROOTS:
        if (root / "cgroup.procs").exists() and os.access(root, os.W_OK):
            if root.name == "pids" or "pids" in _read(root / "cgroup.subtree_control"):
                return root
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def make(max_procs: int) -> str | None:
    """A new pids cgroup capped at ``max_procs`` (None where none can be made)."""
    root = _root()
    if root is None:
        return None
    path = root / "agentlab-sandbox" / uuid.uuid4().hex[:12]
    _sweep(path.parent)
    try:
        path.mkdir(parents=True)
        (path / "pids.max").write_text(str(int(max_procs)))
        return str(path)
    except OSError:
        remove(str(path))
        return None


def _sweep(parent: Path, age_s: float = 60.0) -> None:
    """Remove empty cgroups left by sandboxes whose owner died without cleaning up (a kernel
    killed with SIGKILL runs no ``atexit``); only ones older than ``age_s``, so a cgroup that
    another process has just made for a worker still starting is never taken."""
    try:
        children = list(parent.iterdir())
    except OSError:
        return
    now = time.time()
    for child in children:
        try:
            if child.is_dir() and now - child.stat().st_mtime > age_s and \
                    not _read(child / "cgroup.procs").strip():
                child.rmdir()
        except OSError:
            continue


def join(path: str | None, max_procs: int) -> str:
    """Move this process into ``path``; the line ``capabilities()`` shows for processes."""
    if path is None:
        return ("process tree (no pids cgroup here: a process that escapes the tree "
                "survives; RLIMIT_NPROC caps the count for a normal user)")
    try:
        Path(path, "cgroup.procs").write_text(str(os.getpid()))
    except OSError as exc:
        return f"process tree (joining the pids cgroup failed: {exc})"
    return f"pids cgroup: at most {max_procs} processes and threads, all killed at the end"


def members(path: str | None) -> list[int]:
    if path is None:
        return []
    return [int(p) for p in _read(Path(path, "cgroup.procs")).split()]


def _tree(pid: int) -> list[int]:
    try:
        import psutil
        proc = psutil.Process(pid)
        return [pid] + [c.pid for c in proc.children(recursive=True)]
    except Exception:  # gone, or psutil missing: the process group is all we can reach
        return [pid]


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def kill_all(path: str | None, pid: int | None, timeout_s: float = 5.0) -> int:
    """Kill every process of a sandbox: its cgroup's members, its process group and its tree.
    Frozen first (SIGSTOP), so nothing can fork while the list is read. Returns how many
    processes were signalled."""
    seen: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = set(members(path))
        if pid is not None:
            found.update(_tree(pid))
            try:
                os.killpg(pid, signal.SIGSTOP)
            except (ProcessLookupError, PermissionError):
                pass
        alive = [p for p in found if _alive(p)]
        if not alive:
            break
        _signal(alive, signal.SIGSTOP)
        seen.update(alive)
        # a second look: children forked while the first list was read
        late = set(members(path)) | (set(_tree(pid)) if pid is not None else set())
        _signal(sorted(late - set(alive)), signal.SIGSTOP)
        seen.update(late)
        _signal(sorted(set(alive) | late), signal.SIGKILL)
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.005)
    return len(seen)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


def remove(path: str | None) -> None:
    """Delete an (empty) cgroup made by ``make``; members are killed first."""
    if path is None:
        return
    for _ in range(100):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            kill_all(path, None, timeout_s=0.2)
            time.sleep(0.01)

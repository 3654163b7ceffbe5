"""A guard process that stops a local fleet when the process that started it dies, however.

``LocalFleet`` stops Redis and its workers in ``close()``, and at interpreter exit
(``atexit``). Neither runs when the owner is killed: a Jupyter kernel shut down "now" (nbval
does that) or killed with SIGKILL. The workers and Redis live in sessions of their own (so
that a worker's kill takes its pool with it), so nothing else would stop them.

The guard is a small Python process holding the read end of a pipe whose write end only the
owner has. The owner tells it which process groups to stop (``watch``) and which it stopped
itself (``forget``). When the pipe closes without a ``done`` line, the owner is gone: the
guard sends SIGTERM to every group it still watches, then SIGKILL a few seconds later.
"""
from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["FleetGuard"]

_GUARD = r"""
import os, signal, sys, time
fd, groups, buf = int(sys.argv[1]), set(), b""
while True:
    chunk = os.read(fd, 4096)
    if not chunk:
        break  # the owner is gone without saying "done"
    buf += chunk
    *lines, buf = buf.split(b"\n")
    for line in lines:
        word, _, num = line.decode().partition(" ")
        if word == "done":
            sys.exit(0)
        (groups.add if word == "watch" else groups.discard)(int(num))
for sig, pause in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 0.0)):
    for group in groups:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    time.sleep(pause)
"""


class FleetGuard:
    """Start the guard; ``watch(pgid)`` / ``forget(pgid)`` as groups start and stop."""

    def __init__(self) -> None:
        read, self._write = os.pipe()  # both ends non-inheritable: no worker gets the write end
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", _GUARD, str(read)],
                                         pass_fds=(read,), start_new_session=True,
                                         stdin=subprocess.DEVNULL)
        finally:
            os.close(read)

    def _send(self, line: str) -> None:
        if self._write is not None:
            try:
                os.write(self._write, f"{line}\n".encode())
            except OSError:  # the guard itself was killed: nothing left to tell
                pass

    def watch(self, pgid: int) -> None:
        """Stop process group ``pgid`` if the owner dies."""
        self._send(f"watch {pgid}")

    def forget(self, pgid: int) -> None:
        """The owner stopped ``pgid`` itself (its number may be reused later)."""
        self._send(f"forget {pgid}")

    def close(self) -> None:
        """The owner stopped everything: the guard exits without killing anything."""
        if self._write is None:
            return
        try:
            self._send("done")
        finally:
            os.close(self._write)
            self._write = None
            self.proc.wait()

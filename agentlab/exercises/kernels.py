"""Jupyter kernels that talk over Unix sockets, so that many can start at once.

A Jupyter kernel normally listens on five TCP ports that its *client* chooses: the client asks
the OS for free ports, closes them, writes them into a connection file, and the kernel binds
them a moment later. Any process that takes one of those ports in between (another kernel
starting, or just an outgoing connection given that port by the OS) makes the kernel die with
``ZMQError: Address already in use``. It is a known gap in the protocol (papermill #511,
positron #5799), rare for one notebook, regular when four test workers start dozens of kernels
while other tests open thousands of connections: CI lost a run to it.

Unix sockets have no such gap. ``ipc_kernel_manager()`` is a ``KernelManager`` class whose
kernels bind socket files in a fresh private folder (absolute paths, so the kernel's working
folder does not matter), removed when the kernel shuts down. ``agentlab exercise check``, the
notebook refresher and the test suite (nbval included, see ``conftest.py``) start kernels with
it. The grader's sandboxed kernels use Unix sockets too (``sandbox.launch``). On Windows, where
ZeroMQ has no Unix sockets, kernels keep TCP.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
from typing import Any

__all__ = ["ipc_kernel_manager"]


def ipc_kernel_manager(base: type | None = None) -> type:
    """A subclass of ``base`` (default: ``jupyter_client``'s ``AsyncKernelManager``, what
    ``nbclient`` uses) whose kernels talk over Unix sockets in their own folder. Lazy: Jupyter
    is heavy."""
    if base is None:
        from jupyter_client.manager import AsyncKernelManager as base  # noqa: N813
    if sys.platform == "win32":  # ZeroMQ has no ipc transport on Windows: TCP as before
        return base

    class IpcKernelManager(base):  # type: ignore[misc, valid-type]
        def __init__(self, **kwargs: Any) -> None:
            # short path: a Unix socket's name must fit in 108 bytes
            self._sockets_dir = tempfile.mkdtemp(prefix="agentlab-k-")
            super().__init__(**{"transport": "ipc", "ip": f"{self._sockets_dir}/kernel", **kwargs})

        def cleanup_connection_file(self) -> None:
            """Called on a full shutdown only (not on restart): the folder goes with it."""
            super().cleanup_connection_file()
            shutil.rmtree(self._sockets_dir, ignore_errors=True)

    IpcKernelManager.__qualname__ = IpcKernelManager.__name__ = f"Ipc{base.__name__}"
    return IpcKernelManager

"""Kernels over Unix sockets (agentlab.exercises.kernels): no TCP port for another process to take."""
import os

import pytest

nbformat = pytest.importorskip("nbformat")


def test_a_notebook_runs_over_unix_sockets_in_a_private_folder_removed_at_shutdown(tmp_path):
    from nbclient import NotebookClient

    from agentlab.exercises.kernels import ipc_kernel_manager
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")])
    client = NotebookClient(nb, kernel_name="python3", kernel_manager_class=ipc_kernel_manager(),
                            resources={"metadata": {"path": str(tmp_path)}})
    seen = {}
    with client.setup_kernel():
        info = client.km.get_connection_info()
        seen["transport"], seen["ip"] = info["transport"], info["ip"]
        seen["files"] = sorted(os.listdir(os.path.dirname(info["ip"])))
        client.execute_cell(nb.cells[0], 0)
    assert nb.cells[0].outputs[0]["text"] == "42\n"
    assert seen["transport"] == "ipc" and os.path.isabs(seen["ip"])
    assert len(seen["ip"]) < 100  # a Unix socket path must fit in 108 bytes
    assert sum(f.startswith("kernel-") for f in seen["files"]) == 5  # shell, iopub, stdin, control, hb
    assert not os.path.exists(os.path.dirname(seen["ip"]))


def test_each_kernel_gets_its_own_folder_and_nbval_uses_them():
    import nbval.kernel
    from jupyter_client.manager import KernelManager

    from agentlab.exercises.kernels import ipc_kernel_manager
    cls = ipc_kernel_manager(KernelManager)
    a, b = cls(), cls()
    try:
        assert a.transport == b.transport == "ipc" and a.ip != b.ip
    finally:
        for km in (a, b):
            km.cleanup_connection_file()
    assert not os.path.exists(os.path.dirname(a.ip))
    nbval_km = nbval.kernel.KernelManager()  # what nbval starts each notebook with (conftest.py)
    try:
        assert nbval_km.transport == "ipc"
    finally:
        nbval_km.cleanup_connection_file()


def test_windows_keeps_tcp(monkeypatch):
    """ZeroMQ has no ipc transport on Windows: the class is jupyter_client's own there."""
    from jupyter_client.manager import AsyncKernelManager

    from agentlab.exercises import kernels
    monkeypatch.setattr(kernels.sys, "platform", "win32")
    assert kernels.ipc_kernel_manager() is AsyncKernelManager

"""Repo-wide pytest setup: what is collected, and tests run offline on the simulator.

Collected notebooks (strict nbval): the chapters ``notebooks/NN_name.ipynb`` and the solved
exercise masters ``notebooks/exercises/solutions/NN_name.ipynb`` only. Student copies
(``notebooks/exercises/NN_name.ipynb``) are meant to fail their checks; ``tests/test_exercises.py``
runs the copies the generator makes and proves every check fails on them. Anything else — a
student's renamed copy (``my_01_backoff.ipynb``, ``01_backoff-Copy1.ipynb``), the exercise work
folder, ``.ipynb_checkpoints`` — is never collected, so a student's work cannot fail ``pytest``.
A notebook named on the command line is always run (``pytest --nbval-lax work/01_backoff.ipynb``).

Kernels inherit this process's environment, so it also switches off Python 3.13's coloured
tracebacks (the stored outputs are plain text). A real key in the environment would send notebooks (run by nbval in kernels that inherit this
process's environment) to a real endpoint. Tests must be reproducible and free, so the key is
removed unless AGENTLAB_LIVE_TESTS=1 asks for live cells.
"""
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent
_NOTEBOOK = re.compile(r"\d\d_[a-z0-9_]+\.ipynb")
_NOTEBOOK_DIRS = (ROOT / "notebooks", ROOT / "notebooks" / "exercises" / "solutions")

# Python 3.13+ colours tracebacks and exception lines; stored notebook outputs are plain text.
os.environ["PYTHON_COLORS"] = "0"

if os.environ.get("AGENTLAB_LIVE_TESTS") != "1":
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENTLAB_MODEL"):
        os.environ.pop(var, None)


def collected_notebook(path: Path) -> bool:
    """True for the notebooks ``pytest`` runs: chapters and solved masters (see module doc)."""
    return path.parent in _NOTEBOOK_DIRS and _NOTEBOOK.fullmatch(path.name) is not None


def pytest_ignore_collect(collection_path: Path, config):
    if collection_path.name == ".ipynb_checkpoints":
        return True
    if collection_path.suffix == ".ipynb" and not collected_notebook(collection_path):
        return True
    return None


def pytest_configure(config):
    """nbval starts each notebook's kernel with ``jupyter_client``'s ``KernelManager`` over TCP;
    with four workers starting kernels at once, a kernel lost its port to another process and
    died (``Address already in use``, seen in CI). Give nbval the Unix-socket manager instead
    (``agentlab.exercises.kernels``): same kernel, no ports."""
    try:
        import nbval.kernel
    except ImportError:  # nbval is a [dev] extra
        return
    from agentlab.exercises.kernels import ipc_kernel_manager
    if not nbval.kernel.KernelManager.__name__.startswith("Ipc"):  # once per process
        nbval.kernel.KernelManager = ipc_kernel_manager(nbval.kernel.KernelManager)

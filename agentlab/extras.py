"""Which parts of agentlab need which optional install, and a one-line error when one is missing.

The base install (``pip install agentlab``, or ``pip install -e .`` in a clone) runs the demo,
``agentlab chat`` and ``serve``, and the package code of chapters 01-12. The rest comes with
extras named after what they serve (``pyproject.toml`` lists their packages):

=============  =================================================================
extra          what it adds
=============  =================================================================
notebooks      the notebooks' plots and widgets (``agentlab.viz``, ``agentlab.widgets``),
               ``agentlab lab``, ``agentlab exercise``
fleet          chapter 13: ``agentlab.fleet``, ``agentlab worker | submit | runs``
experiments    chapter 14: ``agentlab.experiments``, ``agentlab sweep | report``
otel           chapter 12's OpenTelemetry export
dev            all of the above and the test tools (``pytest``)
=============  =================================================================

A module that needs an extra calls ``require("fleet")`` when it is imported: it checks that the
packages can be found (without importing them) and otherwise raises ``MissingExtraError``,
whose message is the one line to act on: ``pip install 'agentlab[fleet]'``.
"""
from __future__ import annotations

import importlib.util
import sys

from .errors import ConfigError

__all__ = ["EXTRAS", "MissingExtraError", "missing", "require"]

#: extra -> (what needs it, the import names it provides)
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "notebooks": ("the notebooks' plots and widgets", ("matplotlib", "ipywidgets", "numpy")),
    "lab": ("JupyterLab (agentlab lab)", ("jupyterlab", "ipykernel")),
    "exercises": ("agentlab exercise (notebooks run in a kernel)", ("nbclient", "nbformat",
                                                                   "ipykernel")),
    "fleet": ("chapter 13 (the fleet)", ("celery", "kombu", "redis")),
    "experiments": ("chapter 14 (experiments)", ("pandas", "pyarrow", "tqdm", "numpy", "scipy")),
    "otel": ("the OpenTelemetry export (chapter 12)", ("opentelemetry.sdk",)),
}
# "lab" and "exercises" are parts of the notebooks extra: the pip command names that one
_PIP_EXTRA = {"lab": "notebooks", "exercises": "notebooks"}


class MissingExtraError(ConfigError, ImportError):
    """An optional part of agentlab is not installed (code ``missing_extra``).

    Also an ``ImportError``, so ``except ImportError`` around an optional import still works.
    ``details``: ``extra`` (the pip extra), ``missing`` (import names), ``pip`` (the command).
    """

    def __init__(self, extra: str, what: str, missing_modules: list[str]) -> None:
        pip_extra = _PIP_EXTRA.get(extra, extra)
        pip = f"pip install 'agentlab[{pip_extra}]'"
        ConfigError.__init__(
            self, "missing_extra", f"{what} needs the [{pip_extra}] extra, which is not "
            f"installed (no {', '.join(missing_modules)}): {pip}  (or pip install -e "
            f"\".[{pip_extra}]\" in a clone)",
            details={"extra": pip_extra, "missing": missing_modules, "pip": pip})
        self.name = missing_modules[0]  # ImportError's attribute: the first missing module


def _found(module: str) -> bool:
    if module in sys.modules:
        return sys.modules[module] is not None  # None: import blocked (as tests simulate)
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a broken __spec__
        return False


def missing(extra: str) -> list[str]:
    """The import names of ``extra`` that cannot be found ([] when it is installed)."""
    return [m for m in EXTRAS[extra][1] if not _found(m)]


def require(extra: str, what: str | None = None) -> None:
    """Raise ``MissingExtraError`` (one line with the pip command) unless ``extra`` is installed."""
    gone = missing(extra)
    if gone:
        raise MissingExtraError(extra, what or EXTRAS[extra][0], gone)

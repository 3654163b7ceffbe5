"""``agentlab lab``: open the notebooks in JupyterLab, with widget state saved on every save.

JupyterLab leaves *Save Widget State Automatically* off by default, and a notebook saved that
way reopens with "Error displaying widget: model not found". A wheel install ships agentlab's
settings override (``agentlab.widgets.lab_settings``); an editable install (``pip install -e``)
cannot, so this command writes it into the environment the first time, says so, and then starts
JupyterLab on ``notebooks/`` (or the path given). Anything after ``--`` goes to JupyterLab
(``agentlab lab -- --no-browser``): ``agentlab.cli.main`` splits it off before argparse, which
would otherwise take ``--no-browser`` for the folder. As root (a container) Jupyter refuses to
start without ``--allow-root``, so it is added when the effective user id is 0.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from ..widgets.lab_settings import install_settings, is_installed

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    lab = sub.add_parser("lab", help="open the notebooks in JupyterLab (widget state saved)",
                         usage="agentlab lab [-h] [path] [-- JUPYTER_ARGS ...]",
                         description=__doc__.split("\n\n")[0].split(": ", 1)[1],
                         epilog="Everything after -- goes to jupyter lab, e.g. "
                         "`agentlab lab -- --no-browser`. Run as root (a container), it passes "
                         "--allow-root, which Jupyter requires there.")
    lab.add_argument("path", nargs="?", help="folder or notebook (default: notebooks/ if here)")
    lab.set_defaults(func=run, passthrough=[])


def run(args: argparse.Namespace) -> int:
    """Write the widget-state setting if needed, then exec ``python -m jupyterlab``."""
    if importlib.util.find_spec("jupyterlab") is None:
        print("agentlab lab: JupyterLab is not installed here; run: pip install -e \".[notebooks]\"",
              file=sys.stderr)
        return 2
    if not is_installed():
        path = install_settings()
        print(f"agentlab lab: JupyterLab will save widget state with each notebook "
              f"(setting written to {path})", flush=True)
    target = args.path or ("notebooks" if Path("notebooks").is_dir() else ".")
    extra = list(args.passthrough)
    if os.geteuid() == 0 and "--allow-root" not in extra:  # Jupyter refuses root without it
        extra.append("--allow-root")
    os.execvp(sys.executable, [sys.executable, "-m", "jupyterlab", target, *extra])
    return 0  # not reached: exec replaces this process

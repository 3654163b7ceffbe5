"""``agentlab lab``: open the notebooks in JupyterLab, with widget state saved on every save.

JupyterLab leaves *Save Widget State Automatically* off by default, and a notebook saved that
way reopens with "Error displaying widget: model not found". A wheel install ships agentlab's
settings override (``agentlab.widgets.lab_settings``); an editable install (``pip install -e``)
cannot, so this command writes it into the environment the first time, says so, and then starts
JupyterLab on ``notebooks/`` (or the path given). Anything after ``--`` goes to JupyterLab.
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
                         description=__doc__.split("\n\n")[0].split(": ", 1)[1])
    lab.add_argument("path", nargs="?", help="folder or notebook (default: notebooks/ if here)")
    lab.add_argument("jupyter_args", nargs=argparse.REMAINDER,
                     help="after --: arguments for jupyter lab (e.g. -- --no-browser)")
    lab.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("jupyterlab") is None:
        print("agentlab lab: JupyterLab is not installed here; run: pip install -e \".[notebooks]\"",
              file=sys.stderr)
        return 2
    if not is_installed():
        path = install_settings()
        print(f"agentlab lab: JupyterLab will save widget state with each notebook "
              f"(setting written to {path})", flush=True)
    target = args.path or ("notebooks" if Path("notebooks").is_dir() else ".")
    extra = [a for a in (args.jupyter_args or []) if a != "--"]
    os.execvp(sys.executable, [sys.executable, "-m", "jupyterlab", target, *extra])
    return 0  # not reached: exec replaces this process

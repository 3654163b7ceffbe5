"""``agentlab demo``: the research agent of chapter 08, offline on the simulator unless a key is set."""
from __future__ import annotations

import argparse

from ..research import run_demo

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    demo = sub.add_parser("demo", help="run the research agent (offline unless OPENAI_API_KEY is set)")
    demo.add_argument("--output-dir", default="output", help="where the report is written")
    demo.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_demo(print, output_dir=args.output_dir)
    return 0 if result.state.name == "FINISHED" else 1

"""The ``agentlab`` command.

    agentlab demo              the research agent of chapter 08, offline on the simulator
    agentlab chat "question"   one chat call and one streamed call (chapter 01)
    agentlab serve --port 8000 the simulator as an OpenAI-compatible HTTP server
    agentlab sweep SPEC.toml   an experiment: a grid of settings x seeds x tasks (chapter 14)
    agentlab report DIR        a markdown report of a sweep

With ``OPENAI_API_KEY`` set (and optionally ``OPENAI_BASE_URL``, ``AGENTLAB_MODEL``) ``demo`` and
``chat`` talk to that endpoint instead of the simulator.
"""
from __future__ import annotations

import argparse
import sys

from . import chat, demo, report, serve, sweep

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (demo, chat, serve, sweep, report):  # one module per subcommand
        command.add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

"""The ``agentlab`` command: one module per subcommand, loaded only when it is used.

``agentlab --help`` lists ``COMMANDS`` without importing any of them, so it starts in a
fraction of a second (no openai, tiktoken or matplotlib). A subcommand module has
``add_parser(subparsers)`` (creating its parser, with ``set_defaults(func=run)``) and
``run(args) -> int``. Adding a subcommand is one line in ``COMMANDS`` plus its module.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import os
import platform
import sys

from .. import __version__

__all__ = ["main", "entry", "COMMANDS"]

#: Commands whose arguments after ``--`` are handed on untouched (as ``args.passthrough``).
PASSTHROUGH = {"lab"}

#: name -> one-line help; the module is ``agentlab.cli.<name>``. Keep this the only list.
COMMANDS: dict[str, str] = {
    "demo": "run the research agent of chapter 08 and watch it work, turn by turn",
    "chat": "talk with the agent in the terminal (tools on; /reset, /exit)",
    "serve": "serve the simulator as an OpenAI-compatible HTTP server",
    "lab": "open the notebooks in JupyterLab, with widget state saved on every save",
    "exercise": "list, start, check and reset the exercises; grade a class's notebooks",
    "sweep": "run an experiment: a grid of settings x seeds x tasks (chapter 14)",
    "report": "write a markdown report (tables and plots) of a sweep's results",
    "worker": "start a fleet worker (Celery + Redis, chapter 13) that executes agent runs",
    "submit": "submit a task to the fleet as a run (--wait: until it ends)",
    "runs": "list, show, approve, reject or cancel the fleet's runs; a run's history",
}

EPILOG = """\
Offline by default: with neither OPENAI_API_KEY nor OPENAI_BASE_URL the model is the
built-in simulator. OPENAI_API_KEY selects the OpenAI API (or OPENAI_BASE_URL's endpoint);
OPENAI_BASE_URL alone selects a keyless local server (Ollama, vLLM, llama.cpp);
AGENTLAB_MODEL names the model.
Run `agentlab COMMAND --help` for a command's options."""


def _chosen(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is not an option)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The parser, with the full options of the chosen subcommand only."""
    parser = argparse.ArgumentParser(
        prog="agentlab", description="agentlab: build an LLM agent runtime from scratch, "
        "one chapter at a time.", epilog=EPILOG, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"agentlab {__version__} (Python {platform.python_version()})")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    chosen = _chosen(argv)
    for name, help_line in COMMANDS.items():
        if name == chosen:
            importlib.import_module(f"{__name__}.{name}").add_parser(sub)
        else:  # listed for --help; its module is not imported
            sub.add_parser(name, help=help_line)
        # `agentlab NAME --help` opens with what the command is for, even when the module's
        # own parser gave none: the line from COMMANDS, capitalised as a sentence.
        chosen_parser = sub.choices[name]
        if not chosen_parser.description:
            chosen_parser.description = help_line[0].upper() + help_line[1:] + "."
    # `agentlab --help` lists every command with COMMANDS' line, whichever module was loaded.
    for action in sub._choices_actions:
        action.help = COMMANDS.get(action.dest, action.help)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``agentlab`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser(argv)
        rest: list[str] = []
        if _chosen(argv) in PASSTHROUGH and "--" in argv:  # argparse would eat the "--"
            argv, rest = argv[:argv.index("--")], argv[argv.index("--") + 1:]
        args = parser.parse_args(argv)
        if rest:
            args.passthrough = rest
        if getattr(args, "func", None) is None:  # plain `agentlab`: say what there is
            parser.print_help()
            return 0
        return args.func(args)
    except KeyboardInterrupt:  # one line, never a traceback
        print(f"\nagentlab {_chosen(argv) or ''}: interrupted (Ctrl-C)".replace(" :", ":"),
              file=sys.stderr)
        return 130


def entry() -> None:
    """The console script: ``main()``, then exit without collecting every object.

    At exit CPython runs a last garbage collection over everything still alive; after a
    demo that is the openai SDK's thousands of pydantic classes and a 200,000-entry token
    table, about 0.2-0.3 s measured here. Freezing them first skips that work (nothing is
    left to clean up: files are closed and output is flushed as usual).
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # `agentlab runs list | head`: the reader left. Exit quietly with 141 (128 + SIGPIPE)
        # as Unix tools do; point stdout at /dev/null so the flush at exit cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(141)
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    entry()

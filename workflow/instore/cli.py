"""The ``instore`` command: one subcommand per concern, each registered by its own module."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from instore import __version__
from instore.errors import InstoreError

# Each module exposes ``register(subparsers)`` that adds its subcommand(s) and sets
# ``func`` on the parser; ``func(args) -> int`` is the exit status. Keyed by subcommand, so
# `instore read` (started once per measured job) imports only the payload, not Dask and
# jsonschema: about two seconds of start-up per job on this machine.
COMMANDS: dict[str, str] = {
    "generate": "instore.generate.command",
    "inspect": "instore.inspect.command",
    "read": "instore.payload.command",
    "warm": "instore.payload.warm",
    "container": "instore.container.command",
    "sweep": "instore.sweep.command",
    "plan": "instore.sweep.dryrun_cmd",
    "summarize": "instore.summary.command",
    "compare": "instore.summary.compare_cmd",
    "report": "instore.report.command",
    "lab": "instore.report.command",
    "site": "instore.site.command",
    "record": "instore.replay.command",
    "replay": "instore.replay.command",
    "predict": "instore.predict.command",
}
COMMAND_MODULES: tuple[str, ...] = tuple(dict.fromkeys(COMMANDS.values()))
# What a job of each command a warm payload forks runs (its command module and what that loads
# lazily), which the payload imports before forking rather than on a job's clock.
JOB_MODULES: dict[str, tuple[str, ...]] = {
    "read": (COMMANDS["read"],),
    "replay": ("instore.replay.closed_loop", COMMANDS["replay"]),
}
# docs/gen/reference.py writes this page from these parsers, a section per command headed by
# its name ("instore site up" -> #instore-site-up); every --help ends naming its section.
COMMANDS_PAGE = "docs/commands.md"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for every subcommand, or only for ``command`` when it is a known one."""
    parser = argparse.ArgumentParser(
        prog="instore",
        description="Generate ROOT test files, emulate or probe a storage site, and measure "
        "how analysis jobs read from it.",
        epilog=f"Documentation: docs/index.md; every command: {COMMANDS_PAGE}",
    )
    parser.add_argument("--version", action="version", version=f"instore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = [COMMANDS[command]] if command in COMMANDS else COMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(subparsers)
    _name_doc_sections(parser)
    return parser


def _name_doc_sections(parser: argparse.ArgumentParser) -> None:
    """End every subcommand's --help (nested ones too) with its section of the commands page."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                link = f"Documentation: {COMMANDS_PAGE}#{sub.prog.replace(' ', '-')}"
                sub.epilog = f"{sub.epilog}\n\n{link}" if sub.epilog else link
                _name_doc_sections(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    args.entry = main  # what a warm payload runs its jobs' command lines through
    args.job_modules = JOB_MODULES  # and what those import
    try:
        return int(args.func(args) or 0)
    except InstoreError as err:
        print(f"instore {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"instore {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

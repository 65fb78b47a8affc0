"""The ``instore`` command: one subcommand per concern, each registered by its own module."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from instore import __version__
from instore.errors import InstoreError

# Each module exposes ``register(subparsers)`` that adds its subcommand(s) and sets
# ``func`` on the parser; ``func(args) -> int`` is the exit status.
COMMAND_MODULES: tuple[str, ...] = (
    "instore.generate.command",
    "instore.inspect.command",
    "instore.payload.command",
    "instore.container.command",
    "instore.sweep.command",
    "instore.summary.command",
    "instore.report.command",
    "instore.site.command",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="instore",
        description="Generate ROOT test files, emulate or probe a storage site, and measure "
        "how analysis jobs read from it.",
    )
    parser.add_argument("--version", action="version", version=f"instore {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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

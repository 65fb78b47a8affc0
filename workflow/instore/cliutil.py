"""Small argparse helpers shared by the subcommands."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Sequence

# Marks the handler ``log_progress`` installed, so that the next command's replaces it
_PROGRESS_HANDLER = "instore_progress"


def log_progress(prefix: str) -> None:
    """Send instore's INFO lines (a command's progress) to the current stderr, each after
    ``prefix``. Set on the package's logger, not the root one: a process that runs several
    commands (a test, a notebook) gets each command's own prefix on its own stderr, and a
    caller's own logging set-up is left as it was."""
    logger = logging.getLogger("instore")
    for handler in [h for h in logger.handlers if h.get_name() == _PROGRESS_HANDLER]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler()  # sys.stderr as it is now
    handler.set_name(_PROGRESS_HANDLER)
    handler.setFormatter(logging.Formatter(prefix + "%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def comma_choices(
    allowed: Sequence[str], what: str, all_word: str | None = None
) -> Callable[[str], list[str]]:
    """An argparse type for "a,b,c" where every item must be one of ``allowed``."""

    def parse(text: str) -> list[str]:
        if all_word is not None and text == all_word:
            return list(allowed)
        names = [x.strip() for x in text.split(",") if x.strip()]
        unknown = [x for x in names if x not in allowed]
        if unknown or not names:
            also = f" or {all_word}" if all_word else ""
            raise argparse.ArgumentTypeError(
                f"unknown {what}(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(allowed)}{also}"
            )
        return names

    return parse

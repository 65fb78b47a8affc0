"""Small argparse helpers shared by the subcommands."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence


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

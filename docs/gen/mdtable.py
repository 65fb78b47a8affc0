"""A Markdown table, as every generated page writes one (docs/gen/*.py import it)."""

from __future__ import annotations


def table(head: list[str], rows: list[list[str]]) -> str:
    """``head`` and ``rows`` as a Markdown table, followed by a blank line."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n\n"

"""One error type whose message is one line: what went wrong, and the fix."""

from __future__ import annotations


class InstoreError(Exception):
    """A user-facing failure. ``str()`` is a single line naming the problem and the fix."""

    def __init__(self, problem: str, fix: str | None = None) -> None:
        self.problem = problem.strip().replace("\n", " ")
        self.fix = fix.strip().replace("\n", " ") if fix else None
        super().__init__(self.problem)

    def __str__(self) -> str:
        return f"{self.problem} -- {self.fix}" if self.fix else self.problem

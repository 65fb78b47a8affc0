"""Synthetic analysis CPU: spend a given amount of this thread's CPU time."""

from __future__ import annotations

import time


def burn(microseconds: float) -> None:
    """Busy-loop until this thread has used ``microseconds`` of CPU (not wall) time."""
    if microseconds <= 0:
        return
    end = time.thread_time() + microseconds * 1e-6
    x = 0.0
    while time.thread_time() < end:
        for i in range(64):
            x += i * 0.5

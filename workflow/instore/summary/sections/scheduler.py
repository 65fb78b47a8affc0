"""The scheduler section: the emulated disk's I/O scheduler under concurrent replays
(a page of many clients at once, as the load section's)."""

from __future__ import annotations

from instore.summary.sections.load import under_load

NAME = "scheduler"

SECTION = under_load(
    NAME,
    "The disk's I/O scheduler under load",
    (
        "Scheduler: the emulated spindle's I/O scheduler (none, mq-deadline, bfq, kyber) under 16 "
        'and 64 concurrent replays. The seeds found "cfq = total meltdown" and noop best on 2010 '
        "kernels."
    ),
)

"""The filesystem section: the emulated disk formatted ext4 or xfs under concurrent replays
(a page of many clients at once, as the load section's)."""

from __future__ import annotations

from instore.summary.sections.load import under_load

NAME = "filesystem"

SECTION = under_load(
    NAME,
    "The disk's file system under load: ext4 and xfs",
    (
        "Filesystem: the emulated spindle formatted ext4 or xfs (the site rebuilt on a new disk for"
        " each) under 16 and 64 concurrent replays. The seeds compared xfs against ext4 on their "
        "disk servers."
    ),
)

"""The scale section: the seeds' effects on NanoAOD-like files of 16 MB to 1 GB. It gives no
recommendation of its own: the format advice reads its largest file set
(``instore.summary.sections.format``)."""

from __future__ import annotations

from instore.summary.sections.base import Section, Statistics

NAME = "scale"

SECTION = Section(
    NAME,
    "File size: NanoAOD-like files from 16 MB to 1 GB",
    (
        "Scale: the seeds' effects (ordering, TTreeCache, RNTuple's cluster cache, read "
        "amplification) on NanoAOD-like files of 16 MB to 1 GB, read with the Analysis Grand "
        "Challenge's branch sets."
    ),
    Statistics({"layout": "layout", "cache": "cache", "wall_s": "wall time (s)",
                "file_mb": "file size (MB)",
                "disk_amplification": "disk bytes / needed (median)",
                "read_calls": "read calls (median)"}),
    figures={
        "scale_effects": "fig-scale-effects",
        "scale_table": "fig-scale-table",
        "scale_points": "fig-scale-points",
    },
    page=("scale_effects", "scale_table"),
)  # fmt: skip

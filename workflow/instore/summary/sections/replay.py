"""The replay section: real analyses recorded once and replayed closed-loop on each site; no
recommendation (the What-if page predicts them, ``instore.report.whatif``)."""

from __future__ import annotations

from instore.summary.sections.base import Section, Statistics

NAME = "replay"

SECTION = Section(
    NAME,
    "Real analyses, recorded once and replayed here",
    (
        "Replay: real analyses (an AGC-style ttbar selection with RDataFrame, and the same with "
        "uproot and awkward and with coffea), recorded once with XRootD's recorder on fast storage "
        "and replayed closed-loop on this site: each replay's wall time is the analysis's wall time"
        " here, and its predicted CPU efficiency the recorded CPU time over it."
    ),
    Statistics({"trace": "trace", "protocol": "protocol", "cache_state": "XCache",
                "wall_s": "wall time here (s)", "recorded_wall_s": "wall time recorded (s)",
                "cpu_s": "CPU time recorded (s)",
                "predicted_cpu_efficiency": "predicted CPU efficiency here",
                "recorded_cpu_efficiency": "CPU efficiency recorded",
                "mb_read": "MB read (median)", "read_calls": "read calls (median)",
                "read_latency_p50_ms": "read latency p50 (ms, median replay)",
                "read_latency_p95_ms": "read latency p95 (ms, median replay)",
                "replays": "replays"},
               percent=("predicted_cpu_efficiency", "recorded_cpu_efficiency")),
    figures={
        "replay_efficiency": "fig-replay-efficiency",
        "replay_table": "fig-replay-table",
        "replay_analyses_io": "fig-replay-analyses-io",
        "replay_analyses_efficiency": "fig-replay-analyses-efficiency",
        "replay_analyses_efficiency_figure": "fig-replay-analyses-efficiency-figure",
    },
    page=("replay_efficiency", "replay_table", "replay_analyses"),
)  # fmt: skip

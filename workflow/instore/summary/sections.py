"""The study's sections, one registry: each section's title, the statistics its page tabulates
per point, the figures on its page (the anchors ``summary.figures`` keeps) and the
recommendation its points support, read by the summary (``recommend``), the report (titles,
tables, links), the notebooks and the generated study-file reference. The names and their
order are the vocabulary's (``instore.vocabulary.SECTIONS``: the study file, the sweep and
the records use them); this registry adds what the summary and the report say about each.

It lives in the summary, not the study: a recommendation is a summary function, and the study
(which the summary reads) must not import the summary back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pandas as pd

from instore.summary import recommend as advice
from instore.summary.advice import EFFICIENCY_FLOOR, Recommendation
from instore.summary.figures import FIGURES
from instore.vocabulary import SECTIONS as NAMES

Advice = Callable[[pd.DataFrame, float], Recommendation | None]


@dataclass(frozen=True)
class Statistics:
    """What a section's page tabulates per point, in order: columns of the summary's points (or
    of the page's own per-point frame, for pages built from records) under their words. A
    figure with an interval is shown as ``median [lo, hi]`` with what it rests on
    (``report.intervals.table``); ``percent``: columns shown as percentages; ``optional``:
    columns left out where no point fills them."""

    columns: Mapping[str, str]
    percent: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def shown(self, frame: pd.DataFrame, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
        """The columns ``frame`` fills (an optional one only where some point has it)."""
        return {c: w for c, w in self.columns.items() if c not in leave_out
                and (c not in self.optional or (c in frame and frame[c].notna().any()))}  # fmt: skip


@dataclass(frozen=True)
class Section:
    """One section of the study: its name, its page's title, the statistics its page tabulates
    per point, the recommendation its points support (None: none) and that recommendation's
    place among the overview's."""

    name: str
    title: str
    statistics: Statistics = field(default_factory=lambda: Statistics({}))
    advice: Advice | None = None
    advice_rank: int | None = None  # the overview lists recommendations by this

    @property
    def figures(self) -> tuple[str, ...]:
        """The figures on the section's page (keys of ``summary.figures.FIGURES``)."""
        return tuple(key for key, (page, _) in FIGURES.items() if page == self.name)


def _stats_only(fn: Callable[[pd.DataFrame], Recommendation | None]) -> Advice:
    """A recommendation that takes no efficiency floor."""
    return lambda stats, _floor: fn(stats)


# Words shared by several sections' tables.
_JOBS = {"jobs_ok": "jobs", "jobs_failed": "failed"}
_WALL = {"wall_s_median": "wall time (s)"}
_EFFICIENCY = {"cpu_efficiency_median": "CPU efficiency"}
_MB_S = {"mb_per_s_median": "MB/s", "mb_per_s_of_limit": "MB/s, share of calibrated"}
_READS = {"read_calls_median": "read calls (median)", "bytes_read_median": "bytes read (median)"}
# The pages of many clients at once (load, scheduler, filesystem) share one table; traces
# without events, runs without a fixed time and records without the counter leave columns out.
_LOAD = Statistics(
    {"clients": "clients", "repetitions": "repetitions",
     "aggregate_mb_per_s": "MB/s, all clients", "aggregate_events_per_s": "events/s, all clients",
     "fixed_time_s": "fixed time (s)",
     "events_in_fixed_time": "events in the fixed time, all clients",
     "cpu_efficiency_median": "predicted CPU efficiency (median client)",
     "cpu_efficiency_worst": "predicted CPU efficiency (worst client)",
     "read_p50_ms": "read latency p50 (ms, median client)",
     "read_p95_ms": "read latency p95 (ms, median client)",
     "read_p99_ms": "read latency p99 (ms, worst client)",
     "open_p50_ms": "open time p50 (ms)", "open_p95_ms": "open time p95 (ms)",
     "failed": "failed clients"},
    percent=("cpu_efficiency_median", "cpu_efficiency_worst"),
    optional=("aggregate_events_per_s", "fixed_time_s", "events_in_fixed_time"),
)  # fmt: skip

REGISTRY: dict[str, Section] = {
    s.name: s
    for s in (
        Section(
            "layout", "File layout",
            Statistics({"layout": "layout", "cache": "cache", "protocol": "protocol", **_WALL,
                        **_EFFICIENCY, "read_calls_median": "read calls (median)", **_JOBS},
                       percent=("cpu_efficiency_median",)),
            _stats_only(advice.layout), 2,
        ),
        Section(
            "cache", "TTreeCache size",
            Statistics({"layout": "layout", "protocol": "protocol", "cache": "cache",
                        "cache_bytes_effective_median": "cache bytes (median)", **_READS, **_WALL,
                        **_EFFICIENCY, "read_rate_of_limit": "read rate, share of calibrated IOPS"},
                       percent=("cpu_efficiency_median", "read_rate_of_limit")),
            _stats_only(advice.cache), 1,
        ),
        Section(
            "protocols", "Protocols",
            Statistics({"protocol": "protocol", "engine": "engine", "layout": "layout",
                        **_EFFICIENCY, **_MB_S, **_JOBS},
                       percent=("cpu_efficiency_median", "mb_per_s_of_limit")),
            _stats_only(advice.protocols), 0,
        ),
        Section(
            "readahead", "Readahead and buffer size",
            Statistics({"branches": "branches", "readahead_kb": "readahead (KB)",
                        "block_readahead_kb": "block readahead (KB)", **_MB_S, **_WALL,
                        "bytes_wasted_median": "bytes read, not needed (median)",
                        "read_amplification_median": "client bytes / needed (median)",
                        "disk_amplification_median": "disk bytes / needed (median)"},
                       percent=("mb_per_s_of_limit",)),
            _stats_only(advice.readahead), 3,
        ),
        Section(
            "jobfill", "Jobs per node",
            Statistics({"fill": "jobs per node", "threads": "threads per job",
                        "mt_mode": "threads used by", "cores": "cores asked (jobs x threads)",
                        "cpu_us": "CPU per event (us)", "cache": "cache", "layout": "layout",
                        "protocol": "protocol", "fixed_time_s": "fixed time (s)",
                        "cpu_efficiency_median": "CPU efficiency per job",
                        "event_rate_hz_median": "events/s per job",
                        "event_rate_of_limit": "events/s per job, share of calibrated",
                        "aggregate_event_rate_hz": "events/s, all jobs", **_WALL},
                       percent=("cpu_efficiency_median", "event_rate_of_limit")),
            advice.jobfill, 4,
        ),
        Section(
            "format", "File format: TTree and RNTuple",
            Statistics({"format": "format", "layout": "layout", "cache_state": "cache",
                        "protocol": "protocol", "engine": "engine", **_WALL,
                        "mb_per_s_median": "MB/s", **_EFFICIENCY,
                        "mb_per_s_of_limit": "MB/s, share of calibrated", **_READS, **_JOBS},
                       percent=("cpu_efficiency_median", "mb_per_s_of_limit")),
            _stats_only(advice.format_advice), 5,
        ),
        Section(
            "caching", "Site cache and round-trip time",
            Statistics({"reads": "reads", "method": "method", "rtt_ms": "RTT (ms)",
                        "rtt_ms_measured_median": "RTT measured (ms, median)", **_WALL,
                        **_EFFICIENCY, "bytes_read_median": "bytes read per job (median)",
                        "link_bytes_read_median": "bytes over the link (median)",
                        "jobs_ok": "jobs"},
                       percent=("cpu_efficiency_median",)),
            advice.caching, 6,
        ),
        Section(
            "scale", "File size: NanoAOD-like files from 16 MB to 1 GB",
            Statistics({"layout": "layout", "cache": "cache", "wall_s": "wall time (s)",
                        "file_mb": "file size (MB)",
                        "disk_amplification": "disk bytes / needed (median)",
                        "read_calls": "read calls (median)"}),
        ),
        Section(
            "replay", "Real analyses, recorded once and replayed here",
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
        ),
        Section("load", "Many clients at once: which resource gives out first", _LOAD),
        Section("scheduler", "The disk's I/O scheduler under load", _LOAD),
        Section("filesystem", "The disk's file system under load: ext4 and xfs", _LOAD),
    )
}  # fmt: skip
assert tuple(REGISTRY) == NAMES, "one registry entry per section of instore.vocabulary, in order"


def statistics(section: str) -> Statistics:
    """What the section's page tabulates per point."""
    return REGISTRY[section].statistics


def title(section: str) -> str:
    """The section's title (a name that is no section: the name itself)."""
    found = REGISTRY.get(section)
    return found.title if found else section


def recommend(stats: pd.DataFrame, floor: float = EFFICIENCY_FLOOR) -> list[Recommendation]:
    """Every recommendation the site's results support, in the overview's order."""
    advising = sorted((s for s in REGISTRY.values() if s.advice is not None),
                      key=lambda s: s.advice_rank or 0)  # fmt: skip
    found = [s.advice(stats, floor) for s in advising if s.advice is not None]
    return [r for r in found if r is not None]

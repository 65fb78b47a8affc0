"""The run record is defined once: its parts flatten into the columns readers know, and every
field of Point is a knob that keys and groups points (none silently merged away)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import pytest
from instore.record import (
    ContainerRun,
    JobFate,
    JobOutcome,
    JobResult,
    Measurement,
    PointInfo,
    Provenance,
    SiteInfo,
    row,
)
from instore.study.grid import KNOBS, NOT_KNOBS, Point
from instore.summary import point_stats
from instore.summary.stats import GROUP

FILES = {"size_mb": 1, "replicas": 1, "seed": 1}
# Every column a sweep row has: reports, notebooks and tests read these names.
COLUMNS = {
    # the payload's (instore read)
    "record_version", "url", "start_time", "engine", "cache_bytes", "readahead_bytes",
    "stage_in", "cold", "fixed_time_s", "pattern_branches", "pattern_entry_fraction",
    "pattern_entry_mode", "pattern_cpu_us", "uproot_max_range_gap", "uproot_max_request_bytes",
    "uproot_max_request_ranges", "uproot_step_bytes", "uproot_timeout", "cold_cache_dropped",
    "http_client", "passes", "tree", "file_size", "entries", "branches_total", "branches_read", "events",
    "wall_s", "open_s", "open_cpu_s", "stage_in_s", "user_s", "sys_s", "cpu_efficiency", "cpu_wait_s",
    "event_rate_hz", "bytes_read", "read_calls", "open_read_calls", "vector_reads", "read_size_hist",
    "bytes_needed", "read_amplification", "mb_per_s", "cache_bytes_effective", "rchar_delta",
    "counters", "format", "object_name", "fields_skipped", "fields_skipped_reason", "error",
    "start_lateness_s", "provenance",
    "ready_at", "threads", "mt_mode", "threads_used", "threads_note", "cpu_efficiency_note",
    # the container's
    "runtime", "image_digest", "container_startup_s", "outer_wall_s", "exit_status",
    "launch", "launch_s", "own_names_in_hosts",
    # the job's fate
    "job", "node", "attempts", "status", "attempt_errors", "start_skew_s", "batch_job_id",
    "launch_note",
    # the point's measurement and the site
    "point_key", "jobs", "measured_at", "disk_bytes_read", "repaired_before",
    "link_bytes_read", "rtt_ms_measured", "bandwidth_mbit_applied", "disk_reads",
    "site", "site_kind", "site_profile", "conditions",
    # the point's own fields
    "section", "layout", "protocol", "cache_mb", "readahead_kb", "block_readahead_kb",
    "uproot_gap_kb", "branches", "entry_fraction", "cpu_us", "fill", "nodes", "repetition",
    "cache_state", "rtt_ms", "bandwidth_mbit", "fileset", "trace", "io_scheduler", "filesystem",
    "substitutes",
}  # fmt: skip


def _payload(wall_s: float) -> dict[str, Any]:
    """What `instore read` would print for one job (no ROOT needed)."""
    from instore.payload.runner import ReadOptions

    measured = {f.name: 1 for f in dataclasses.fields(Measurement)}
    measured |= {"tree": "events", "wall_s": wall_s, "read_size_hist": {}, "counters": {}}
    result = JobResult(
        url="/data/ordered-r0.root",
        start_time="2026-01-01T00:00:00.000+00:00",
        knobs=ReadOptions("/data/ordered-r0.root").knobs(),
        measurement=Measurement(**measured),
        provenance=Provenance("h", "Linux 6", "3.11", "6.40", {}, {}, 1),
        passes=1,
    )
    return result.as_dict()


def _rows(point: Point, site: str = "s") -> list[dict[str, Any]]:
    key = point.key(site, FILES)
    info = PointInfo(key, point.jobs, "2026-01-01T00:00:00.000+00:00", None, None)
    where = SiteInfo(site, "real", None, {"site": site})
    rows = []
    for j in range(point.jobs):
        fate = JobFate(j, 0, 1, "ok", [], 0.0, None)
        outcome = JobOutcome(_payload(1.0 + j), ContainerRun("none", None, None, 2.0, 0), fate)
        rows.append(row(outcome, info, where, dataclasses.asdict(point)))
    return rows


def _other(name: str, value: Any) -> Any:
    """A different, valid-looking value for a knob."""
    if value is None:
        return 64
    if isinstance(value, str):
        return f"{value}-other"
    return value + 1


def test_knobs_are_points_fields_but_section_and_repetition() -> None:
    names = [f.name for f in dataclasses.fields(Point)]
    assert list(KNOBS) == [n for n in names if n not in NOT_KNOBS]
    assert set(NOT_KNOBS) <= set(names)
    assert tuple(Point(section="x").knobs()) == KNOBS
    assert set(KNOBS) <= set(GROUP)


@pytest.mark.parametrize("knob", KNOBS)
def test_points_differing_in_one_knob_are_two_points(knob: str) -> None:
    base = Point(section="layout", fill=2)
    other = dataclasses.replace(base, **{knob: _other(knob, getattr(base, knob))})
    assert base.key("s", FILES) != other.key("s", FILES)
    table = pd.DataFrame(_rows(base) + _rows(other))
    stats = point_stats(table)
    assert len(stats) == 2, f"points differing in {knob} were merged"
    assert stats["jobs_ok"].sum() == len(table)


def test_repetitions_of_a_point_are_one_summary_point() -> None:
    base = Point(section="layout")
    again = dataclasses.replace(base, repetition=1)
    assert base.key("s", FILES) != again.key("s", FILES)  # measured apart...
    stats = point_stats(pd.DataFrame(_rows(base) + _rows(again)))
    assert len(stats) == 1 and stats["repetitions"].item() == 2  # ...summarised together


def test_a_row_has_every_parts_fields_under_their_known_names() -> None:
    (first,) = _rows(Point(section="layout"))
    assert set(first) == COLUMNS
    assert first["provenance"]["host"] == "h"
    assert first["conditions"] == {"site": "s"}


def test_the_points_fields_are_what_the_row_says() -> None:
    """The payload records its own knobs too; where names meet, the point's value stands."""
    point = Point(section="layout", engine="uproot")
    fate = JobFate(0, 0, 1, "ok", [], 0.0, None)
    payload = {**_payload(1.0), "engine": "root"}
    outcome = JobOutcome(payload, ContainerRun("none", None, None, 1.0, 0), fate)
    info = PointInfo("k", 1, "t", None, None)
    out = row(outcome, info, SiteInfo("s", "real", None, {}), dataclasses.asdict(point))
    assert out["engine"] == "uproot"


def test_a_failed_payload_keeps_its_error_and_the_sweeps_parts() -> None:
    """A job that printed no record has only the error; the row still says which job it was."""
    fate = JobFate(3, 1, 2, "failed", ["boom", "boom"], 0.1, "42")
    outcome = JobOutcome({"error": "boom"}, ContainerRun("none", None, None, 1.0, 1), fate)
    info = PointInfo("k", 4, "t", 1024, "restarted xrootd")
    out = row(outcome, info, SiteInfo("s", "emulated", "lan", {}), {"section": "layout"})
    assert (out["error"], out["job"], out["status"], out["attempts"]) == ("boom", 3, "failed", 2)
    assert (out["exit_status"], out["disk_bytes_read"], out["batch_job_id"]) == (1, 1024, "42")

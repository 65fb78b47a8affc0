"""The record store: appends survive crashes, incomplete points are not 'done', tables are tidy."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from instore.sweep.store import RecordStore, failed_jobs


def _rec(key: str, job: int, jobs: int, at: str, **extra: object) -> dict:
    return {
        "point_key": key,
        "job": job,
        "jobs": jobs,
        "measured_at": at,
        "section": "layout",
        "provenance": {"host": "h"},
        **extra,
    }


def test_complete_points_are_done_and_partial_ones_are_not(tmp_path: Path) -> None:
    store = RecordStore(tmp_path, "site")
    store.append([_rec("a", 0, 2, "t1"), _rec("a", 1, 2, "t1")])
    store.append([_rec("b", 0, 2, "t1")])  # a point whose second job never reported
    assert store.done_keys() == {"a"}


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    store = RecordStore(tmp_path, "site")
    store.append([_rec("a", 0, 1, "t1")])
    with store.log.open("a") as f:
        f.write('{"point_key": "b", "job": 0, "jo')  # killed mid-write
    assert store.done_keys() == {"a"}
    assert len(store.records()) == 1


def test_latest_complete_measurement_wins(tmp_path: Path) -> None:
    store = RecordStore(tmp_path, "site")
    store.append([_rec("a", 0, 1, "2026-01-01", wall_s=1.0)])
    store.append([_rec("a", 0, 1, "2026-02-01", wall_s=2.0)])
    table = store.table()
    assert len(table) == 1 and table["wall_s"].item() == 2.0


def test_tables_per_section_with_nested_fields_as_json(tmp_path: Path) -> None:
    store = RecordStore(tmp_path, "site")
    store.append([_rec("a", 0, 1, "t"), {**_rec("b", 0, 1, "t"), "section": "cache"}])
    paths = store.write_tables(["layout", "cache", "jobfill"])
    layout = pd.read_parquet(paths["layout"])
    assert list(layout["point_key"]) == ["a"]
    assert json.loads(layout["provenance"].item()) == {"host": "h"}
    assert len(pd.read_parquet(paths["jobfill"])) == 0
    assert not list(tmp_path.glob("**/*.tmp"))


def test_tables_show_only_the_asking_studys_points(tmp_path: Path) -> None:
    """A quick run then a full one on the same site: the log keeps both, the tables show one."""
    store = RecordStore(tmp_path, "site")
    store.append([_rec("quick", 0, 1, "t1"), _rec("full", 0, 1, "t2")])
    layout = pd.read_parquet(store.write_tables(["layout"], {"full"})["layout"])
    assert list(layout["point_key"]) == ["full"]
    assert store.done_keys() == {"quick", "full"}


def test_append_after_a_torn_line_keeps_the_new_records(tmp_path: Path) -> None:
    store = RecordStore(tmp_path, "site")
    store.append([_rec("a", 0, 1, "t1")])
    with store.log.open("a") as f:
        f.write('{"point_key": "b", "jo')  # a write cut short by a full disk
    store.append([_rec("c", 0, 1, "t2")])
    assert store.done_keys() == {"a", "c"}


def test_failed_jobs_counts_failures_and_reads_a_section_measured_nowhere(tmp_path: Path) -> None:
    """A site that can run no point of a section (the WAN site has no posix) gets an empty
    table that the end-of-study summary still reads."""
    empty = RecordStore(tmp_path, "wan").write_tables(["layout"])["layout"]
    assert failed_jobs(empty) == 0
    store = RecordStore(tmp_path, "lan")
    store.append([_rec("a", 0, 2, "t", status="ok"), _rec("a", 1, 2, "t", status="failed")])
    assert failed_jobs(store.write_tables(["layout"])["layout"]) == 1


def test_a_fit_and_its_checks_read_the_studys_current_records_only(tmp_path: Path) -> None:
    """A real site's quick run then its full one (seen 2026-11-28): the model was fitted on both
    runs' payload points and judged on the quick run's replays too, predicted from the full
    run's traces (5 of 16 points, up to 36% off). ``current`` is what the tables hold: the
    latest complete measurement of each point the study asked for, with its nested fields."""
    store = RecordStore(tmp_path, "site")
    store.append([_rec("quick", 0, 1, "t1", wall_s=9.0)])
    store.append([_rec("full", 0, 2, "t1", wall_s=8.0), _rec("full", 1, 2, "t1", wall_s=8.0)])
    assert len(store.current()) == 3  # no table yet: every record, as before
    store.append([_rec("full", 0, 2, "t2", wall_s=1.0), _rec("full", 1, 2, "t2", wall_s=1.0)])
    store.append([_rec("full", 0, 2, "t3", wall_s=5.0)])  # a measurement cut short
    store.write_tables(["layout"], {"full"})
    current = store.current()
    assert [(r["point_key"], r["measured_at"], r["wall_s"]) for r in current] == [
        ("full", "t2", 1.0),
        ("full", "t2", 1.0),
    ]
    assert current[0]["provenance"] == {"host": "h"}

"""`instore sweep --resume-if-current` and `--failed-points-ok`: what the sweep rule relies on
to stay a plain shell command (remeasure records older than their conditions, else resume;
failed points recorded are not a failed job)."""

from __future__ import annotations

import argparse
import datetime as dt
import os
from pathlib import Path

import pytest
from instore.sweep import command
from instore.sweep.options import SweepSummary
from instore.sweep.store import RecordStore, records_older_than

SITE = "lan-hdd"  # a site file of the repository: the flag resolves the site's name from it


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="instore")
    command.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["sweep", *argv])


def measured(results: Path, section: str, at: str) -> None:
    RecordStore(results, SITE).append([{"section": section, "start_time": at, "point_key": "p"}])


def input_at(tmp_path: Path, name: str, iso: str) -> Path:
    path = tmp_path / name
    path.write_text(name)
    stamp = dt.datetime.fromisoformat(iso).timestamp()
    os.utime(path, (stamp, stamp))
    return path


def test_records_older_than_an_input_are_remeasured_newer_ones_resume(tmp_path: Path) -> None:
    results = tmp_path / "results"
    site_file = input_at(tmp_path, "site.yaml", "2025-01-02T00:00:00+00:00")
    assert not records_older_than(results, SITE, ["cache"], [site_file])  # nothing measured
    measured(results, "cache", "2025-01-01T00:00:00.000+00:00")
    measured(results, "layout", "2025-01-03T00:00:00.000+00:00")
    assert records_older_than(results, SITE, ["cache"], [site_file])
    assert not records_older_than(results, SITE, ["layout"], [site_file])
    assert not records_older_than(results, SITE, ["cache"], [])


def test_resume_if_current_forces_only_stale_sections(tmp_path: Path) -> None:
    results = tmp_path / "results"
    calibration = input_at(tmp_path, "calibration.json", "2025-01-02T00:00:00+00:00")
    measured(results, "cache", "2025-01-01T00:00:00.000+00:00")
    measured(results, "layout", "2025-01-03T00:00:00.000+00:00")

    def force(*argv: str) -> bool:
        return command.force_measure(parse("--site", SITE, "--results", str(results), *argv))

    assert force("--sections", "cache", "--resume-if-current", str(calibration), "--no-progress")
    assert not force("--sections", "layout", "--resume-if-current", str(calibration))
    assert not force("--sections", "cache")  # no flag: resume
    assert force("--sections", "layout", "--force")


@pytest.mark.parametrize(("failed", "ok", "status"), [(0, False, 0), (2, False, 1), (2, True, 0)])
def test_failed_points_exit_status(failed: int, ok: bool, status: int) -> None:
    args = parse("--site", SITE, *(["--failed-points-ok"] if ok else []))
    summary = SweepSummary(SITE, measured=3, failed_points=failed)
    assert command.exit_status(summary, args.failed_points_ok) == status

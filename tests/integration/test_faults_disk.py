"""A full results disk: one clear line, nothing already measured is lost, a rerun fills the gap.

A real tmpfs of 1 MiB holds the results; a filler file leaves room for about two points.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from tests.cli import Cli
from tests.integration.conftest import STUDY, sweep_args

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    mnt = tmp_path / "results-disk"
    mnt.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "instore-test-full", str(mnt)], check=True
    )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


# One section is enough: the disk fills after about two of its points. Room for the machine-noise
# log's first block (4 KiB) and two run records (about 6 KiB each, 2 blocks).
ROOM = 24 * 1024
SECTION = "layout"
POINTS = len(STUDY["profiles"]["t"]["sections"][SECTION]["layout"]) * len(
    STUDY["profiles"]["t"]["sections"][SECTION]["cache_mb"]
)


def _sweep(cli: Cli, env: dict[str, Path], results: Path) -> subprocess.CompletedProcess:
    return cli(*sweep_args(env, results, "--sections", SECTION), timeout=600)


def test_full_results_disk(study_env: dict[str, Path], small_disk: Path, cli: Cli) -> None:
    stat = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (stat.f_bavail * stat.f_frsize - ROOM))
    results = small_disk / "results"

    full = _sweep(cli, study_env, results)
    assert full.returncode == 2
    ours = [line for line in full.stderr.splitlines() if line.startswith("instore sweep: error:")]
    assert len(ours) == 1 and "results disk is full" in ours[0] and "rerun" in ours[0], full.stderr
    assert "Traceback" not in full.stderr
    log = results / "local" / "records.jsonl"
    kept = [line for line in log.read_text().splitlines() if line.endswith("}")]
    assert kept, "points measured before the disk filled are kept"

    filler.unlink()
    again = _sweep(cli, study_env, results)
    assert again.returncode == 0, again.stderr
    assert "already measured" in again.stdout and " 0 already measured" not in again.stdout
    tables = pd.concat(pd.read_parquet(p) for p in (results / "local").glob("*.parquet"))
    assert tables["point_key"].nunique() == POINTS
    assert (
        tables.groupby("point_key")["job"].size() == tables.groupby("point_key")["jobs"].first()
    ).all()

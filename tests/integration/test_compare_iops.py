"""`instore compare` on real sweeps: the same tree swept twice on an emulated lan-hdd (under a
test name, a small disk, posix only), the second time with the disk's random-read IOPS lowered
by 20% (150 -> 120, the blkio throttle). The IOPS-bound point (the unordered file, cache off)
comes out slower with intervals that exclude 1; the CPU-bound point (the ordered file, cache
on, 200 us of CPU per event) comes out unchanged, within the noise; a results directory compared with itself has
every point unchanged. Two points of 2 repetitions each: the smallest sweep that shows it.
The two sweeps are the how-to's labelled runs (docs/before-after.md): `--run before` and
`--run after` into one results directory, compared by their labels. Needs root."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.site.emulated.names import SiteNames

from tests.cli import Cli
from tests.integration.conftest import sweep_args
from tests.integration.emulated import site_file, torn_down_after

pytestmark = [
    pytest.mark.integration,
    pytest.mark.quiet,  # two sweeps minutes apart: not one beside the image build
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

SITE = "itest-compare"
NAMES = SiteNames(SITE)
# The CPU-bound point (first: the sweep's unmeasured warm-up job runs the first point) spends
# 2.4 s of CPU on 6,000 events and reads the ordered file through TTreeCache: 22 disk reads,
# 0.15 s at 150 IOPS and 0.18 s at 120, about 1% of its wall, under the noise below.
# The IOPS-bound point reads a fifth of the unordered file's branches with
# TTreeCache off: 308 disk reads per job, 2.1 s at 150 IOPS and 2.6 s at 120 (measured).
# What counts as unchanged: the CPU-bound point's own disk reads move it about 1%, and this
# shared VM varies by several % between two sweeps a minute apart (seen in fresh-clone CI runs:
# its wall 1.03 [1.00, 1.07], its CPU efficiency 0.944 [0.896, 0.996] after the e2e study); the
# lowered IOPS move the IOPS-bound point by about 25%, far beyond.
NOISE = 0.10
SECTIONS = {
    "layout": {"layout": ["ordered"], "cpu_us": [400], "protocol": ["posix"]},
    "cache": {"layout": ["unordered"], "cache_mb": [0], "branches": ["fraction:0.2"],
              "protocol": ["posix"]},
}  # fmt: skip


def lan_hdd(directory: Path, read_iops: int) -> Path:
    """lan-hdd under the test name: a small disk, posix only, ``read_iops`` on its throttle."""
    return site_file(directory, SITE, "lan-hdd", ["posix"], disk_mb=256, read_iops=read_iops)


def study_file(tmp_path: Path) -> Path:
    """The quick profile's kind of files (9 MB, 2 MB clusters), 2 repetitions a point."""
    profile = {"sites": [SITE], "files": {"size_mb": 9, "replicas": 1, "seed": 7, "cluster_mb": 2},
               "repetitions": 2, "timeout_s": 120, "retries": 0, "sections": SECTIONS}  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    return path


@pytest.fixture
def env(tmp_path: Path, small_files: dict[str, Path]) -> Iterator[dict[str, Path]]:
    """The unordered and ordered files; whatever happens, the test site is gone after."""
    with torn_down_after(NAMES, "compare"):
        data = tmp_path / "files"
        data.mkdir()
        for layout in ("unordered", "ordered"):
            shutil.copy(small_files[layout], data / f"{layout}-r0.root")
        yield {"data": data, "study": study_file(tmp_path), "tmp": tmp_path}


def sweep(cli: Cli, env: dict[str, Path], site: Path, label: str) -> Path:
    """A labelled run of the site into the test's results/, as `make study CONFIG=run=...`."""
    results = env["tmp"] / "results"
    proc = cli(*sweep_args(env, results, "--runtime", "none", "--run", label, site=site),
               timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return results / "runs" / label


def compare(cli: Cli, env: dict[str, Path], *args: str) -> str:
    """`instore compare` in the test's directory, where results/runs/<label> are."""
    proc = cli("compare", *args, timeout=120, cwd=env["tmp"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_lowered_iops_slow_the_iops_bound_point_only(env: dict[str, Path], cli: Cli) -> None:
    start = time.perf_counter()
    before = sweep(cli, env, lan_hdd(env["tmp"] / "site-150", 150), "before")
    after = sweep(cli, env, lan_hdd(env["tmp"] / "site-120", 120), "after")
    assert (before / SITE / "records.jsonl").is_file() and (
        after / SITE / "records.jsonl"
    ).is_file()
    swept = time.perf_counter() - start
    out = env["tmp"] / "compare.csv"
    printed = compare(cli, env, "before", "after", "--noise", str(NOISE), "--out", str(out))
    print(printed)
    table = pd.read_csv(out).set_index("section")
    assert list(table["present"]) == ["both", "both"], "the two points, and no other"
    iops = table.loc["cache"]
    assert iops["noise"] < 0.2, f"the sweeps recorded a drift of {iops['noise']:.0%}: too noisy"
    assert iops["change"] == "slower"
    assert 1.1 < iops["wall_s_after_before"] < 1.4, "a 20% lower IOPS limit: about 25% longer"
    for metric in ("wall_s", "event_rate_hz"):  # 24% longer: far beyond the machine's noise
        assert iops[f"{metric}_change"] == "slower", printed
        assert not iops[f"{metric}_lo"] <= 1 <= iops[f"{metric}_hi"], "its interval excludes 1"
    # Its efficiency falls by about 14% when its CPU per event holds, but that CPU is a few
    # tenths of a second, which varies by 20% between two runs on a busy VM (a fresh-clone CI
    # run: 0.95 [0.75, 1.19] of 2 repetitions). What a user relies on: a verdict that follows
    # its interval, never "faster" for a point that waits longer on its disk.
    ratio, lo, hi = (iops[f"cpu_efficiency{s}"] for s in ("_after_before", "_lo", "_hi"))
    within = lo <= 1 <= hi or abs(ratio - 1) <= iops["noise"]
    assert iops["cpu_efficiency_change"] == ("unchanged" if within else "slower"), printed
    cpu = table.loc["layout"]
    assert cpu["change"] == "unchanged"
    counts = printed.splitlines()[1]  # in order of the largest change: either may lead
    assert (
        counts.startswith("2 points in common: ")
        and "1 slower" in counts
        and "1 unchanged" in counts
    )

    itself = compare(cli, env, "before", str(before), "--out", str(env["tmp"] / "self.csv"))
    same = pd.read_csv(env["tmp"] / "self.csv")
    assert (same["change"] == "unchanged").all() and len(same) == 2
    assert (same["wall_s_after_before"] == 1).all()
    assert "2 points in common: 2 unchanged" in itself
    print(f"two sweeps {swept:.1f} s, all {time.perf_counter() - start:.1f} s")

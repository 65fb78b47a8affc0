"""The load ramp on an emulated lan-hdd (one spindle: 150 random-read IOPS) with its site file's
``load: {stop_p95_open_ms}`` set below what many clients at once cause: the ramp runs 1 client,
then 4, 16 and 32 (each client opening its own copy of the quick profile's small file over
XRootD, so their opens queue at the disk), finds the 95th percentile of the opens above the
limit at one of them, and stops there: the 64-client point (and any other above the stop) is
skipped with the reason, the stopping point's records say where and why, and so does the load
page. Needs root."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.report.load import ramp_stops
from instore.site.emulated.names import SiteNames
from instore.site.loadguard import STOP_COLUMN

from tests.cli import Cli
from tests.integration.conftest import sweep_args
from tests.integration.emulated import site_file, torn_down_after

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

SITE = "itest-ramp"
NAMES = SiteNames(SITE)
COPIES = 32  # one file per client up to 32: each open reads its own file from the spindle
FILLS = [1, 4, 16, COPIES, 64]
# The 95th percentile of the opens over XRootD, cold, measured here on the shared 2-core VM
# (2026-11-26, five sweeps, 16 copies): 1 client 32-165 ms (361 ms with a unit-test run beside
# it), 4 clients 60-512 ms, 16 clients 300 ms on a quiet machine and 577-2207 ms on a busy one,
# 64 clients 1017-1410 ms (their opens' reads queue at 150 IOPS; the machine's load moves
# them a lot). The limit sits above every 1-client open seen and below every 64-client one;
# the ramp's 32-client step (between 16's 300 ms and 64's 1017 ms when quiet) is where a quiet
# machine stops, a busy one at 4 or 16. In this form (2026-11-26 19:41): 1 client 47 ms, 4
# clients 148 ms, 16 clients 633 ms: stopped at 16, 32 and 64 skipped; the test took 54 s.
STOP_MS = 400.0


def lan_hdd(directory: Path) -> Path:
    """lan-hdd under the test name, XRootD only, with the stop rule on its opens."""
    path = site_file(directory, SITE, "lan-hdd", ["xrootd"], disk_mb=512, read_iops=150)
    data = yaml.safe_load(path.read_text())
    data["load"] = {"stop_p95_open_ms": STOP_MS}
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def env(tmp_path: Path, small_files: dict[str, Path]) -> Iterator[dict[str, Path]]:
    with torn_down_after(NAMES, "load ramp"):
        data = tmp_path / "files"
        data.mkdir()
        for r in range(COPIES):
            shutil.copy(small_files["ordered"], data / f"ordered-r{r}.root")
        profile = {"sites": [SITE], "files": {"size_mb": 9, "replicas": COPIES, "seed": 7,
                   "cluster_mb": 2}, "repetitions": 1, "timeout_s": 120, "retries": 0,
                   "sections": {"load": {"fill": FILLS, "protocol": ["xrootd"],
                                         "branches": ["fraction:0.2"]}}}  # fmt: skip
        study = tmp_path / "study.yaml"
        study.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
        yield {"data": data, "study": study, "tmp": tmp_path, "site": lan_hdd(tmp_path / "site")}


def test_the_ramp_stops_before_64_clients_when_opens_slow(env: dict[str, Path], cli: Cli) -> None:
    start = time.perf_counter()
    results = env["tmp"] / "results"
    proc = cli(*sweep_args(env, results, "--runtime", "none", "--sections", "load"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(proc.stdout, proc.stderr[-1500:], f"sweep {time.perf_counter() - start:.1f} s")
    load = pd.read_parquet(results / SITE / "load.parquet")
    opens = load.groupby("jobs")["open_s"].quantile(0.95) * 1e3
    print("p95 open (ms) by clients:", opens.round(1).to_dict())
    ran = sorted(int(n) for n in load["jobs"].unique())
    # The contract, on the opens these clients really made: the ramp runs in order and stops
    # after the first point above the limit. Where that is depends on the machine (a quiet
    # one stops at 32, a busy one earlier: one CI run's single 1-client open took 404 ms), so
    # the test checks it against the records rather than naming it; but 64 never runs.
    over = [n for n in ran if opens[n] > STOP_MS]
    assert over, f"opens never slowed past {STOP_MS:g} ms: {opens.round(1).to_dict()}"
    assert ran == FILLS[: len(ran)] and over == [ran[-1]] and ran[-1] < 64, (ran, opens)
    assert (load["status"] == "ok").all(), load["error"].dropna().unique()
    stop = load.loc[load["jobs"] == ran[-1], STOP_COLUMN].unique()
    assert len(stop) == 1 and stop[0].startswith("stopped: p95 open "), stop
    assert stop[0].endswith(f" ms > {STOP_MS:g} ms at {ran[-1]} clients")
    below = load[load["jobs"] < ran[-1]]
    assert STOP_COLUMN not in below or below[STOP_COLUMN].isna().all(), "under the limit there"
    assert f"skipped {len(FILLS) - len(ran)}: {stop[0]}" in proc.stdout
    assert ramp_stops(load) == [stop[0]]  # what the load page says

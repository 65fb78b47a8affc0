"""The load section on an emulated spindle (lan-hdd under a test name): a recorded uproot
analysis replayed by 1 and 16 clients at once, each reading its own byte copy of a NanoAOD-like
file. Every client's record is kept (none lost), each point records what the worker, the XRootD
server, the disk and the link did, and the page's table names a saturated resource. Needs root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.report.load import capacity, points
from instore.site import load_site
from instore.site.emulated import existing, teardown
from instore.site.emulated.names import SiteNames

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

REPO = Path(__file__).resolve().parents[2]
SITE = "itest-load"
NAMES = SiteNames(SITE)
COPIES = 16
FILLS = [1, COPIES]


def _instore(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "instore.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    assert not existing(NAMES), "a previous run left the load test site behind"
    tmp = tmp_path_factory.mktemp("load-section")
    data = tmp / "files"
    done = _instore("generate", "--like", "cms-nanoaod", "--fileset", "copies", "--size-mb", "4",
                    "--layouts", "ordered", "--replica", "0", "--out", str(data))  # fmt: skip
    assert done.returncode == 0, done.stderr
    for k in range(1, COPIES):
        shutil.copy(data / "copies-ordered-r0.root", data / f"copies-ordered-r{k}.root")
    site = yaml.safe_load(load_site("lan-hdd").path.read_text())
    site.update(name=SITE, protocols=["posix", "xrootd"])
    site.pop("stage_in", None)
    site["disk"]["size_mb"] = 256
    site_file = tmp / f"{SITE}.yaml"
    site_file.write_text(yaml.safe_dump(site))
    profile = {
        "sites": [SITE], "files": {"size_mb": 1, "replicas": 1}, "timeout_s": 120, "retries": 0,
        "filesets": {"copies": {"like": "cms-nanoaod", "size_mb": 4, "replicas": COPIES,
                                "identical": True}},
        "traces": {"up": {"analysis": str(REPO / "analyses" / "agc_ttbar_uproot.py"),
                          "fileset": "copies", "site": str(site_file)}},
        "sections": {"load": {"trace": ["up"], "fill": FILLS, "protocol": ["xrootd"]}},
    }  # fmt: skip
    study = tmp / "study.yaml"
    study.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    try:
        yield {"data": data, "site": site_file, "study": study, "tmp": tmp}
    finally:
        teardown(NAMES)
    assert not existing(NAMES)


def test_every_client_is_recorded_with_what_the_storage_side_did(env: dict[str, Path]) -> None:
    done = _instore("record", "--site", str(env["site"]), "--file",
                    str(env["data"] / "copies-ordered-r0.root"), "--out",
                    str(env["data"] / "traces" / "up"), "--", sys.executable,
                    str(REPO / "analyses" / "agc_ttbar_uproot.py"), "--tree", "Events")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = env["tmp"] / "results"
    done = _instore("sweep", "--site", str(env["site"]), "--study", str(env["study"]),
                    "--data", str(env["data"]), "--results", str(results),
                    "--scratch", str(env["tmp"] / "scratch"), "--runtime", "none",
                    "--no-progress", timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows = pd.read_parquet(results / SITE / "load.parquet")
    # no record lost: one row per client at each load, each reading its own copy
    assert sorted(rows.groupby("fill").size().items()) == [(f, f) for f in FILLS]
    assert (rows["status"] == "ok").all(), rows["error"].dropna().unique()
    big = rows[rows["fill"] == COPIES]
    assert big["urls"].nunique() == COPIES
    # what the storage side did, counted by the kernel around the point
    for col in ("host_cpu_busy", "xrootd_cpu_share", "disk_iops", "disk_mb_per_s",
                "link_mbit_per_s", "usage_wall_s"):  # fmt: skip
        assert rows[col].notna().all() and (rows[col] >= 0).all(), col
    assert (big["disk_iops"] > 0).all() and (big["xrootd_cpu_share"] > 0).all()
    assert rows["client_cpu_s"].notna().all()
    table = points(rows)
    assert list(table["clients"]) == FILLS
    assert table["aggregate_mb_per_s"].gt(0).all() and table["failed"].eq(0).all()
    assert table["saturated"].map(bool).all()
    cap = capacity(table)
    assert len(cap) == 1 and cap["clients at >= 80% efficiency"].iloc[0] in (0, 1, COPIES)

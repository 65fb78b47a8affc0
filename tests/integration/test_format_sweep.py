"""A tiny format section swept on an emulated site (lan-ssd under a test name): the ordered
TTree and an RNTuple of the same events, cache off and on, over posix and xrootd with the ROOT
engine. Every point is measured, both formats recorded, nothing fails. Needs root."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.generate import generate_files
from instore.site.emulated.names import SiteNames

from tests.cli import Cli
from tests.conftest import SMALL_EVENTS
from tests.integration.conftest import sweep_args
from tests.integration.emulated import site_file, torn_down_after

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

SITE = "itest-format"
NAMES = SiteNames(SITE)
SECTION = {"layout": ["ordered", "rntuple"], "cache_mb": [0, "default"],
           "protocol": ["posix", "xrootd"], "engine": ["root"]}  # fmt: skip
POINTS = 2 * 2 * 2


def study_file(tmp_path: Path) -> Path:
    profile = {"sites": [SITE], "files": {"size_mb": 9, "replicas": 1, "seed": 7, "cluster_mb": 2},
               "timeout_s": 120, "retries": 1, "sections": {"format": SECTION}}  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    return path


@pytest.fixture
def env(tmp_path: Path, small_files: dict[str, Path]) -> Iterator[dict[str, Path]]:
    """The ordered TTree and an RNTuple of the same events; whatever happens, the site is
    gone after."""
    with torn_down_after(NAMES, "format"):
        data = tmp_path / "files"
        data.mkdir()
        shutil.copy(small_files["ordered"], data / "ordered-r0.root")
        generate_files(data, layouts=["rntuple"], replicas=1, seed=7, n_events=SMALL_EVENTS)
        # lan-ssd under a test name, a small disk, posix and root:// only
        site = site_file(tmp_path, SITE, "lan-ssd", ["posix", "xrootd"], disk_mb=256)
        yield {"data": data, "site": site, "study": study_file(tmp_path),
               "results": tmp_path / "results", "tmp": tmp_path}  # fmt: skip


def test_format_section_records_both_formats_over_posix_and_xrootd(
    env: dict[str, Path], cli: Cli
) -> None:
    proc = cli(*sweep_args(env, env["results"], "--runtime", "none"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    table = pd.read_parquet(env["results"] / SITE / "format.parquet")
    assert len(table) == POINTS, proc.stderr[-2000:]
    assert (table["status"] == "ok").all(), table["error"].dropna().unique()
    assert set(zip(table["layout"], table["format"], strict=True)) == {
        ("ordered", "ttree"), ("rntuple", "rntuple")
    }  # fmt: skip
    assert set(table["protocol"]) == {"posix", "xrootd"}
    assert (table["read_calls"] > 0).all() and (table["bytes_read"] > 0).all()
    assert table["events"].nunique() == 1 and table["events"].iloc[0] == SMALL_EVENTS
    on = table["cache_mb"].isna()  # default: TTreeCache or RNTuple's cluster cache on
    calls = table.assign(on=on).groupby(["layout", "on"])["read_calls"].max()
    assert calls[("ordered", False)] > 10 * calls[("ordered", True)]
    assert calls[("rntuple", False)] > 10 * calls[("rntuple", True)]
    for _, r in table.sort_values(["protocol", "layout", "cache_mb"]).iterrows():
        print(f"{r['protocol']:7} {r['layout']:8} cache={r['cache_mb']}: wall {r['wall_s']:.3f} s, "
              f"{r['read_calls']} reads, {r['bytes_read'] / 1e6:.1f} MB")  # fmt: skip

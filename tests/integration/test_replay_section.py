"""The project's two real analyses (RDataFrame; uproot and awkward) recorded with XRootD's
recorder against an emulated site that `instore record --site` brings up and down, then the
replay section swept on that site: each point replays the trace closed-loop and records the
analysis's predicted CPU efficiency there. Needs root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.site import load_site
from instore.site.emulated import existing, teardown
from instore.site.emulated.names import SiteNames

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

REPO = Path(__file__).resolve().parents[2]
SITE = "itest-replay"
NAMES = SiteNames(SITE)
ANALYSES = {"rdf": REPO / "analyses" / "agc_ttbar_rdf.py",
            "uproot": REPO / "analyses" / "agc_ttbar_uproot.py"}  # fmt: skip


def _instore(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "instore.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


def _site_file(tmp_path: Path) -> Path:
    data = yaml.safe_load(load_site("lan-ssd").path.read_text())
    data.update(name=SITE, protocols=["posix", "xrootd"])
    data.pop("stage_in", None)
    data["disk"]["size_mb"] = 128
    path = tmp_path / f"{SITE}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A 4 MB NanoAOD-like file, the site file and a study replaying the uproot analysis;
    whatever happens, the site is gone after."""
    assert not existing(NAMES), "a previous run left the replay test site behind"
    tmp = tmp_path_factory.mktemp("replay-section")
    data = tmp / "files"
    done = _instore("generate", "--like", "cms-nanoaod", "--fileset", "nano", "--size-mb", "4",
                    "--layouts", "ordered", "--replica", "0", "--out", str(data))  # fmt: skip
    assert done.returncode == 0, done.stderr
    site = _site_file(tmp)
    profile = {
        "sites": [SITE], "files": {"size_mb": 1, "replicas": 1}, "timeout_s": 120, "retries": 0,
        "filesets": {"nano": {"like": "cms-nanoaod", "size_mb": 4, "replicas": 1}},
        "traces": {"up": {"analysis": str(ANALYSES["uproot"]), "fileset": "nano",
                          "site": str(site)}},
        "sections": {"replay": {"trace": ["up"], "protocol": ["posix", "xrootd"]}},
    }  # fmt: skip
    study = tmp / "study.yaml"
    study.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    try:
        yield {"data": data, "site": site, "study": study, "tmp": tmp}
    finally:
        teardown(NAMES)
    assert not existing(NAMES)


def _record(env: dict[str, Path], name: str, out: Path) -> dict:
    done = _instore("record", "--site", str(env["site"]), "--file",
                    str(env["data"] / "nano-ordered-r0.root"), "--results", str(env["tmp"] / "r"),
                    "--out", str(out), "--", sys.executable, str(ANALYSES[name]),
                    "--tree", "Events")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not existing(NAMES), "instore record left the site it brought up"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["trace"] = json.loads((out / "trace.json").read_text())
    return result


def test_both_analyses_select_the_same_events_and_are_recorded(env: dict[str, Path]) -> None:
    rdf = _record(env, "rdf", env["tmp"] / "trace-rdf")
    up = _record(env, "uproot", env["data"] / "traces" / "up")
    assert rdf["events"] == up["events"] > 1000
    assert rdf["cutflow"] == up["cutflow"] and up["cutflow"]["exactly one lepton"] > 0
    assert rdf["4j1b_HT"] == up["4j1b_HT"]
    # each through its own client's recorder: ROOT's XrdCl 5, PyPI xrootd's 6
    assert [Path(p).name for p in rdf["trace"]["recorder"]["loaded"]] == ["libXrdClRecorder-5.so"]
    assert [Path(p).name for p in up["trace"]["recorder"]["loaded"]] == ["libXrdClRecorder-6.so"]
    for trace in (rdf["trace"], up["trace"]):
        assert trace["operations"] > 3 and trace["exit_code"] == 0
        assert trace["recorded_on"] == {"site": SITE, "protocol": "xrootd",
                                        "files": ["nano-ordered-r0.root"]}  # fmt: skip
        assert trace["command"][-1].startswith("root://")


def test_the_replay_section_predicts_the_analysis_efficiency_per_protocol(
    env: dict[str, Path],
) -> None:
    if not (env["data"] / "traces" / "up" / "trace.json").exists():
        pytest.skip("the recording test failed first")
    results = env["tmp"] / "results"
    done = _instore("sweep", "--site", str(env["site"]), "--study", str(env["study"]),
                    "--data", str(env["data"]), "--results", str(results),
                    "--scratch", str(env["tmp"] / "scratch"), "--runtime", "none",
                    "--no-progress")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    table = pd.read_parquet(results / SITE / "replay.parquet")
    assert sorted(table["protocol"]) == ["posix", "xrootd"]
    assert (table["status"] == "ok").all(), table["error"].dropna().unique()
    assert set(table["engine"]) == {"replay"} and set(table["trace"]) == {"up"}
    recorded = [json.loads(r) for r in table["recorded"]]
    # the same requests replayed: the same bytes over both protocols, every request done
    assert table["bytes_read"].nunique() == 1 and table["bytes_read"].iloc[0] > 0
    assert (table["requests_done"] == table["requests_total"]).all()
    # closed loop: the replay takes at least the recorded think time, and its prediction is
    # the recorded CPU over the replay's wall
    assert (table["wall_s"] >= table["think_s"]).all()
    for row, rec in zip(table.itertuples(), recorded, strict=True):
        assert row.predicted_cpu_efficiency == pytest.approx(rec["cpu_s"] / row.wall_s)
    assert table["disk_bytes_read"].min() > 0  # the emulated disk served the posix replay

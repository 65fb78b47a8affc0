"""The coffea analysis recorded as the study records it (`instore record` over root://, Debian's
XRootD started here) and replayed against the same server: it reads through PyPI xrootd's
client (its recorder), states its events as the uproot analysis does and selects the same
events; its replay sends the recorded bytes and requests. A run that fails part-way (its second
file lacks a field NanoAOD has) keeps its trace, its exit code and the events it processed."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.generate import generate_files

from tests.cli import Cli
from tests.integration.grid_site import Server, needs_xrootd, readable_tmp, xrootd_server
from tests.unit.test_agc_coffea import dense_file

pytestmark = pytest.mark.integration
ANALYSES = Path(__file__).resolve().parents[2] / "analyses"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A plain XRootD serving a NanoAOD-like file, a dense ttbar-like one and one that lacks
    Electron_charge; stopped by PID however the tests end."""
    needs_xrootd()
    files = tmp_path_factory.mktemp("coffea-files")
    nano = generate_files(files, ["ordered"], replicas=1, n_events=3000, cluster_mb=0.5,
                          like="cms-nanoaod", fileset="nano")[("ordered", 0)]  # fmt: skip
    with readable_tmp("instore-coffea-xrootd-") as root, xrootd_server(root / "srv") as srv:
        shutil.copy(nano, srv.data / "nano.root")
        dense_file(srv.data / "dense.root", n=2000)
        dense_file(srv.data / "bad.root", n=500, electron_charge=False)
        yield srv


def _record(cli: Cli, server: Server, name: str, out: Path, *files: str) -> tuple[int, dict, dict]:
    urls = [f"root://localhost:{server.port}//{f}" for f in files]
    done = cli("record", "--out", str(out), "--", sys.executable,
               str(ANALYSES / f"agc_ttbar_{name}.py"), *urls, timeout=180)  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return done.returncode, result, json.loads((out / "trace.json").read_text())


def test_recorded_over_root_and_replayed(server: Server, tmp_path: Path, cli: Cli) -> None:
    code, coffea, meta = _record(
        cli, server, "coffea", tmp_path / "coffea", "nano.root", "dense.root"
    )
    assert code == 0 and meta["exit_code"] == 0
    _, up, _ = _record(cli, server, "uproot", tmp_path / "uproot", "nano.root", "dense.root")
    assert coffea["events"] == up["events"] == meta["events"] == 5000
    assert meta["events_from"] == "stdout"
    assert coffea["cutflow"] == up["cutflow"] and coffea["cutflow"]["4j2b"] > 100
    assert coffea["4j2b_trijet_mass"] == up["4j2b_trijet_mass"]
    # through PyPI xrootd's client (fsspec-xrootd), so through its recorder
    assert [Path(p).name for p in meta["recorder"]["loaded"]] == ["libXrdClRecorder-6.so"]

    from instore.replay.trace import load_trace

    summary = load_trace(tmp_path / "coffea").summary()
    assert summary["files"] == 2 and summary["vector_reads"] > 0 and summary["bytes_read"] > 0
    same = f"root://localhost:{server.port}//"
    done = cli("replay", str(tmp_path / "coffea"), "--url-map", f"{same}={same}", timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    rec = json.loads(done.stdout)
    assert rec["error"] is None
    assert (rec["bytes_read"], rec["read_calls"], rec["vector_reads"]) == (
        summary["bytes_read"], summary["read_calls"], summary["vector_reads"])  # fmt: skip
    assert rec["events"] == 5000 and 0 < rec["predicted_cpu_efficiency"] <= 1


def test_failing_part_way_keeps_the_trace_and_what_was_processed(
    server: Server, tmp_path: Path, cli: Cli
) -> None:
    code, partial, meta = _record(cli, server, "coffea", tmp_path / "bad", "dense.root", "bad.root")
    assert code == 1 and meta["exit_code"] == 1
    assert partial["complete"] is False and partial["events"] == meta["events"] == 2000
    assert meta["operations"] > 0  # the reads it made are in the trace

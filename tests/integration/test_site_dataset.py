"""A real site's own dataset against a real XRootD 5.5 server (root:// and XrdHttp, no auth)
serving files written by other tools: a CMS NanoAOD, and a TTree and an RNTuple written by
uproot. `instore site preflight` lists the dataset's directory through XRootD, finds each file
behind every endpoint, opens it and says what it holds; the sweep's plan reads the dataset's
files of a point's layout and skips, with the reason, the points the dataset cannot serve; a
job reads a dataset file over root://. Problems are one line each."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml
from instore.site import dataset as datasets
from instore.site.config import load_site
from instore.site.real import RealLive, site_dataset
from instore.study import load_study
from instore.sweep.options import SweepOptions
from instore.sweep.plan import plan

from tests.cli import Cli
from tests.conftest import write_real_site, write_small_study
from tests.integration.grid_site import (
    Server,
    free_port,
    needs_tools,
    readable_tmp,
    xrootd_server,
)

pytestmark = pytest.mark.integration

NANOAOD = next(
    (p for p in (Path(__file__).parents[1] / "unit" / "data" / "nanoAOD_2015_CMS_Open_Data_ttbar.root",
                 Path("/work/shared/data/nanoAOD_2015_CMS_Open_Data_ttbar.root")) if p.is_file()),
    None,
)  # fmt: skip


def _write_others(directory: Path) -> None:
    """Files instore did not write: the CMS NanoAOD, a TTree and an RNTuple from uproot."""
    import uproot

    directory.mkdir(mode=0o755)
    shutil.copy(NANOAOD, directory / "nano.root")  # type: ignore[arg-type]
    rng = np.random.default_rng(3)
    with uproot.recreate(directory / "flat.root") as f:
        tree = f.mktree("Events", {"x": "f8", "n": "i4"})
        for _ in range(3):  # a basket per branch per call
            tree.extend({"x": rng.normal(size=1000), "n": rng.integers(0, 9, 1000, dtype="i4")})
    with uproot.recreate(directory / "flat-rntuple.root") as f:
        f["Events"] = {"x": rng.normal(size=2000), "n": rng.integers(0, 9, 2000, dtype="i4")}
    for path in directory.iterdir():
        path.chmod(0o644)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """An XRootD server over files written by other tools; stopped by PID and its directory
    removed however the tests end."""
    needs_tools()
    if NANOAOD is None:
        pytest.skip("the CMS NanoAOD test file is not here")
    with readable_tmp("instore-dataset-") as root, xrootd_server(root / "se") as srv:
        _write_others(srv.data / "cms")
        yield srv


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, str]:
    for name in ("BEARER_TOKEN", "BEARER_TOKEN_FILE", "X509_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    env = {"XDG_RUNTIME_DIR": str(tmp_path), "X509_USER_PROXY": str(tmp_path / "no-proxy"),
           "XRD_CONNECTIONRETRY": "1"}  # fmt: skip
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


def site(path: Path, srv: Server, dataset: dict, http_port: int | None = None) -> Path:
    write_real_site(path, {"xrootd": srv.url("root"),
                           "http": f"http://localhost:{http_port or srv.http_port}//{{file}}"})  # fmt: skip
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "dataset": dataset}))
    return path


SECTIONS = {
    "layout": {"layout": ["unordered", "ordered"], "protocol": ["xrootd"]},
    "format": {"layout": ["rntuple"], "protocol": ["xrootd"]},
    "readahead": {"branches": ["all", "agc-2.7"], "protocol": ["http"]},
    "jobfill": {"fill": [3], "protocol": ["xrootd"]},
}


def test_preflight_lists_what_the_dataset_holds_and_the_sweep_plans_from_it(
    server: Server, no_credentials: dict[str, str], tmp_path: Path, cli: Cli
) -> None:
    path = site(tmp_path / "local.yaml", server, {"directory": "/cms/"})
    results = tmp_path / "results"
    proc = cli("site", "preflight", str(path), "--results", str(results))
    print(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stderr
    listed = {line.split(":")[0]: line for line in proc.stdout.splitlines()}
    assert sorted(listed) == ["cms/flat-rntuple.root", "cms/flat.root", "cms/nano.root"]
    assert "RNTuple Events, RNTuple, 2,000 entries" in listed["cms/flat-rntuple.root"]
    assert "TTree Events, ordered TTree, 3,000 entries" in listed["cms/flat.root"]
    assert "TTree Events, ordered TTree, 200 entries" in listed["cms/nano.root"]
    assert "947 branches" in listed["cms/nano.root"]
    assert proc.stderr.splitlines()[-1].startswith(
        "site local: ok; dataset: 3 file(s) holding Events (1 RNTuple, 2 ordered TTree)"
    )
    kept = json.loads((results / "local" / "dataset.json").read_text())
    assert kept["files"][0]["url"] == f"root://localhost:{server.port}//cms/flat-rntuple.root"

    study = load_study(write_small_study(tmp_path, "local", SECTIONS))
    opts = SweepOptions(study=study, site=str(path), sections=list(SECTIONS),
                        data=tmp_path / "none", results=results, progress=False)  # fmt: skip
    own = load_site(path)
    planned = plan(opts, own, site_dataset(own, results))  # the kept description
    reasons = sorted(planned.skipped)
    assert reasons[0].startswith("cms/flat.root: pattern agc-2.7 needs ")
    assert reasons[1:] == ["the dataset has no unordered TTree files (it holds: 1 RNTuple, "
                           "2 ordered TTree)"]  # fmt: skip
    fill3 = next(p for p, _ in planned.todo if p.fill == 3)
    assert planned.inputs.files(fill3) == ["cms/flat.root", "cms/nano.root",
                                                        "cms/flat.root"]  # fmt: skip
    assert len(planned.todo) == 4  # ordered, rntuple, all branches, fill 3

    # a job reads a dataset file through the site's URL for it, as the sweep builds it
    url = RealLive(load_site(path), []).url("xrootd", "cms/nano.root")
    read = cli("read", url, "--engine", "uproot",
               "--tree", planned.inputs.tree(fill3), "--branches", "agc-2.7",
               env={**os.environ, **no_credentials})  # fmt: skip
    record = json.loads(read.stdout)
    assert record["error"] is None and record["events"] == 200, read.stderr


def test_each_problem_is_one_line(
    server: Server, no_credentials: dict[str, str], tmp_path: Path
) -> None:
    (server.data / "cms-bad").mkdir(mode=0o755, exist_ok=True)
    (server.data / "cms-bad" / "readme.root").write_text("this is not ROOT\n")
    (server.data / "cms-bad" / "readme.root").chmod(0o644)
    url = f"root://localhost:{server.port}//cms/nano.root"  # a full URL of an endpoint
    files = [url, "cms/missing.root", "cms-bad/readme.root"]
    found, problems = datasets.survey(RealLive(load_site(site(tmp_path / "a.yaml", server,
                                                              {"files": files})), []))  # fmt: skip
    root, http = f"root://localhost:{server.port}//", f"http://localhost:{server.http_port}//"
    assert found is None
    assert problems == [
        f"xrootd {root}{{file}}: {root}cms/missing.root: no such file there -- check the "
        "dataset's names and endpoints",
        f"http {http}{{file}}: {http}cms/missing.root: no such file there -- check the "
        "dataset's names and endpoints",
    ]
    found, problems = datasets.survey(RealLive(load_site(site(tmp_path / "b.yaml", server,
                                                              {"files": [url, files[2]]})), []))  # fmt: skip
    assert problems == [f"{root}cms-bad/readme.root: not a ROOT file (it starts with b'this') "
                        "-- name only ROOT files in the dataset"]  # fmt: skip

    closed = free_port()  # nothing listens there: the endpoint is down
    path = site(tmp_path / "c.yaml", server, {"files": [url]}, http_port=closed)
    found, problems = datasets.survey(RealLive(load_site(path), []))
    assert problems == [f"http http://localhost:{closed}//{{file}}: localhost:{closed} refused "
                        "the connection"]  # fmt: skip

    path = site(tmp_path / "d.yaml", server, {"files": [url], "tree": "Runs"})
    found, problems = datasets.survey(RealLive(load_site(path), []))
    assert len(problems) == 1 and problems[0].startswith(f"{url}: no TTree or RNTuple named 'Runs'")

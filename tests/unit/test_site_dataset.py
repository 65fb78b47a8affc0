"""A real site's own dataset (site file `dataset:`): validated with the site, its names mapped
to every endpoint, each file's layout named as the study names it, and the points it cannot
serve skipped with the reason. Posix endpoints on this machine: no server needed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.errors import InstoreError
from instore.site import dataset as datasets
from instore.site.config import load_site
from instore.site.real import RealLive, site_dataset
from instore.study import Point, load_study
from instore.sweep.options import SweepOptions
from instore.sweep.plan import plan

from tests.cli import Cli
from tests.conftest import write_small_study

NANOAOD = next(
    (p for p in (Path(__file__).parent / "data" / "nanoAOD_2015_CMS_Open_Data_ttbar.root",
                 Path("/work/shared/data/nanoAOD_2015_CMS_Open_Data_ttbar.root")) if p.is_file()),
    None,
)  # fmt: skip


def site_file(tmp_path: Path, dataset: dict, **extra: object) -> Path:
    data = {
        "name": "own",
        "kind": "real",
        "workers": {"nodes": 1, "cores": 2},
        "endpoints": {
            "posix": f"{tmp_path}/store/{{file}}",
            "xrootd": "root://se.example.org:1094//store/{file}",
            "http": "https://se.example.org/webdav/store/{file}",
        },
        "dataset": dataset,
        **extra,
    }
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(InstoreError) as err:
        load_site(path)
    return str(err.value)


# --- the site file ------------------------------------------------------------------------


def test_dataset_is_read_from_the_site_file(tmp_path: Path) -> None:
    (tmp_path / "lists").mkdir()
    site = load_site(site_file(tmp_path, {"list": "lists/files.txt", "tree": "Events"}))
    assert site.dataset is not None
    assert site.dataset.list == tmp_path / "lists" / "files.txt"  # beside the site file
    assert site.dataset.tree == "Events" and site.dataset.files == ()
    assert load_site(site_file(tmp_path, {"files": ["a.root"]})).dataset.files == ("a.root",)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "dataset", [{"files": ["a.root"], "directory": "d"}, {"tree": "Events"}, {"files": []}]
)
def test_exactly_one_source_of_names(tmp_path: Path, dataset: dict) -> None:
    line = error_of(site_file(tmp_path, dataset))
    assert "field dataset" in line and "\n" not in line
    assert line.endswith(("give exactly one of dataset.files, dataset.directory or dataset.list "
                          "(and optionally dataset.tree)", "give at least 1 item(s)"))  # fmt: skip


def test_dataset_with_upload_or_on_an_emulated_site_is_refused(tmp_path: Path) -> None:
    line = error_of(site_file(tmp_path, {"files": ["a.root"]}, upload=True))
    assert "fields dataset and upload" in line and "remove upload: true" in line
    emulated = {"name": "own", "kind": "emulated", "workers": {"nodes": 1, "cores": 2},
                "protocols": ["posix"], "network": {"bandwidth_mbit": 100}, "disk": {},
                "dataset": {"files": ["a.root"]}}  # fmt: skip
    path = tmp_path / "emu.yaml"
    path.write_text(yaml.safe_dump(emulated))
    assert "real sites take endpoints (and a dataset" in error_of(path)


def test_names_reach_every_endpoint(tmp_path: Path) -> None:
    site = load_site(site_file(tmp_path, {"files": ["a.root"]}))
    assert datasets.name_of(site, "./run1//a.root") == "run1/a.root"
    # a URL of one endpoint, spelt otherwise (default port, one slash), gives its name
    assert datasets.name_of(site, "root://se.example.org/store/run1/a.root") == "run1/a.root"
    assert datasets.name_of(site, "https://se.example.org:443/webdav/store/b.root") == "b.root"
    assert datasets.name_of(site, f"{tmp_path}/store/c/d.root") == "c/d.root"
    live = RealLive(site, [])
    assert {p: live.url(p, "run1/a.root") for p in site.protocols} == {
        "posix": f"{tmp_path}/store/run1/a.root",
        "xrootd": "root://se.example.org:1094//store/run1/a.root",
        "http": "https://se.example.org/webdav/store/run1/a.root",
    }
    with pytest.raises(InstoreError) as err:
        datasets.name_of(site, "root://other.org//store/a.root")
    assert str(err.value).startswith("site own: root://other.org//store/a.root is not under any")


# --- layouts ------------------------------------------------------------------------------


def describe(path: Path) -> datasets.DatasetFile:
    return datasets.describe_file(path.name, str(path), path.stat().st_size, None)


def test_generated_layouts_are_told_apart(small_files: dict[str, Path]) -> None:
    for layout in ("unordered", "by-branch", "ordered"):
        found = describe(small_files[layout])
        assert (found.layout, found.format, found.object) == (layout, "TTree", "events")
        assert found.entries == 6000 and len(found.branches) == 90
        assert found.compression == "ZLIB(1)" and found.compression_ratio > 1  # type: ignore[operator]


@pytest.mark.skipif(NANOAOD is None, reason="the CMS NanoAOD test file is not here")
def test_cms_nanoaod_is_ordered() -> None:
    # 947 of its 949 baskets are embedded in the TTree's record: read at once, with it
    found = describe(NANOAOD)  # type: ignore[arg-type]
    assert (found.layout, found.object, found.entries, found.clusters) == (
        "ordered",
        "Events",
        200,
        1,
    )
    assert "Jet_pt" in found.branches and len(found.branches) == 947


def frame(rows: list[tuple[str, int, int, int]]) -> pd.DataFrame:
    """(branch, entry_start, entry_stop, offset) baskets of 10 bytes."""
    return pd.DataFrame([{"branch": b, "entry_start": s, "entry_stop": e, "offset": o,
                          "compressed_bytes": 10, "embedded": False} for b, s, e, o in rows])  # fmt: skip


def test_classify_by_where_clusters_and_branches_lie() -> None:
    by_entry = frame([("a", 0, 5, 0), ("b", 0, 5, 10), ("a", 5, 9, 20), ("b", 5, 9, 30)])
    by_branch = frame([("a", 0, 5, 0), ("a", 5, 9, 10), ("b", 0, 5, 20), ("b", 5, 9, 30)])
    interleaved = frame([("a", 0, 5, 0), ("b", 0, 3, 10), ("a", 5, 9, 20), ("b", 3, 9, 30)])
    assert datasets.classify(by_entry, [0, 5, 9]) == "ordered"
    assert datasets.classify(by_branch, [0, 5, 9]) == "by-branch"
    assert datasets.classify(by_branch, [0, 9]) == "by-branch"  # one cluster, jumps back
    assert datasets.classify(interleaved, [0, 9]) == "unordered"  # SetAutoFlush(0)
    # as ROOT writes with autoflush: within a cluster a basket that filled first lies first,
    # but each cluster lies before the next, and a reader reads a cluster at once: ordered
    natural = pd.concat([interleaved, frame([("a", 9, 12, 40), ("b", 9, 12, 50)])])
    assert datasets.classify(natural, [0, 9, 12]) == "ordered"
    assert datasets.classify(frame([("a", 0, 9, 0)]).assign(embedded=True), [0, 9]) == "ordered"


# --- what the dataset serves --------------------------------------------------------------


def dataset_of(*files: tuple[str, str, tuple[str, ...]]) -> datasets.Dataset:
    made = tuple(
        datasets.DatasetFile(name, f"/d/{name}", 100, "RNTuple" if layout == "rntuple" else "TTree",
                             "Events", 10, "ZLIB(1)", 2.0, layout, 1, 3, branches)
        for name, layout, branches in files
    )  # fmt: skip
    return datasets.Dataset("own", {"files": [f.name for f in made]}, {}, "Events", made)


def test_points_the_dataset_cannot_serve_are_skipped_with_the_reason() -> None:
    nano = ("nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2")
    ds = dataset_of(*[(f"f{k}.root", "ordered", nano) for k in range(3)])
    assert ds.skip_reason(Point("layout", layout="unordered")) == (
        "the dataset has no unordered TTree files (it holds: 3 ordered TTree)"
    )
    assert ds.skip_reason(Point("format", layout="rntuple")) == (
        "the dataset has no RNTuple files (it holds: 3 ordered TTree)"
    )
    assert ds.skip_reason(Point("scale", fileset="nano16")) == (
        "the site reads its own dataset, not the generated file set nano16"
    )
    for fine in ("all", "fraction:0.1", "Jet_*", "nJet,Jet_pt"):
        assert ds.skip_reason(Point("readahead", branches=fine)) is None, fine
    missing = ds.skip_reason(Point("readahead", branches="Jet_pt,Muon_pt"))
    assert missing == ("f0.root: the pattern names Muon_pt, which the file lacks (1 of 2 missing)")
    agc = ds.skip_reason(Point("scale", branches="agc-2.7"))
    assert agc is not None and agc.startswith("f0.root: pattern agc-2.7 needs ")
    assert "\n" not in agc


def test_job_j_reads_file_j_mod_n_of_its_layout() -> None:
    ds = dataset_of(("a.root", "ordered", ("x",)), ("r.root", "rntuple", ("x",)),
                    ("b.root", "ordered", ("x",)))  # fmt: skip
    assert ds.reads(Point("jobfill", fill=3)) == ["a.root", "b.root", "a.root"]
    assert ds.reads(Point("format", layout="rntuple", fill=2)) == ["r.root", "r.root"]
    assert ds.holds() == "1 RNTuple, 2 ordered TTree"


def test_planning_does_no_network_io(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner is handed the surveyed dataset: it lists, stats, opens and connects nothing."""
    import socket

    import instore.storage
    from instore.site.dataset import store, surveyor

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the planner did I/O on the site")

    for module, name in ((instore.storage, "storage_for"), (surveyor, "survey"),
                         (store, "survey"), (surveyor, "describe_file"), (socket.socket, "connect"),
                         (socket, "create_connection"), (socket, "getaddrinfo")):  # fmt: skip
        monkeypatch.setattr(module, name, refuse)
    site = load_site(site_file(tmp_path, {"files": ["a.root", "b.root"]}))
    nano = ("nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2")
    ds = dataset_of(("a.root", "ordered", nano), ("b.root", "ordered", nano))
    study = load_study(write_small_study(tmp_path, "own", SECTIONS))
    opts = SweepOptions(study=study, site=str(tmp_path / "own.yaml"), sections=["layout", "jobfill"],
                        data=tmp_path / "no-data", results=tmp_path / "results", progress=False)  # fmt: skip
    planned = plan(opts, site, ds)
    assert planned.inputs.dataset is ds and planned.files == []
    assert planned.skipped == {
        "the dataset has no unordered TTree files (it holds: 2 ordered TTree)": 1}  # fmt: skip
    assert len(planned.todo) == 3  # layout ordered, fill 1 and 3
    with pytest.raises(InstoreError, match="survey the site's dataset before planning"):
        plan(opts, site)  # a site with its own dataset is never planned without its survey


# --- a posix-only site on this machine ------------------------------------------------------

SECTIONS = {
    "layout": {"layout": ["unordered", "ordered"], "protocol": ["posix"]},
    "readahead": {"branches": ["all", "Jet_*", "Jet_btagCSVV2"], "protocol": ["posix"]},
    "jobfill": {"fill": [1, 3], "protocol": ["posix"]},
}


@pytest.fixture
def posix_site(tmp_path: Path, small_files: dict[str, Path]) -> Path:
    store = tmp_path / "store" / "run1"
    store.mkdir(parents=True)
    for layout in ("ordered", "by-branch"):
        shutil.copy(small_files[layout], store / f"{layout}.root")
    shutil.copy(small_files["ordered-r1"], store / "ordered-1.root")
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump({
        "name": "own", "kind": "real", "workers": {"nodes": 1, "cores": 2},
        "endpoints": {"posix": f"{tmp_path}/store/{{file}}"}, "dataset": {"directory": "run1"},
    }))  # fmt: skip
    return path


def preflight(cli: Cli, site: Path, results: Path) -> subprocess.CompletedProcess[str]:
    return cli("site", "preflight", str(site), "--results", str(results))


def test_preflight_lists_the_dataset_and_the_sweep_plans_from_it(
    posix_site: Path, tmp_path: Path, cli: Cli
) -> None:
    results = tmp_path / "results"
    proc = preflight(cli, posix_site, results)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "run1/by-branch.root", "run1/ordered-1.root", "run1/ordered.root"]  # fmt: skip
    assert "TTree events, by-branch TTree, 6,000 entries" in lines[0]
    assert "(1 by-branch TTree, 2 ordered TTree)" in proc.stderr.splitlines()[-1]
    assert (results / "own" / "dataset.json").is_file()

    study = load_study(write_small_study(tmp_path, "own", SECTIONS))
    opts = SweepOptions(study=study, site=str(posix_site), sections=list(SECTIONS),
                        data=tmp_path / "no-data", results=results, progress=False)  # fmt: skip
    own = load_site(posix_site)
    planned = plan(opts, own, site_dataset(own, results))  # the kept description
    assert planned.files == []  # nothing generated is needed
    assert (
        planned.inputs.dataset is not None and planned.inputs.tree(planned.todo[0][0]) == "events"
    )
    assert planned.skipped == {
        "the dataset has no unordered TTree files (it holds: 1 by-branch TTree, 2 ordered TTree)": 1,
        "run1/ordered-1.root: the pattern names Jet_btagCSVV2, which the file lacks (1 of 1 missing)": 1,
    }
    fill3 = next(p for p, _ in planned.todo if p.fill == 3)
    assert planned.inputs.files(fill3) == [
        "run1/ordered-1.root", "run1/ordered.root", "run1/ordered-1.root"]  # fmt: skip
    assert planned.inputs.tree(fill3) == "events"


def test_preflight_says_what_is_wrong_in_one_line_each(
    posix_site: Path, tmp_path: Path, cli: Cli
) -> None:
    store = tmp_path / "store"
    (store / "run1" / "notes.root").write_text("not a ROOT file at all\n")
    proc = preflight(cli, posix_site, tmp_path / "results")
    assert proc.returncode == 1
    bad = [line for line in proc.stderr.splitlines() if "notes.root" in line]
    assert bad == [f"{store}/run1/notes.root: not a ROOT file (it starts with b'not ') "
                   "-- name only ROOT files in the dataset"], proc.stderr  # fmt: skip
    assert not (tmp_path / "results" / "own" / "dataset.json").exists()

    listed = tmp_path / "files.txt"
    listed.write_text(f"# ours\nrun1/ordered.root\n{store}/run1/gone.root\n")
    cfg = yaml.safe_load(posix_site.read_text())
    posix_site.write_text(yaml.safe_dump({**cfg, "dataset": {"list": "files.txt"}}))
    found, problems = datasets.survey(RealLive(load_site(posix_site), []))
    assert found is None
    assert problems == [f"posix {store}/{{file}}: {store}/run1/gone.root: no such file there "
                        "-- check the dataset's names and endpoints"]  # fmt: skip

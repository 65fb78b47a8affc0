"""RNTuple layouts: the same events as the TTree files, many more pages when small, reproducible
bytes; and ``instore inspect`` reads their page map exactly as ROOT's descriptor lists it."""

from __future__ import annotations

import json
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot
from instore.errors import InstoreError
from instore.generate import FileSpec, generate_files
from instore.inspect import basket_map, disorder, open_tree, read_order
from instore.inspect.basketmap import COLUMNS
from instore.inspect.disorder import clusters_of

from tests.cli import Cli
from tests.conftest import SMALL_EVENTS

SEED = 7  # the seed of the conftest's small_files, so the ordered TTree holds the same events


@pytest.fixture(scope="module")
def rntuple_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("rntuple")
    written = generate_files(
        out, layouts=["rntuple", "rntuple-small"], seed=SEED, n_events=SMALL_EVENTS
    )
    return {layout: path for (layout, _), path in written.items()}


def _page_map(path: Path):
    file, ntuple = open_tree(str(path))
    with file:
        return basket_map(ntuple), clusters_of(ntuple)


def _field_sums(obj, names: list[str]) -> dict[str, tuple[float, int]]:
    """Per field: the sum of all values and their count (jagged and fixed arrays flattened)."""
    arrays = obj.arrays(names, library="ak")
    out = {}
    for name in names:
        flat = ak.to_numpy(ak.flatten(arrays[name], axis=None)).astype(np.float64)
        out[name] = (float(flat.sum()), int(flat.size))
    return out


def test_rntuple_holds_the_ttree_values(
    small_files: dict[str, Path], rntuple_files: dict[str, Path]
) -> None:
    tree = uproot.open(small_files["ordered"])["events"]
    names = list(tree.keys())
    expected = _field_sums(tree, names)
    for layout in ("rntuple", "rntuple-small"):
        ntuple = uproot.open(rntuple_files[layout])["events"]
        assert ntuple.classname == "ROOT::RNTuple" and ntuple.num_entries == SMALL_EVENTS
        assert sorted(ntuple.keys()) == sorted(names), "the same fields as the tree's branches"
        assert _field_sums(ntuple, names) == expected, layout


def test_rntuple_types_mirror_the_tree(rntuple_files: dict[str, Path]) -> None:
    fields = {
        r.field_name: r.type_name
        for i, r in enumerate(uproot.open(rntuple_files["rntuple"])["events"].field_records)
        if r.parent_field_id == i
    }
    assert fields["Jet_pt"] == "std::vector<float>"
    assert fields["Muon_isTight"] == "std::vector<bool>"
    assert fields["pdfWeights"] == "std::array<float,100>"
    assert fields["eventNumber"] == "std::int64_t"


def test_small_layout_has_many_more_clusters_and_pages(rntuple_files: dict[str, Path]) -> None:
    default, default_clusters = _page_map(rntuple_files["rntuple"])
    small, small_clusters = _page_map(rntuple_files["rntuple-small"])
    assert default_clusters == 1  # 9 MB is far below ROOT's 128 MiB cluster
    assert small_clusters >= 8
    assert len(small) >= 10 * len(default)
    assert small["compressed_bytes"].mean() < default["compressed_bytes"].mean() / 10


def test_write_options_are_recorded(rntuple_files: dict[str, Path]) -> None:
    with uproot.open(rntuple_files["rntuple-small"]) as f:
        meta = json.loads(f["instore_meta"].member("fTitle"))
    assert meta["format"] == "rntuple" and meta["n_events"] == SMALL_EVENTS
    assert meta["write_options"]["compression"] == 101
    assert meta["write_options"]["approx_zipped_cluster_size"] == 1_000_000
    assert meta["write_options"]["max_unzipped_page_size"] == 8 * 1024
    with uproot.open(rntuple_files["rntuple"]) as f:
        meta = json.loads(f["instore_meta"].member("fTitle"))
    assert meta["write_options"]["approx_zipped_cluster_size"] == 128 * 1024 * 1024


def test_rntuple_generation_is_reproducible(rntuple_files: dict[str, Path], tmp_path: Path) -> None:
    """Same seed: the same pages, byte for byte, at the same offsets wherever the file is written.

    Only the write time ROOT stamps into the RNTuple's keys (RBlob) may differ.
    """
    first = rntuple_files["rntuple-small"]
    again = generate_files(
        tmp_path / "elsewhere", layouts=["rntuple-small"], seed=SEED, n_events=SMALL_EVENTS
    )[("rntuple-small", 0)]
    assert again.stat().st_size == first.stat().st_size
    pages_first, pages_again = _page_map(first)[0], _page_map(again)[0]
    assert pages_first.equals(pages_again)
    a, b = first.read_bytes(), again.read_bytes()
    for offset, n in pages_first[["offset", "compressed_bytes"]].itertuples(index=False):
        assert a[offset : offset + n] == b[offset : offset + n]
    differing = np.flatnonzero(np.frombuffer(a, np.uint8) != np.frombuffer(b, np.uint8))
    assert len(differing) <= 16, "at most the keys' timestamps differ"


def test_rntuple_replicas_differ(tmp_path: Path) -> None:
    written = generate_files(tmp_path, layouts=["rntuple"], replicas=2, seed=SEED, n_events=500)
    met = [
        uproot.open(written[("rntuple", r)])["events"]["met"].array(library="np") for r in (0, 1)
    ]
    assert not np.array_equal(*met)


def test_rntuple_knobs_are_checked() -> None:
    with pytest.raises(InstoreError, match="RNTuple cluster and page sizes"):
        FileSpec("rntuple", n_events=10, rntuple_page_kb=0)
    assert FileSpec("rntuple-small", n_events=10, rntuple_cluster_mb=3).rntuple_sizes == (
        3_000_000,
        8 * 1024,
    )
    assert FileSpec("rntuple", n_events=10).rntuple_sizes == (0, 0)  # ROOT's defaults


def test_page_map_matches_roots_descriptor(rntuple_files: dict[str, Path]) -> None:
    from instore.rootenv import root

    pages, _ = _page_map(rntuple_files["rntuple-small"])
    reader = root().ROOT.RNTupleReader.Open("events", str(rntuple_files["rntuple-small"]))
    desc = reader.GetDescriptor()
    expected = []
    for cluster in range(desc.GetNClusters()):
        cd = desc.GetClusterDescriptor(desc.FindClusterId(0, 0) + cluster)
        for column in range(desc.GetNPhysicalColumns()):
            for info in cd.GetPageRange(column).GetPageInfos():
                loc = info.GetLocator()
                expected.append(
                    (
                        cluster,
                        column,
                        int(loc.GetPosition["std::uint64_t"]()),
                        loc.GetNBytesOnStorage() + (8 if info.HasChecksum() else 0),
                    )
                )
    got = list(
        pages[["cluster", "column_index", "offset", "compressed_bytes"]].itertuples(
            index=False, name=None
        )
    )
    assert sorted(got) == sorted(expected)


def test_page_map_reads_like_a_basket_map(rntuple_files: dict[str, Path]) -> None:
    pages, clusters = _page_map(rntuple_files["rntuple-small"])
    assert list(pages.columns[: len(COLUMNS)]) == COLUMNS
    assert set(pages["format"]) == {"rntuple"} and pages.attrs["format"] == "rntuple"
    assert pages["branch"].nunique() == 90
    spans = pages.drop_duplicates("cluster").sort_values("entry_start")
    assert spans["entry_start"].iloc[0] == 0 and spans["entry_stop"].iloc[-1] == SMALL_EVENTS
    assert (spans["entry_start"].to_numpy()[1:] == spans["entry_stop"].to_numpy()[:-1]).all()
    size = rntuple_files["rntuple-small"].stat().st_size
    assert (pages["offset"] + pages["compressed_bytes"] <= size).all()
    figures = disorder(pages, clusters)
    assert figures.backward_jumps == 0, "written cluster by cluster, pages in order"
    assert figures.compressed_bytes < size  # shared (merged) pages counted once
    assert len(read_order(pages)) == (~pages["shared"]).sum()


def test_inspect_reads_an_rntuple_uproot_wrote(tmp_path: Path, cli: Cli) -> None:
    path = tmp_path / "uproot.root"
    with uproot.recreate(path) as f:
        f["t"] = {
            "a": np.arange(50_000),
            "b": np.linspace(0.0, 1.0, 50_000),
            "v": ak.Array([[1.0, 2.0], [], [3.0], [4.0, 5.0, 6.0], []] * 10_000),
        }
    assert uproot.open(path).classnames()["t;1"] == "ROOT::RNTuple"
    pages, clusters = _page_map(path)
    assert set(pages["branch"]) == {"a", "b", "v"}
    assert clusters >= 1 and len(pages) >= 4  # v has an offsets and a values column
    assert pages["entry_start"].min() == 0 and pages["entry_stop"].max() == 50_000
    proc = cli("inspect", "--json", "--plot", str(tmp_path / "map.png"), str(path))
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout.splitlines()[0])
    assert figures["format"] == "rntuple" and figures["tree"] == "t"
    assert figures["branches"] == 3 and figures["backward_jumps"] == 0
    assert (tmp_path / "map.png").stat().st_size > 0


def test_inspect_cli_on_generated_files(
    small_files: dict[str, Path], rntuple_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    files = [small_files["ordered"], rntuple_files["rntuple"], rntuple_files["rntuple-small"]]
    proc = cli("inspect", "--baskets", str(tmp_path), *[str(p) for p in files])
    assert proc.returncode == 0, proc.stderr
    assert "(tree events)" in proc.stdout and "(RNTuple events)" in proc.stdout
    assert (tmp_path / "rntuple-small-r0.baskets.csv").stat().st_size > 0

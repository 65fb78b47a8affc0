"""Generated files: layouts really differ as specified, and generation is deterministic."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import uproot
from instore.errors import InstoreError
from instore.generate import FileSpec, generate_files
from instore.inspect import basket_map, disorder, open_tree
from instore.inspect.disorder import clusters_of

from tests.conftest import SMALL_EVENTS


def _map(path: Path):
    file, tree = open_tree(str(path))
    with file:
        return basket_map(tree), clusters_of(tree), tree.num_entries, len(tree.branches)


def test_schema_is_analysis_like(small_files: dict[str, Path]) -> None:
    _, _, entries, n_branches = _map(small_files["ordered"])
    assert entries == SMALL_EVENTS
    assert 50 <= n_branches <= 200
    with uproot.open(small_files["ordered"]) as f:
        t = f["events"]
        types = {b.typename.split("[")[0] for b in t.branches}
        jet_pt = t["Jet_pt"].array(entry_stop=100)
        assert len(set(len(x) for x in jet_pt)) > 1, "collections must be variable-length"
        assert t["pdfWeights"].array(entry_stop=1, library="np").shape == (1, 100), (
            "fixed-size arrays"
        )
    assert len(types) >= 4, f"mixed types expected, got {types}"
    compressed = sum(b.compressed_bytes for b in t.branches)
    uncompressed = sum(b.uncompressed_bytes for b in t.branches)
    assert 1.3 < uncompressed / compressed < 4, "realistic compression ratio"


def test_unordered_is_interleaved_and_unclustered(small_files: dict[str, Path]) -> None:
    baskets, clusters, _, _ = _map(small_files["unordered"])
    assert clusters == 1
    per_branch = baskets.groupby("branch")["compressed_bytes"].count()
    assert per_branch.nunique() > 5, (
        "per-branch basket sizes differ, so branches hold different basket counts"
    )
    figures = disorder(baskets, clusters)
    assert figures.backward_jumps > 100


def test_ordered_is_clustered_and_monotonic(small_files: dict[str, Path]) -> None:
    baskets, clusters, _, _ = _map(small_files["ordered"])
    figures = disorder(baskets, clusters)
    assert clusters > 1
    assert figures.backward_jumps == 0


def test_unordered_seeks_at_least_20x_ordered(small_files: dict[str, Path]) -> None:
    unordered = disorder(*_map(small_files["unordered"])[:2])
    ordered = disorder(*_map(small_files["ordered"])[:2])
    assert unordered.total_seek_bytes >= 20 * max(
        ordered.total_seek_bytes, unordered.compressed_bytes // 100
    )


def test_by_branch_holds_each_branch_contiguously(small_files: dict[str, Path]) -> None:
    baskets, _, _, _ = _map(small_files["by-branch"])
    by_offset = baskets.sort_values("offset")
    runs = (by_offset["branch"] != by_offset["branch"].shift()).sum()
    assert runs == baskets["branch"].nunique(), "one contiguous run of baskets per branch"


def test_ordered_and_by_branch_hold_the_same_baskets(small_files: dict[str, Path]) -> None:
    key = ["branch", "basket", "entry_start", "entry_stop", "compressed_bytes"]
    ordered = _map(small_files["ordered"])[0][key].sort_values(key).reset_index(drop=True)
    by_branch = _map(small_files["by-branch"])[0][key].sort_values(key).reset_index(drop=True)
    assert ordered.equals(by_branch)


@pytest.mark.parametrize(
    "branch", ["eventNumber", "Jet_pt", "Track_d0", "pdfWeights", "Muon_isTight", "mcweight"]
)
def test_same_values_in_every_layout(small_files: dict[str, Path], branch: str) -> None:
    arrays = [
        uproot.open(small_files[layout])["events"][branch].array(library="ak")
        for layout in ("unordered", "by-branch", "ordered")
    ]
    import awkward as ak

    assert ak.all(arrays[0] == arrays[1], axis=None) and ak.all(arrays[0] == arrays[2], axis=None)


def test_generation_is_deterministic_and_replicas_differ(
    small_files: dict[str, Path], tmp_path: Path
) -> None:
    again = generate_files(
        tmp_path, layouts=["ordered"], seed=7, n_events=SMALL_EVENTS, cluster_mb=2.0
    )[("ordered", 0)]
    first, second = _map(small_files["ordered"])[0], _map(again)[0]
    # ROOT stores the file's own path in its header: a file written elsewhere is shifted as a whole.
    for m in (first, second):
        m["offset"] -= m["offset"].min()
    assert first.equals(second), "same seed: same baskets at the same relative offsets"
    read = lambda p: uproot.open(p)["events"]["Jet_pt"].array(library="ak")  # noqa: E731
    import awkward as ak

    assert ak.all(read(small_files["ordered"]) == read(again), axis=None)
    r1 = uproot.open(small_files["ordered-r1"])["events"]["met"].array(library="np")
    r0 = uproot.open(small_files["ordered"])["events"]["met"].array(library="np")
    assert not np.array_equal(r0, r1), "replicas have distinct seeds"


def test_size_in_mb_is_honoured(tmp_path: Path) -> None:
    path = generate_files(tmp_path, layouts=["ordered"], size_mb=6)[("ordered", 0)]
    assert 6e6 * 0.85 < path.stat().st_size < 6e6 * 1.15


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layout": "sorted", "n_events": 10}, "unknown layout"),
        ({"layout": "ordered"}, "exactly one of"),
        ({"layout": "ordered", "n_events": 10, "size_mb": 5}, "exactly one of"),
        ({"layout": "ordered", "n_events": -5}, "must be positive"),
        ({"layout": "ordered", "n_events": 10, "cluster_mb": 0}, "cluster size"),
        ({"layout": "rntuple", "n_events": 10, "rntuple_cluster_mb": -1}, "RNTuple cluster"),
    ],
)
def test_bad_specs_are_one_line_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(InstoreError, match=message) as err:
        FileSpec(**kwargs)
    assert "\n" not in str(err.value) and " -- " in str(err.value)


def test_failed_write_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "not-a-dir"
    target.write_text("a file where a directory is expected")
    with pytest.raises((InstoreError, OSError)):
        generate_files(target / "sub", layouts=["unordered"], n_events=100)
    assert not list(tmp_path.glob("**/*.root"))

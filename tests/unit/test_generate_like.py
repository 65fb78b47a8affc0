"""Files like a real one (issue 21): a template keeps a real file's schema and value shapes, and
files drawn from it have its branches, compress like it and hold the same values in every layout."""

from __future__ import annotations

import json
from pathlib import Path

import awkward as ak
import numpy as np
import pytest
import uproot
from instore.errors import InstoreError
from instore.generate import generate_files
from instore.generate.compare import comparison, share_within
from instore.generate.repeat import repeat_file
from instore.generate.template import derive, load_template
from instore.generate.values import chunks
from instore.inspect import basket_map, disorder, open_tree
from instore.inspect.disorder import clusters_of

NANO = "cms-nanoaod"


@pytest.fixture(scope="module")
def nano_files(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Path]:
    out = tmp_path_factory.mktemp("like")
    return generate_files(out, ["unordered", "ordered", "rntuple"], replicas=2, n_events=3000,
                          cluster_mb=0.5, like=NANO, fileset="nano")  # fmt: skip


def test_shipped_template_keeps_nanoaods_schema() -> None:
    t = load_template(NANO)
    assert (t.tree, t.entries, len(t.branches), t.compression) == ("Events", 200, 947, 101)
    jet_pt = t.branch("Jet_pt")
    assert (jet_pt.leaf, jet_pt.counter) == ("F", "nJet")
    assert jet_pt.mantissa_bits == 10, "NanoAOD keeps 10 mantissa bits of a jet's pt"
    assert t.branch("event").steps, "event numbers are a running number"
    assert t.source["sha256"] and t.source["file"].endswith(".root")


def test_generated_branches_compress_like_the_templates() -> None:
    frame = comparison(load_template(NANO))
    total = frame["generated_bytes_per_event"].sum() / frame["template_bytes_per_event"].sum()
    assert 0.8 < total < 1.25, f"bytes per event {total:.2f}x the template's"
    assert share_within(frame, 1.5) > 0.9, "the bulk of the bytes within 1.5x, branch by branch"


def test_files_have_the_templates_branches_in_every_format(nano_files) -> None:
    names = [b.name for b in load_template(NANO).branches]
    for layout in ("unordered", "ordered", "rntuple"):
        with uproot.open(nano_files[(layout, 0)]) as f:
            assert list(f["Events"].keys()) == names, layout
    assert nano_files[("ordered", 0)].name == "nano-ordered-r0.root"


@pytest.mark.parametrize(
    "branch", ["nJet", "Jet_pt", "Jet_btagCSVV2", "HLT_IsoMu20", "event", "LHEPdfWeight"]
)
def test_same_values_in_every_layout(nano_files, branch: str) -> None:
    arrays = []
    for layout in ("unordered", "ordered", "rntuple"):
        with uproot.open(nano_files[(layout, 0)]) as f:
            arrays.append(f["Events"][branch].array())
    assert ak.all(arrays[0] == arrays[1]) and ak.all(arrays[1] == arrays[2])


def test_values_are_plausible_and_replicas_differ(nano_files) -> None:
    with (
        uproot.open(nano_files[("ordered", 0)]) as f0,
        uproot.open(nano_files[("ordered", 1)]) as f1,
    ):
        pt0, pt1 = (
            ak.flatten(f0["Events"]["Jet_pt"].array()),
            ak.flatten(f1["Events"]["Jet_pt"].array()),
        )
        assert ak.min(pt0) >= 15 and 20 < ak.mean(pt0) < 80 and ak.std(pt0) > 5
        assert not np.array_equal(ak.to_numpy(pt0[:100]), ak.to_numpy(pt1[:100]))
        events = f0["Events"]["event"].array(library="np")
        assert np.all(np.diff(events.astype(np.int64)) > 0)


def test_drawing_is_deterministic_and_independent_of_other_branches() -> None:
    t = load_template(NANO)
    first = next(chunks(t, 500, seed=7))[1]
    again = next(chunks(t, 500, seed=7))[1]
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))


def test_template_from_a_tree_in_a_tdirectory_written_by_uproot(tmp_path: Path) -> None:
    """A file no one here wrote the writer of: uproot's, with the tree one directory down."""
    rng = np.random.default_rng(3)
    counts = rng.poisson(3, 2000)
    muons = ak.zip({"pt": ak.unflatten(rng.exponential(20, counts.sum()).astype(np.float32), counts),
                    "charge": ak.unflatten(rng.choice([-1, 1], counts.sum()).astype(np.int32), counts)})  # fmt: skip
    path = tmp_path / "uproot-written.root"
    met = rng.normal(40, 10, 2000).astype(np.float32)
    with uproot.recreate(path) as f:  # mktree: a TTree (assigning a dict writes an RNTuple)
        f.mktree("analysis/tree", {"Muon": muons.type, "met": met.dtype}).extend(
            {"Muon": muons, "met": met}
        )
    template = derive(path)
    assert template.tree == "analysis/tree"
    assert {b.name: b.counter for b in template.branches} == {
        "nMuon": None,
        "Muon_pt": "nMuon",
        "Muon_charge": "nMuon",
        "met": None,
    }
    written = generate_files(tmp_path / "out", ["ordered"], n_events=1000, like=str(path))
    with uproot.open(written[("ordered", 0)]) as f:
        charges = set(ak.flatten(f["tree"]["Muon_charge"].array()).tolist())
    assert charges == {-1, 1}, "a two-valued branch keeps its two values"


def test_not_a_root_file_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.root"
    bad.write_text("not ROOT")
    with pytest.raises(InstoreError, match=r"cannot open .*notes\.root as a ROOT file"):
        load_template(str(bad))
    with pytest.raises(InstoreError, match="no template named 'nanoaod-typo'"):
        load_template("nanoaod-typo")


@pytest.mark.parametrize("layout", ["unordered", "ordered", "rntuple"])
def test_a_repeated_file_holds_its_sources_baskets_copies_times(nano_files, tmp_path: Path,
                                                               layout: str) -> None:  # fmt: skip
    """A larger set made by merging copies of a smaller one (``repeats:``): the source's
    compressed baskets and pages, its events that many times, named for the new set in the
    source's layout and replica, with one meta record saying what it was made from."""
    source = nano_files[(layout, 1)]
    made = repeat_file(source, 3, "nanox3", tmp_path)
    assert made.name == f"nanox3-{layout}-r1.root"
    with uproot.open(source) as f, uproot.open(made) as g:
        assert g.keys() == ["Events;1", "instore_meta;1"]
        meta = json.loads(g["instore_meta"].member("fTitle"))
        assert meta["repeats"] == {"source": source.name, "fileset": "nano", "copies": 3}
        assert (meta["fileset"], meta["n_events"], meta["layout"]) == ("nanox3", 9000, layout)
        assert g["Events"].num_entries == 3 * f["Events"].num_entries == 9000
        pt = f["Events"]["Jet_pt"].array()
        assert ak.all(g["Events"]["Jet_pt"].array() == ak.concatenate([pt, pt, pt]))
    ratio = made.stat().st_size / source.stat().st_size
    assert 2.9 < ratio < 3.05, f"no recompression: about 3 times the bytes, not {ratio:.2f}"
    if layout != "rntuple":  # the TTree's basket order is each copy's own, one after the other
        (before, clusters), (after, merged_clusters) = (_order(source), _order(made))
        assert merged_clusters == 3 * clusters
        assert after.backward_jumps == 3 * before.backward_jumps  # unordered stays unordered


def _order(path: Path):
    file, tree = open_tree(str(path))
    with file:
        clusters = clusters_of(tree)
        return disorder(basket_map(tree), clusters), clusters


def test_repeating_a_file_instore_did_not_write_says_so(tmp_path: Path) -> None:
    other = tmp_path / "other.root"
    with uproot.recreate(other) as f:
        f.mktree("Events", {"x": np.float32}).extend({"x": np.arange(10, dtype=np.float32)})
    with pytest.raises(InstoreError, match="has no instore_meta record: it was not written by"):
        repeat_file(other, 2, "big", tmp_path)

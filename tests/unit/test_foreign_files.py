"""Files written by others, read right: baskets embedded in the TTree's record count as needed
bytes, classes with no dictionary here do not make a readable file "corrupt" (the root engine
reads them through their stored structure and skips, with a reason, what it cannot), and both
engines count an RNTuple's fields the same way. A real ATLAS PHYSLITE RNTuple: test_physlite.py.

The NanoAOD file was written by CMS software (see tests/unit/data/README.md).
``no_dictionary_classes.root`` was written by ROOT 6.40 (PyROOT) in a separate process that had
an ACLiC-built dictionary for its stand-in classes (``tests/unit/data/make_no_dictionary_file.py``);
this test process has none. The real ATLAS file with such classes is pinned in test_physlite.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import uproot
from instore.inspect import basket_map, disorder, open_tree
from instore.inspect.disorder import clusters_of
from instore.payload.maps import page_map
from instore.payload.pattern import Pattern, bytes_needed
from instore.payload.runner import ReadOptions, run_read
from instore.rootenv import root

DATA = Path(__file__).parent / "data"
NANOAOD = DATA / "nanoAOD_2015_CMS_Open_Data_ttbar.root"
NO_DICTIONARY = DATA / "no_dictionary_classes.root"
ENGINES = ("root", "uproot")
BEFORE_EMBEDDED = 36_169  # what both engines reported for NanoAOD, all branches, without them


def read(path: Path | str, **kw) -> dict:
    record = run_read(ReadOptions(str(path), **kw)).as_dict()
    assert record["error"] is None, record["error"]
    return record


def _nanoaod_on_storage() -> tuple[int, int, int]:
    """(TTree key bytes, bytes of the baskets in keys of their own, embedded baskets), from the
    key list and the branches' own arrays (not from instore's maps)."""
    with uproot.open(NANOAOD) as f:
        key = f.key("Events")
        tree = f["Events"]
        own = embedded = 0
        for b in tree.itervalues(recursive=True):
            n_embedded = len(b.embedded_baskets)
            n_own = b.num_baskets - n_embedded
            own += int(np.asarray(b.member("fBasketBytes"))[:n_own].sum())
            embedded += n_embedded
        return int(key.fNbytes), own, embedded


def test_embedded_baskets_count_in_bytes_needed_for_both_engines_and_inspect() -> None:
    key_bytes, own_bytes, n_embedded = _nanoaod_on_storage()
    assert n_embedded == 947 and own_bytes == BEFORE_EMBEDDED
    records = {e: read(NANOAOD, engine=e) for e in ENGINES}
    file, tree = open_tree(str(NANOAOD))
    with file:
        baskets = basket_map(tree)
        figures = disorder(baskets, clusters_of(tree))
    # the tree key once for all its embedded baskets, plus the two baskets of their own
    expected = key_bytes + own_bytes
    assert figures.compressed_bytes == expected
    assert figures.embedded_baskets == 947 and figures.baskets == 949
    assert figures.branches == 947
    for engine, r in records.items():
        assert r["events"] == 200 and r["branches_read"] == 947, engine
        assert r["bytes_needed"] == expected, engine
        # a reader fetches little besides: the file header, streamer info and key list
        assert 0.98 * r["bytes_read"] <= r["bytes_needed"] <= r["bytes_read"], engine


def test_an_embedded_branch_alone_needs_the_tree_key() -> None:
    """Jet_pt has only an embedded basket: the job needs the TTree's key (its only way to the
    data), not nothing; LHEPdfWeight adds its first basket on disk for the first quarter."""
    key_bytes, _, _ = _nanoaod_on_storage()
    pattern = Pattern(branches="Jet_pt,LHEPdfWeight", entry_fraction=0.25, entry_mode="range")
    r, u = (read(NANOAOD, engine=e, pattern=pattern) for e in ENGINES)
    with uproot.open(NANOAOD) as f:
        first_basket = int(f["Events"]["LHEPdfWeight"].member("fBasketBytes")[0])
    assert r["bytes_needed"] == u["bytes_needed"] == key_bytes + first_basket
    assert r["branches_read"] == u["branches_read"] == 4  # nJet, nLHEPdfWeight added


def _all_tree_baskets(path: Path, name: str) -> int:
    """Bytes of every basket of every branch and sub-branch, from uproot's branch arrays."""
    with uproot.open(path) as f:
        return sum(
            int(np.asarray(b.member("fBasketBytes"))[: b.num_baskets].sum())
            for b in f[name].itervalues(recursive=True)
        )


def test_this_process_has_no_dictionary_for_the_stand_in_classes() -> None:
    ROOT = root()
    for name in ("xAODStandIn::TrigDecisionAuxInfo_v1", "xAODStandIn::Hit"):
        cl = ROOT.TClass.GetClass(name)
        assert not cl or not cl.HasDictionary(), f"{name} has a dictionary here"


def test_ttree_of_classes_without_dictionary_is_read_whole_by_both_engines() -> None:
    """ROOT reads the split class branches from the file's streamer info; their sub-branches'
    baskets count in bytes needed for the top-level branch that was selected."""
    records = {e: read(NO_DICTIONARY, engine=e, tree="tree") for e in ENGINES}
    every_basket = _all_tree_baskets(NO_DICTIONARY, "tree")
    for engine, r in records.items():
        assert r["events"] == 200 and r["branches_total"] == r["branches_read"] == 4, engine
        assert r["fields_skipped"] == 0 and r["fields_skipped_reason"] is None, engine
        assert r["bytes_needed"] == every_basket, engine
    one = {
        e: read(NO_DICTIONARY, engine=e, tree="tree", pattern=Pattern(branches="TrigDecisionAux"))
        for e in ENGINES
    }
    assert one["root"]["bytes_needed"] == one["uproot"]["bytes_needed"] > 0
    assert one["root"]["bytes_needed"] < every_basket


def _uproot_needed(branches: str) -> int:
    with uproot.open(NO_DICTIONARY) as f:
        pages = page_map(f["ntuple"])
    names = [b for b in pages["branch"].unique() if branches == "all" or b in branches.split(",")]
    return bytes_needed(pages, names, 0, 200, 1)


def test_rntuple_class_without_dictionary_is_read_through_its_members() -> None:
    pattern = Pattern(branches="TrigDecisionAux")
    r = read(NO_DICTIONARY, engine="root", tree="ntuple", pattern=pattern)
    u = read(NO_DICTIONARY, engine="uproot", tree="ntuple", pattern=pattern)
    assert r["fields_skipped"] == 0 and r["branches_read"] == 1 and r["events"] == 200
    assert r["bytes_needed"] == u["bytes_needed"] == _uproot_needed("TrigDecisionAux") > 0
    assert r["counters"]["szUnzip"] > 0 and r["bytes_read"] >= r["bytes_needed"]


def test_rntuple_collection_of_class_without_dictionary_is_read_by_both_engines() -> None:
    """``std::vector<xAODStandIn::Hit>``: the root engine reads the collection's offsets, then its
    items' members by element, so both engines read every field and need the same bytes."""
    r, u = (read(NO_DICTIONARY, engine=e, tree="ntuple") for e in ENGINES)
    for record in (r, u):
        assert record["branches_total"] == record["branches_read"] == 5 and record["events"] == 200
        assert record["fields_skipped"] == 0 and record["fields_skipped_reason"] is None
    assert r["bytes_needed"] == u["bytes_needed"] == _uproot_needed("all")
    hits = Pattern(branches="Hits")
    r, u = (read(NO_DICTIONARY, engine=e, tree="ntuple", pattern=hits) for e in ENGINES)
    assert r["branches_read"] == u["branches_read"] == 1
    assert r["bytes_needed"] == u["bytes_needed"] == _uproot_needed("Hits") > 0


# Run by another process: cling gives it the class, so this process has no dictionary for it.
_VARIANT_WRITER = r"""
import sys
import ROOT
ROOT.gInterpreter.Declare('''
#include <variant>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
namespace xAODStandIn { struct Cell { float e = 0; int id = 0; ClassDefNV(Cell, 1); }; }
void write_variant(const char *path) {
   auto model = ROOT::RNTupleModel::Create();
   auto x = model->MakeField<float>("x");
   auto v = model->MakeField<std::variant<xAODStandIn::Cell, int>>("CellOrId");
   auto w = ROOT::RNTupleWriter::Recreate(std::move(model), "ntuple", path);
   for (int i = 0; i < 20; ++i) {
      *x = i;
      if (i % 2) *v = i; else *v = xAODStandIn::Cell{float(i), i};
      w->Fill();
   }
}
''')
ROOT.write_variant(sys.argv[1])
"""


def test_rntuple_field_root_cannot_read_is_skipped_and_said(tmp_path: Path) -> None:
    """A variant holding a class with no dictionary here has no structure the root engine can
    walk: it is skipped, counted and named; the rest is read and the file is not called corrupt."""
    path = tmp_path / "variant_no_dictionary.root"
    subprocess.run([sys.executable, "-c", _VARIANT_WRITER, str(path)], check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    r = read(path, engine="root")
    assert r["branches_total"] == 2 and r["branches_read"] == 1 and r["events"] == 20
    assert r["fields_skipped"] == 1
    assert r["fields_skipped_reason"] == "field CellOrId: no dictionary for class xAODStandIn::Cell"
    u = read(path, engine="uproot")  # uproot needs no dictionary: it reads both
    assert u["branches_read"] == 2 and u["fields_skipped"] == 0
    with uproot.open(path) as f:
        pages = page_map(f["ntuple"])
    assert r["bytes_needed"] == bytes_needed(pages, ["x"], 0, 20, 1) < u["bytes_needed"]


@pytest.fixture(scope="module")
def imported_nanoaod(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The NanoAOD file imported to an RNTuple by ROOT's RNTupleImporter (jagged branches become
    ``_collectionN`` records: sub-fields under top-level fields)."""
    out = tmp_path_factory.mktemp("imported") / "nanoaod_rntuple.root"
    importer = root().Experimental.RNTupleImporter.Create(str(NANOAOD), "Events", str(out))
    importer.SetIsQuiet(True)
    importer.Import()
    return out


@pytest.mark.parametrize("branches", ["all", "fraction:0.1"])
def test_engines_count_rntuple_fields_alike(imported_nanoaod: Path, branches: str) -> None:
    """Both count top-level fields (uproot's ``keys()`` also lists every sub-field: 1,313)."""
    with uproot.open(imported_nanoaod) as f:
        ntuple = f["Events"]
        top = len(ntuple.keys(recursive=False))
        assert len(ntuple.keys()) > top
    pattern = Pattern(branches=branches)
    r, u = (read(imported_nanoaod, engine=e, pattern=pattern) for e in ENGINES)
    assert r["branches_total"] == u["branches_total"] == top == 969
    assert r["branches_read"] == u["branches_read"]
    assert r["fields_skipped"] == u["fields_skipped"] == 0
    assert r["bytes_needed"] == u["bytes_needed"] > 0

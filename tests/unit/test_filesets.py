"""Named file sets and named read patterns (issue 21): a section reads files like a real one at
their own size, by the branch names an analysis uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.payload.branchsets import BRANCH_SETS
from instore.payload.pattern import select_branches
from instore.study import expand, load_study
from instore.study.grid import Point
from instore.sweep.plan import Inputs

NANO_NAMES = ["nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2", "nMuon",
              "Muon_pt", "Muon_eta", "nElectron", "Electron_pt", "MET_pt", "HLT_IsoMu24"]  # fmt: skip
COUNTERS = {
    n: f"n{n.split('_')[0]}"
    for n in NANO_NAMES
    if "_" in n and n.split("_")[0] in ("Jet", "Muon", "Electron")
}


def _study(tmp_path: Path, sections: dict, filesets: dict | None = None) -> Path:
    profile = {"sites": ["lan-hdd"], "files": {"size_mb": 16, "replicas": 4}, "sections": sections}
    if filesets is not None:
        profile["filesets"] = filesets
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "p", "profiles": {"p": profile}}))
    return path


NANO_SETS = {
    "nano16": {"like": "cms-nanoaod", "size_mb": 16, "replicas": 2},
    "nano1g": {"like": "cms-nanoaod", "size_mb": 1024, "replicas": 1, "repetitions": 1},
}


def test_agc_smallest_set_reads_its_seven_branches_and_their_counters() -> None:
    assert BRANCH_SETS["agc-2.7"] == ("Jet_pt", "Jet_eta", "Jet_phi", "Jet_btagCSVV2", "Jet_mass",
                                      "Muon_pt", "Electron_pt")  # fmt: skip
    chosen = select_branches(NANO_NAMES, COUNTERS, "agc-2.7")
    assert chosen == ["nJet", "Jet_pt", "Jet_eta", "Jet_phi", "Jet_mass", "Jet_btagCSVV2", "nMuon",
                      "Muon_pt", "nElectron", "Electron_pt"]  # fmt: skip
    assert set(BRANCH_SETS["agc-2.7"]) < set(BRANCH_SETS["agc-4"]) < set(BRANCH_SETS["agc-50"])


def test_globs_and_names_mix() -> None:
    assert select_branches(NANO_NAMES, COUNTERS, "Muon_*,MET_pt") == [
        "nMuon",
        "Muon_pt",
        "Muon_eta",
        "MET_pt",
    ]


def test_a_branch_the_file_lacks_is_one_line_naming_it() -> None:
    with pytest.raises(InstoreError, match="the pattern names Tau_pt, which the file lacks") as err:
        select_branches(NANO_NAMES, COUNTERS, "Jet_pt,Tau_pt")
    assert "\n" not in str(err.value)
    with pytest.raises(InstoreError, match="pattern agc-4 needs Electron_phi"):
        select_branches(NANO_NAMES, COUNTERS, "agc-4")
    with pytest.raises(InstoreError, match="names Photon_\\*"):
        select_branches(NANO_NAMES, COUNTERS, "Photon_*")


def test_points_read_their_file_set_with_its_replicas_tree_and_repetitions(tmp_path: Path) -> None:
    sections = {
        "scale": {"fileset": ["default", "nano16", "nano1g"], "layout": ["unordered"], "fill": [2]}
    }
    study = load_study(_study(tmp_path, sections, NANO_SETS))
    points = expand(study, "scale")
    by_set = {}
    for p in points:
        by_set.setdefault(p.fileset, []).append(p)
    assert {k: len(v) for k, v in by_set.items()} == {None: 1, "nano16": 1, "nano1g": 1}
    assert Inputs(study).files(by_set[None][0]) == ["unordered-r0.root", "unordered-r1.root"]
    assert Inputs(study).files(by_set["nano16"][0]) == [
        "nano16-unordered-r0.root",
        "nano16-unordered-r1.root",
    ]
    assert Inputs(study).files(by_set["nano1g"][0]) == ["nano1g-unordered-r0.root"] * 2
    assert (study.tree_of(None), study.tree_of("nano1g")) == ("events", "Events")
    assert study.layouts_of("nano1g") == {"ordered", "unordered"}


def test_file_sets_enter_the_key_and_leave_old_keys_alone(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path, {"layout": {"layout": ["ordered"]}}, NANO_SETS))
    old = Point(section="layout")
    assert old.key("s", study.fileset(None).key()) == old.key(
        "s", {"size_mb": 16, "replicas": 4, "seed": 1, "cluster_mb": 8.0}
    )
    nano = Point(section="layout", fileset="nano16")
    assert nano.key("s", study.fileset("nano16").key()) != old.key("s", study.fileset(None).key())


def test_a_section_naming_an_unknown_file_set_is_one_line(tmp_path: Path) -> None:
    path = _study(tmp_path, {"scale": {"fileset": ["nano2g"]}}, NANO_SETS)
    with pytest.raises(
        InstoreError, match=r"section scale: no file set named 'nano2g'.*nano16, nano1g"
    ):
        load_study(path)


def test_a_sections_repetitions_replace_the_profiles_but_not_a_file_sets(tmp_path: Path) -> None:
    """The budget's knob: a section measured once where the profile repeats points, while a
    1 GB set's own `repetitions: 1` still holds in a section that asks for more."""
    sections = {
        "caching": {"layout": ["ordered"], "repetitions": 1},
        "scale": {"fileset": ["default", "nano1g"], "repetitions": 3},
        "layout": {"layout": ["ordered"]},
    }
    path = _study(tmp_path, sections, NANO_SETS)  # nano1g: repetitions 1 of its own
    data = yaml.safe_load(path.read_text())
    data["profiles"]["p"]["repetitions"] = 2
    path.write_text(yaml.safe_dump(data))
    study = load_study(path)
    assert [p.repetition for p in expand(study, "caching")] == [0]
    assert [p.repetition for p in expand(study, "layout")] == [0, 1]
    scale = {(p.fileset, p.repetition) for p in expand(study, "scale")}
    assert scale == {(None, 0), (None, 1), (None, 2), ("nano1g", 0)}


def test_the_full_profiles_1gb_set_is_four_copies_of_the_256mb_one() -> None:
    full = load_study(overrides={"profile": "full"})
    assert full.repeated_from("nano1g") == ("nano256", 4)
    assert full.repeated_from("nano256") is None
    assert full.fileset("nano1g").key()["repeats"] == "nano256", "its points are its own"


@pytest.mark.parametrize(
    ("nano1g", "why"),
    [
        ({"repeats": "nano2g"}, r"repeats 'nano2g', which is not another file set"),
        (
            {"repeats": "nano16", "size_mb": 24},
            r"size_mb 24 is not a whole multiple \(2 or more\) of nano16's 16",
        ),
        ({"repeats": "nano16", "replicas": 3}, r"nano16 has fewer replicas than it"),
        ({"repeats": "nano16", "cluster_mb": 8}, r"its cluster_mb is not nano16's"),
    ],
)
def test_a_set_that_cannot_be_made_from_the_one_it_repeats_is_one_line(
    tmp_path: Path, nano1g: dict, why: str
) -> None:
    sets = {"nano16": {**NANO_SETS["nano16"], "cluster_mb": 30},
            "nano1g": {**NANO_SETS["nano1g"], "cluster_mb": 30, **nano1g}}  # fmt: skip
    with pytest.raises(InstoreError, match=f"file set nano1g: cannot be made from nano16: {why}"
                       if "not another" not in why else why) as err:  # fmt: skip
        load_study(_study(tmp_path, {"scale": {"fileset": ["nano1g"]}}, sets))
    assert "\n" not in str(err.value)

"""The format section's grid: TTree against RNTuple layouts, cache off and on, per protocol;
the uproot engine (no client cache) measured once per layout and protocol."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.site.dataset.model import Dataset
from instore.study import SECTIONS, expand, load_study
from instore.study.config import DEFAULT_STUDY
from instore.study.grid import Point
from instore.sweep.jobs import job_argv
from instore.sweep.plan import Inputs, engine_skip_reason

FILES = {"size_mb": 16, "replicas": 8, "seed": 1, "cluster_mb": 4}


def _measured(profile: str) -> list[Point]:
    study = load_study(overrides={"profile": profile})
    return [p for p in expand(study, "format") if engine_skip_reason(study, p) is None]


def test_format_is_a_section_after_jobfill() -> None:
    assert "format" in SECTIONS
    assert SECTIONS.index("format") == SECTIONS.index("jobfill") + 1


@pytest.mark.parametrize(
    ("profile", "expanded", "measured"),
    [
        ("quick", 8, 8),
        ("full", 384, 288),
    ],  # full: 2 layouts x 2 caches x 2 protocols x 2 engines x up to 24 reps (adaptive, 2-24
    # within 8 s of job time)
)
def test_shipped_profiles_expand_the_format_grid(
    profile: str, expanded: int, measured: int
) -> None:
    study = load_study(overrides={"profile": profile})
    points = expand(study, "format")
    assert len(points) == expanded
    assert len(_measured(profile)) == measured
    layouts = {p.layout for p in points}
    assert {"ordered", "rntuple"} <= layouts
    assert {p.cache_mb for p in points} == {0, None}  # off, and on at the default
    keys = {p.key("wan", FILES) for p in points}
    assert len(keys) == len(points)  # every point (and repetition) its own record


def test_uproot_runs_once_at_the_first_cache_setting() -> None:
    study = load_study(overrides={"profile": "full"})
    skipped = [p for p in expand(study, "format") if engine_skip_reason(study, p)]
    assert skipped and all(p.engine == "uproot" and p.cache_mb is None for p in skipped)
    assert "no client cache" in str(engine_skip_reason(study, skipped[0]))
    kept = [p for p in _measured("full") if p.engine == "uproot"]
    assert {p.cache_mb for p in kept} == {0}
    other = Point("cache", engine="uproot", cache_mb=2.0)  # other sections are left alone
    assert engine_skip_reason(study, other) is None


def test_format_points_read_their_layouts_file_with_the_cache_knob() -> None:
    point = Point("format", layout="rntuple", cache_mb=0.0, protocol="xrootd")
    argv = job_argv(point, "root://h//rntuple-r0.root", "events", Path("/tmp"))
    assert argv[2] == "root://h//rntuple-r0.root"
    assert argv[argv.index("--cache-mb") + 1] == "0.0"  # cluster cache off
    assert "--cache-mb" not in Point("format", layout="rntuple").read_args()  # default: on


def test_a_sweeps_jobs_name_the_format_of_its_own_files_but_not_of_a_sites_dataset() -> None:
    study = load_study(DEFAULT_STUDY)
    rntuple, tree = Point("format", layout="rntuple"), Point("format", layout="unordered")
    assert Inputs(study).object_format(rntuple) == "rntuple"
    assert Inputs(study).object_format(tree) == "ttree"
    argv = job_argv(rntuple, "root://h//rntuple-r0.root", "events", Path("/tmp"),
                    object_format="rntuple")  # fmt: skip
    assert argv[argv.index("--tree") + 1] == "events"
    assert argv[argv.index("--format") + 1] == "rntuple"
    assert "--format" not in job_argv(tree, "/d/unordered-r0.root", "events", Path("/tmp"))
    dataset = Inputs(study, dataset=object.__new__(Dataset))  # its files may hold either
    assert dataset.object_format(rntuple) is None


def _study_with_layouts(tmp_path: Path, layouts: list[str]) -> Path:
    data = yaml.safe_load(DEFAULT_STUDY.read_text())
    data["profiles"]["quick"]["sections"]["format"]["layout"] = layouts
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_schema_takes_rntuple_layouts_and_refuses_others(tmp_path: Path) -> None:
    ok = _study_with_layouts(tmp_path, ["ordered", "rntuple", "rntuple-small"])
    study = load_study(ok, {"profile": "quick"})
    assert {p.layout for p in expand(study, "format")} == {"ordered", "rntuple", "rntuple-small"}
    with pytest.raises(InstoreError, match="rntuple-tiny"):
        load_study(_study_with_layouts(tmp_path, ["rntuple-tiny"]), {"profile": "quick"})


def test_root_engine_rntuple_over_http_is_skipped_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from instore.payload import engine_rntuple

    study = load_study(overrides={"profile": "quick"})
    monkeypatch.setattr(engine_rntuple, "xrdclhttp_available", lambda: True)
    http = Point("format", layout="rntuple", protocol="http")
    assert engine_skip_reason(study, http) == engine_rntuple.NO_HTTP
    assert engine_rntuple.NO_HTTP_FIX == "use the uproot engine or xrootd"
    for fine in (Point("format", layout="ordered", protocol="http"),
                 Point("format", layout="rntuple", protocol="xrootd"),
                 Point("format", layout="rntuple-small", protocol="http", engine="uproot",
                       cache_mb=0)):  # fmt: skip
        assert engine_skip_reason(study, fine) is None
    monkeypatch.setattr(engine_rntuple, "xrdclhttp_available", lambda: False)  # TWebFile: fine
    assert engine_skip_reason(study, http) is None


class _FakeFile:
    """What ``_raw_file_problem`` asks of a TFile: its class name and endpoint protocol."""

    def __init__(self, cls: str, protocol: str) -> None:
        self.cls, self.protocol = cls, protocol

    def IsA(self) -> object:
        return type("C", (), {"GetName": lambda _: self.cls})()

    def GetEndpointUrl(self) -> object:
        return type("U", (), {"GetProtocol": lambda _: self.protocol})()


@pytest.mark.parametrize(
    ("cls", "protocol", "refused"),
    [("TFile", "http", True), ("TFile", "https", True), ("TFile", "file", False),
     ("TNetXNGFile", "root", False), ("ROOT::Deprecated::TWebFile", "http", False)],
)  # fmt: skip
def test_a_remote_plain_tfile_is_never_read_as_a_local_path(
    cls: str, protocol: str, refused: bool
) -> None:
    from instore.payload.engine_rntuple import NO_HTTP, _raw_file_problem

    assert _raw_file_problem(_FakeFile(cls, protocol)) == (NO_HTTP if refused else None)

"""The study file: bad input is one line naming file, field and fix; grids expand as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.study import SECTIONS, expand, load_study
from instore.study.config import DEFAULT_STUDY
from instore.study.grid import NOT_AXES

GOOD = yaml.safe_load(DEFAULT_STUDY.read_text())


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return path


def _with(path: str, value: object) -> dict:
    """The shipped study with one field (dotted path) replaced; value None deletes it."""
    data = yaml.safe_load(DEFAULT_STUDY.read_text())
    *parents, last = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return data


BAD = [
    ("malformed-yaml", "profile: [quick\nprofiles: {", "not valid YAML"),
    ("not-a-mapping", "- just\n- a list\n", "field (top level)"),
    ("unknown-profile", _with("profile", "medium"), "no profile named 'medium'"),
    ("missing-profiles", _with("profiles", None), "'profiles' is a required property"),
    ("unknown-top-field", {**GOOD, "colour": "blue"}, "colour"),
    (
        "unknown-protocol",
        _with("profiles.quick.sections.protocols.protocol", ["posix", "gridftp"]),
        "gridftp",
    ),
    ("unknown-layout", _with("profiles.quick.sections.layout.layout", ["shuffled"]), "shuffled"),
    ("negative-backoff", _with("profiles.quick.backoff_s", -1), "backoff_s"),
    ("negative-cache", _with("profiles.quick.sections.cache.cache_mb", [-5]), "cache_mb"),
    ("cache-word", _with("profiles.quick.sections.cache.cache_mb", ["big"]), "cache_mb"),
    ("zero-replicas", _with("profiles.quick.files.replicas", 0), "replicas"),
    ("missing-size", _with("profiles.quick.files.size_mb", None), "size_mb"),
    ("negative-size", _with("profiles.quick.files.size_mb", -1), "size_mb"),
    ("fill-zero", _with("profiles.quick.sections.jobfill.fill", [0]), "fill"),
    ("fill-not-list", _with("profiles.quick.sections.jobfill.fill", 4), "fill"),
    ("unknown-section", _with("profiles.quick.sections.tape", {"layout": ["ordered"]}), "tape"),
    ("unknown-axis", _with("profiles.quick.sections.cache.colour", ["red"]), "colour"),
    ("bad-site-name", _with("profiles.quick.sites", ["../etc/passwd"]), "sites"),
    ("no-sites", _with("profiles.quick.sites", []), "sites"),
    ("entries-over-one", _with("profiles.quick.sections.readahead.entries", [1.5]), "entries"),
    (
        "bad-branch-spec",
        _with("profiles.quick.sections.readahead.branches", ["fraction:lots"]),
        "branches",
    ),
    ("repetitions-zero", _with("profiles.quick.repetitions", 0), "repetitions"),
]


@pytest.mark.parametrize(("name", "data", "needle"), BAD, ids=[b[0] for b in BAD])
def test_bad_study_is_one_line_naming_file_field_and_fix(
    tmp_path: Path, name: str, data: object, needle: str
) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(InstoreError) as err:
        load_study(path, {"profile": "quick"} if name != "unknown-profile" else None)
    text = str(err.value)
    assert "\n" not in text
    assert str(path) in text and needle in text and " -- " in text, text


def test_backoff_is_read_and_defaults_to_two_seconds(tmp_path: Path) -> None:
    quick = {"profile": "quick"}
    assert (
        load_study(_write(tmp_path, _with("profiles.quick.backoff_s", 0.5)), quick).backoff_s == 0.5
    )
    assert load_study(_write(tmp_path, GOOD), quick).backoff_s == 2.0


def test_missing_study_file(tmp_path: Path) -> None:
    with pytest.raises(InstoreError, match="no such file"):
        load_study(tmp_path / "nope.yaml")


def test_profiles_resolve_and_expand() -> None:
    quick = load_study(overrides={"profile": "quick"})
    assert quick.profile == "quick" and quick.sites
    for section in SECTIONS:
        points = expand(quick, section)
        grid = {a: v for a, v in quick.sections.get(section, {}).items() if a not in NOT_AXES}
        if "cache_state" in grid:  # applies to xcache points only: test_caching_axes counts
            continue
        expected = quick.repetitions.max  # a fixed count: min = max
        for values in grid.values():
            expected *= len(values)
        assert len(points) == expected
        assert len({p.key("s", {"f": 1}) for p in points}) == len(points), (
            "every point has its own key"
        )


def test_sites_override_replaces_the_profiles_sites() -> None:
    study = load_study(overrides={"profile": "quick", "sites": ["mysite"]})
    assert study.sites == ("mysite",)


def test_point_key_changes_with_knobs_site_and_files() -> None:
    points = expand(load_study(overrides={"profile": "quick"}), "cache")
    p = points[0]
    key = p.key("lan-hdd", {"size_mb": 8})
    assert key == p.key("lan-hdd", {"size_mb": 8})
    assert key != p.key("lan-ssd", {"size_mb": 8})
    assert key != p.key("lan-hdd", {"size_mb": 9})
    assert key != points[1].key("lan-hdd", {"size_mb": 8})


def test_default_cache_means_roots_default() -> None:
    points = expand(load_study(overrides={"profile": "quick"}), "layout")
    assert {p.cache_mb for p in points} == {0, None}
    default = next(p for p in points if p.cache_mb is None)
    assert "--cache-mb" not in default.read_args()


def test_a_section_left_out_has_no_points() -> None:
    study = load_study(overrides={"profile": "quick"})
    only_cache = type(study)(**{**study.__dict__, "sections": {"cache": study.sections["cache"]}})
    assert expand(only_cache, "layout") == []
    assert len(expand(only_cache, "cache")) > 0


@pytest.mark.parametrize(
    "path", sorted((DEFAULT_STUDY.parent / "experiments").glob("*.yaml")), ids=lambda p: p.stem
)
def test_experiment_study_files_validate_and_use_the_full_profiles_files(path: Path) -> None:
    """An experiment rereads the default study's generated files, so its points sit beside them."""
    study = load_study(path)
    full = load_study(DEFAULT_STUDY, {"profile": "full"})
    assert study.files == full.files
    assert all(expand(study, section) for section in study.sections)

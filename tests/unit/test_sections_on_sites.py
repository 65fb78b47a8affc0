"""Which sections a site runs, by what they need rather than by site names: a real site (one
xrootd endpoint, as a site admin brings it) runs every section it can in both shipped profiles;
the profile's own emulated sites keep the point counts their time budget was costed on; a
section whose grid names no protocol the site offers runs over the site's most direct one."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.site import load_site
from instore.site.config import SITES_DIR, SiteConfig
from instore.site.real import RealLive
from instore.study import Point, Study, load_study
from instore.sweep import plan

from tests.conftest import write_real_site

XROOTD = {"xrootd": "root://h:1094//data/{file}", "http": "https://h:1094//data/{file}"}
WITH_XCACHE = {"xrootd": "root://h:1094//data/{file}", "xcache": "root://c:1095//data/{file}"}
# What a site that can neither shape its link nor touch its disks cannot run.
DISK_SECTIONS = {"scheduler", "filesystem"}

# The profiles' own emulated sites: points per section (first repetitions, not skipped), as
# they were when the sections named their sites (the budget of the reference run).
BUDGET = {
    "full": {
        "lan-hdd": {"layout": 6, "cache": 6, "protocols": 10, "readahead": 8, "jobfill": 8,
                    "format": 12, "scale": 24, "replay": 12, "load": 8, "scheduler": 8,
                    "filesystem": 4},
        "lan-ssd": {"layout": 6, "cache": 6, "protocols": 10, "readahead": 8, "jobfill": 8,
                    "load": 8},
        "wan": {"protocols": 8, "caching": 24, "scale": 24, "replay": 15, "load": 8},
    },
    "quick": {
        "lan-hdd": {"layout": 6, "cache": 6, "protocols": 10, "readahead": 8, "jobfill": 2,
                    "format": 8, "scale": 12, "replay": 6, "load": 2, "scheduler": 2,
                    "filesystem": 2},
        "lan-ssd": {"layout": 6, "cache": 6, "protocols": 10, "readahead": 8, "jobfill": 2,
                    "format": 8},
        "wan": {"format": 4, "caching": 16},
    },
}  # fmt: skip


def points_per_section(study: Study, site: SiteConfig) -> tuple[dict[str, int], Counter[str]]:
    """The points the planner runs on the site per section (first repetitions), and the
    reasons for the others."""
    runs: dict[str, int] = {}
    skipped: Counter[str] = Counter()
    for section in study.sections:
        for point in plan.points_on(study, section, site):
            if point.repetition:
                continue
            reason = plan.skip_reason(study, point, site)
            if reason:
                skipped[reason] += 1
            else:
                runs[section] = runs.get(section, 0) + 1
    return runs, skipped


def _real(tmp_path: Path, endpoints: dict[str, str], tuning: dict | None = None) -> SiteConfig:
    path = write_real_site(tmp_path / "mysite.yaml", endpoints, name="mysite")
    if tuning:
        path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "tuning": tuning}))
    return load_site(path)


@pytest.mark.parametrize(("profile", "fewest", "most"), [("quick", 30, 60), ("full", 60, 110)])
def test_a_real_site_with_one_xrootd_endpoint_runs_every_section_it_can(
    tmp_path: Path, profile: str, fewest: int, most: int
) -> None:
    study = load_study(overrides={"profile": profile, "sites": ["mysite"]})
    runs, skipped = points_per_section(study, _real(tmp_path, XROOTD))
    assert set(runs) == set(study.sections) - DISK_SECTIONS - {"caching"}
    assert fewest <= sum(runs.values()) <= most, runs
    assert runs["layout"] == 6 and runs["readahead"] == 4  # over xrootd, client readahead only
    reasons = " / ".join(skipped)
    assert "section caching needs xcache: site mysite has no XCache" in reasons
    assert "section scheduler needs io_scheduler: site mysite is real" in reasons
    assert "section filesystem needs filesystem: site mysite is real" in reasons
    assert not any("budget_sites" in r for r in skipped), "a site the profile does not name"


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_a_real_site_with_an_xcache_runs_caching_at_its_own_rtt(
    tmp_path: Path, profile: str
) -> None:
    study = load_study(overrides={"profile": profile})
    site = _real(tmp_path, WITH_XCACHE, {"xcache_purge": ["true"]})
    runs, _ = points_per_section(study, site)
    assert set(runs) == set(study.sections) - DISK_SECTIONS
    caching = [p for p in plan.points_on(study, "caching", site) if p.repetition == 0]
    assert {p.rtt_ms for p in caching} == {None}  # no rtt axis: the site's own link
    assert {(p.protocol, p.cache_state) for p in caching} >= {
        ("xrootd", None), ("xcache", "cold"), ("xcache", "warm"),
    }  # fmt: skip


def test_cold_xcache_points_need_a_purge_command(tmp_path: Path) -> None:
    site = _real(tmp_path, WITH_XCACHE)
    cold = Point("caching", protocol="xcache", cache_state="cold")
    assert plan.site_skip_reason(cold, site) == (
        "site mysite is real: its file names no tuning.xcache_purge command to empty its XCache"
    )
    assert (
        plan.site_skip_reason(Point("caching", protocol="xcache", cache_state="warm"), site) is None
    )


@pytest.mark.parametrize("profile", ["quick", "full"])
def test_the_emulated_sites_keep_their_budget(profile: str) -> None:
    study = load_study(overrides={"profile": profile})
    for name, expected in BUDGET[profile].items():
        runs, _ = points_per_section(study, load_site(name))
        assert runs == expected, name


def test_an_emulated_site_the_profile_does_not_name_runs_every_section_it_can(
    tmp_path: Path,
) -> None:
    own = yaml.safe_load((SITES_DIR / "lan-ssd.yaml").read_text())
    path = tmp_path / "lan-nvme.yaml"
    path.write_text(yaml.safe_dump({**own, "name": "lan-nvme"}))
    study = load_study(overrides={"profile": "full", "sites": ["lan-nvme"]})
    runs, skipped = points_per_section(study, load_site(path))
    assert set(runs) == set(study.sections) - {"caching"}  # it has no XCache
    assert not any("budget_sites" in r for r in skipped)


def _study(tmp_path: Path, grid: dict) -> Study:
    data = {"profile": "t", "profiles": {"t": {
        "sites": ["lan-hdd"], "files": {"size_mb": 1, "replicas": 1}, "sections": {"layout": grid},
    }}}  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_study(path)


def test_a_posix_section_falls_back_on_a_site_without_posix(tmp_path: Path) -> None:
    study = _study(tmp_path, {"protocol": ["posix"], "layout": ["ordered", "unordered"]})
    points = plan.points_on(study, "layout", _real(tmp_path, XROOTD))
    assert [(p.protocol, p.substitutes) for p in points] == [("xrootd", "posix")] * 2
    assert all(plan.skip_reason(study, p, _real(tmp_path, XROOTD)) is None for p in points)
    assert plan.substitution_note(points[0]) == (
        "section layout runs over xrootd in place of posix: the site offers none of the "
        "protocols its grid names"
    )
    # the most direct protocol the site offers: a FUSE mount before xrootd
    fuse = _real(tmp_path, {**XROOTD, "fuse": "/mnt/eos/{file}"})
    assert {p.protocol for p in plan.points_on(study, "layout", fuse)} == {"fuse"}
    # a site with posix reads it; its points say they stand in for nothing
    lan = plan.points_on(study, "layout", load_site("lan-hdd"))
    assert {(p.protocol, p.substitutes) for p in lan} == {("posix", None)}


def test_a_section_naming_a_protocol_the_site_offers_skips_only_the_others(
    tmp_path: Path,
) -> None:
    study = _study(tmp_path, {"protocol": ["posix", "xrootd"]})
    site = _real(tmp_path, XROOTD)
    points = plan.points_on(study, "layout", site)
    assert [(p.protocol, p.substitutes) for p in points] == [("posix", None), ("xrootd", None)]
    assert [plan.skip_reason(study, p, site) for p in points] == ["site offers no posix", None]


def test_traces_are_recorded_on_a_real_site_when_the_run_brings_up_no_emulated_one(
    tmp_path: Path,
) -> None:
    study = load_study(overrides={"profile": "quick"})
    mysite = _real(tmp_path, XROOTD)
    assert plan.traces_replayed(study, mysite) == {
        "agc-rdf",
        "agc-uproot",
        "agc-coffea",
        "agc-load",
    }
    assert plan.recording_site(study, "agc-rdf", {"mysite": mysite}) == "mysite"
    both = {"mysite": mysite, "lan-hdd": load_site("lan-hdd")}
    assert plan.recording_site(study, "agc-rdf", both) == "lan-ssd"  # root is needed anyway


def test_a_real_site_sets_block_readahead_where_its_file_lets_it(tmp_path: Path) -> None:
    readahead = tmp_path / "read_ahead_kb"
    readahead.write_text("128\n")
    live = RealLive(_real(tmp_path, XROOTD, {"block_readahead": str(readahead)}), [])
    live.set_block_readahead(4096)
    assert readahead.read_text() == "4096\n"
    live.set_block_readahead(None)
    assert readahead.read_text() == "128\n"
    with pytest.raises(InstoreError, match=r"names no tuning\.block_readahead"):
        RealLive(_real(tmp_path, XROOTD), []).set_block_readahead(4096)


def test_a_real_xcache_is_emptied_by_the_site_files_command(tmp_path: Path) -> None:
    done = tmp_path / "purged"
    live = RealLive(_real(tmp_path, WITH_XCACHE, {"xcache_purge": ["touch", str(done)]}), [])
    live.prepare_cache("cold", ["ordered-r0.root"])
    assert done.exists()
    failing = RealLive(_real(tmp_path, WITH_XCACHE, {"xcache_purge": ["false"]}), [])
    with pytest.raises(InstoreError, match=r"tuning\.xcache_purge false exited 1"):
        failing.prepare_cache("cold", ["ordered-r0.root"])

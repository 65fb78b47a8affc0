"""Condition axes (RTT, bandwidth) and the cache state as sweep knobs: how grids expand, which
sites skip them and why, and that knobs added later leave the keys of old points alone."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.site import load_site
from instore.study import Point, expand, load_study
from instore.study.grid import KEYED_IF_SET, section_budget, section_needs
from instore.summary.sections.caching import break_even_ms, caching, caching_curves
from instore.sweep import plan, runner
from instore.sweep.options import SweepOptions

from tests.conftest import write_real_site

FILES = {"size_mb": 16, "replicas": 8, "seed": 1, "cluster_mb": 4}
# Keys computed by the code before cache_state, rtt_ms and bandwidth_mbit existed: results
# recorded then must still count as measured.
OLD_KEYS = [
    (Point(section="cache", layout="ordered", protocol="xrootd", cache_mb=2.0), "536cf23bfd080830"),
    (Point(section="readahead", branches="fraction:0.1", cache_mb=0, readahead_kb=16,
           block_readahead_kb=4096, repetition=1), "1326dd6ed46fb1fb"),
    (Point(section="jobfill", fill=2, cpu_us=200.0), "6826bc8ab885c640"),
]  # fmt: skip


def _study(tmp_path: Path, grid: dict, sites: list[str] | None = None) -> Path:
    study = {
        "profile": "t",
        "profiles": {
            "t": {
                "sites": sites or ["local"],
                "files": {"size_mb": 1, "replicas": 1, "seed": 1},
                "sections": {"caching": grid},
            }
        },
    }
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


@pytest.mark.parametrize(("point", "key"), OLD_KEYS)
def test_new_knobs_do_not_change_old_keys(point: Point, key: str) -> None:
    assert point.key("lan-hdd", FILES) == key


def test_new_knobs_enter_the_key_when_set() -> None:
    base = Point(section="caching", protocol="xcache")
    keys = {base.key("wan", FILES)}
    for knob, value in zip(
        KEYED_IF_SET,
        ("warm", 25.0, 100.0, "nano16", "agc-rdf", "bfq", "xfs", 2, "implicit"),
        strict=True,
    ):
        keys.add(Point(section="caching", protocol="xcache", **{knob: value}).key("wan", FILES))
    assert len(keys) == 1 + len(KEYED_IF_SET)


def test_grid_expands_rtt_and_bandwidth_axes(tmp_path: Path) -> None:
    grid = {"rtt_ms": [1, 50], "bandwidth_mbit": [100, 1000], "protocol": ["xrootd"]}
    points = expand(load_study(_study(tmp_path, grid)), "caching")
    assert {(p.rtt_ms, p.bandwidth_mbit) for p in points} == {
        (1, 100), (1, 1000), (50, 100), (50, 1000),
    }  # fmt: skip
    assert [p.rtt_ms for p in points] == [1, 1, 50, 50], "condition axes are outermost"
    assert all(p.sets_conditions for p in points)
    assert len({p.key("s", FILES) for p in points}) == 4


def test_cache_state_applies_to_xcache_reads_only(tmp_path: Path) -> None:
    grid = {
        "protocol": ["xrootd", "xcache"],
        "cache_state": ["cold", "warm"],
        "budget_sites": ["wan"],
    }
    study = load_study(_study(tmp_path, grid))
    points = expand(study, "caching")
    assert [(p.protocol, p.cache_state) for p in points] == [
        ("xrootd", None), ("xcache", "cold"), ("xcache", "warm"),
    ]  # fmt: skip
    assert section_budget(study, "caching") == ("wan",)


def test_shipped_caching_sections_need_an_xcache_and_have_an_rtt_axis() -> None:
    for profile, rtts in (("quick", 2), ("full", 3)):
        study = load_study(overrides={"profile": profile})
        points = expand(study, "caching")
        assert section_needs(study, "caching") == ("xcache",)
        assert section_budget(study, "caching") is None
        assert len({p.rtt_ms for p in points}) == rtts
        # per RTT and read: xrootd, stage-in, xcache cold, xcache warm
        assert len(points) == rtts * 2 * 4 * study.repetitions_of(None, "caching")
    wan = load_site("wan")
    assert wan.cache is not None and "xcache" in wan.protocols
    assert all(plan.site_skip_reason(p, wan) is None for p in points)


def test_real_sites_lack_the_link_and_their_own_xcache(tmp_path: Path) -> None:
    site = load_site(write_real_site(tmp_path / "local.yaml", {"xrootd": "root://h//{file}"}))
    assert plan.site_skip_reason(Point("caching", protocol="xrootd", rtt_ms=10), site) == (
        "site local is real: its link's RTT and bandwidth are its own"
    )
    assert plan.site_skip_reason(Point("caching", protocol="xrootd", bandwidth_mbit=10), site)
    assert plan.site_skip_reason(Point("caching", protocol="xcache"), site) == (
        "site offers no xcache"
    )
    assert plan.site_skip_reason(Point("caching", protocol="xrootd"), site) is None


def test_a_real_site_runs_condition_axes_at_its_own_values(tmp_path: Path) -> None:
    """rtt_ms and bandwidth_mbit collapse to the site's own link on a site that cannot set
    them (the section does not need it): one point instead of one per RTT."""
    site = load_site(write_real_site(tmp_path / "local.yaml", {"xrootd": "root://h//{file}"}))
    grid = {"protocol": ["xrootd"], "rtt_ms": [10, 50], "bandwidth_mbit": [100]}
    points = plan.points_on(load_study(_study(tmp_path, grid)), "caching", site)
    assert [(p.rtt_ms, p.bandwidth_mbit, p.protocol) for p in points] == [(None, None, "xrootd")]


def test_sites_without_a_cache_skip_xcache_points() -> None:
    lan = load_site("lan-ssd")
    point = Point("caching", protocol="xcache", cache_state="cold", rtt_ms=10)
    assert plan.site_skip_reason(point, lan) == "site offers no xcache"
    assert plan.site_skip_reason(Point("caching", protocol="xrootd", rtt_ms=10), lan) is None


def test_a_section_limited_to_other_sites_is_skipped_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "files"
    data.mkdir()
    (data / "ordered-r0.root").write_bytes(b"")
    site = write_real_site(tmp_path / "local.yaml", {"posix": f"{data}/{{file}}"})
    grid = {"protocol": ["posix"], "rtt_ms": [10, 50], "budget_sites": ["wan"]}
    monkeypatch.setattr(runner, "open_site", lambda *a, **k: pytest.fail("nothing to start"))
    opts = SweepOptions(
        study=load_study(_study(tmp_path, grid, sites=["local", "wan"])),
        site=str(site),
        sections=["caching"],
        data=data,
        results=tmp_path / "results",
        progress=False,
    )
    summary = runner.run_site(opts)
    assert summary.skipped == {
        "section caching runs on wan only of profile t's own sites (its budget_sites)": 1
    }
    # a site the profile does not name runs it, at its own RTT
    opts = replace(opts, study=load_study(_study(tmp_path, grid, sites=["wan"])))
    todo = plan.plan(opts, load_site(site)).todo
    assert [(p.protocol, p.rtt_ms) for p, _ in todo] == [("posix", None)]


def _caching_stats() -> pd.DataFrame:
    """Synthetic per-point medians: direct reads slow with RTT, a warm cache does not,
    stage-in pays the whole file (slow for sparse reads)."""
    rows = []
    for rtt in (1, 10, 25, 50, 100):
        for reads, branches in (("full", "all"), ("sparse", "fraction:0.1")):
            scale = 1.0 if reads == "full" else 0.1
            walls = {
                ("xrootd", None): scale * 2 + 0.05 * rtt,
                ("stage-in", None): 2.5 + 0.01 * rtt,
                ("xcache", "cold"): scale * 2.2 + 0.05 * rtt,
                ("xcache", "warm"): scale * 2 + 0.3,
            }
            for (protocol, state), wall in walls.items():
                rows.append({"section": "caching", "jobs_ok": 2, "protocol": protocol,
                             "cache_state": state, "branches": branches, "rtt_ms": rtt,
                             "wall_s_median": wall,
                             "cpu_efficiency_median": min(1.0, scale * 2 / wall)})  # fmt: skip
    return pd.DataFrame(rows)


def test_caching_advice_gives_break_even_and_efficiency_drops() -> None:
    rec = caching(_caching_stats())
    assert rec is not None and rec.figure == "caching.html#fig-caching"
    print(rec.text)
    assert "full reads, a warm XCache beats direct reads from 10 ms RTT" in rec.text
    assert "sparse reads, a warm XCache beats direct reads from 10 ms RTT" in rec.text
    assert "stage-in never wins (though it beats direct reads from 25 ms)" in rec.text
    assert rec.evidence["full"]["stage_in_beats_direct_from_ms"] == 25
    drops = rec.evidence["full"]["under_floor_from_ms"]
    assert drops["XCache warm"] is None and drops["direct xrootd"] == 25
    curves = caching_curves(_caching_stats())
    assert break_even_ms(curves[curves["reads"] == "full"], "stage-in", "direct xrootd") == 25


def test_no_caching_section_no_caching_advice() -> None:
    stats = _caching_stats().assign(section="cache")
    assert caching(stats) is None


def _real_site_caching_stats(warm_walls: list[float]) -> pd.DataFrame:
    """A real site's caching points: no RTT axis (the site's own link, its calibration's probe
    in rtt_ms_measured), direct reads and a warm XCache, full reads, 3 runs each."""
    rows = []
    for (protocol, state), walls in (
        (("xrootd", None), [0.184, 0.190, 0.186]),
        (("xcache", "warm"), warm_walls),
    ):
        rows.append({"section": "caching", "jobs_ok": 3, "protocol": protocol,
                     "cache_state": state, "branches": "all", "rtt_ms": float("nan"),
                     "rtt_ms_measured_median": 0.107, "wall_s_median": sorted(walls)[1],
                     "wall_s_runs": [[w] for w in walls],
                     "cpu_efficiency_median": 0.96})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_real_sites_caching_points_are_compared_at_its_own_rtt() -> None:
    """The trial on a GSI site with the user's XCache (2026-11-28) measured 6 caching points,
    and the page showed an empty table, no figure line and no advice: every caching point was
    dropped for want of an RTT axis. At the site's RTT (its calibration's probe) the methods
    are compared with their intervals; no winner where the interval includes no difference."""
    curves = caching_curves(_real_site_caching_stats([0.170, 0.172, 0.175]))
    assert set(curves["rtt_ms"]) == {0.107} and len(curves) == 2
    faster = caching(_real_site_caching_stats([0.170, 0.172, 0.175]))
    assert faster is not None
    assert faster.text.startswith("For full reads at the site's own RTT (0.107 ms), XCache warm "
                                  "takes 0.925x [")  # fmt: skip
    assert "no measurable difference" not in faster.text
    same = caching(_real_site_caching_stats([0.180, 0.188, 0.195]))
    assert same is not None and "(no measurable difference, from 3 and 3 runs" in same.text
    assert (
        same.evidence["full"]["XCache warm"]["lo"] < 1 < same.evidence["full"]["XCache warm"]["hi"]
    )


def test_a_real_sites_caching_page_names_its_own_rtt_not_an_axis() -> None:
    """The trial's caching page titled its one-RTT table "across RTTs", as if the site had
    been retuned; it names the RTT its points ran at, and the emulated grid keeps the axis."""
    from instore.report.caching import _where
    from instore.summary.sections.caching import by_method

    real = by_method(_real_site_caching_stats([0.170, 0.172, 0.175]))
    assert _where(real) == "at the site's own RTT (0.107 ms)"
    grid = real.assign(rtt_ms=[1.0, 30.0])
    assert _where(grid) == "across RTTs"

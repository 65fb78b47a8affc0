"""The engine registry: one entry per engine of the vocabulary, each saying what it reads and
why it skips a point; the sweep planner asks it and names no engine."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from instore import vocabulary
from instore.payload import engine_rntuple
from instore.payload.specs import SPECS
from instore.replay.targets import IN_PLACE
from instore.site.config import SiteConfig
from instore.study import Point, load_study
from instore.sweep import plan
from instore.sweep.engines import REGISTRY, engine_of
from instore.sweep.jobs import payload_engine

QUICK = load_study(overrides={"profile": "quick"})  # format: cache_mb [0, default]


def test_one_entry_per_engine_of_the_vocabulary() -> None:
    assert tuple(REGISTRY) == vocabulary.ENGINES
    assert REGISTRY["replay"].protocols == IN_PLACE
    assert all(set(e.layouts) <= set(vocabulary.LAYOUTS) for e in REGISTRY.values())
    assert all(set(e.protocols) <= set(vocabulary.PROTOCOLS) for e in REGISTRY.values())


def test_the_planner_names_no_engine() -> None:
    text = Path(plan.__file__).read_text()
    assert not re.findall(r"""["'](root|uproot|replay)["']""", text)


def test_each_point_forks_from_its_engines_payload() -> None:
    assert payload_engine(Point("x", engine="root")) == "root"
    assert payload_engine(Point("x", engine="uproot")) == "uproot"
    replayed = Point("replay", engine="replay", trace="agc")
    assert engine_of(replayed) is REGISTRY["replay"]
    assert payload_engine(replayed) == SPECS["replay"].payload == "uproot"  # no ROOT in it


def _site(auth: str) -> SiteConfig:
    return SiteConfig("s", "real", Path("s.yaml"), "", "", 1, 2, ("http", "xrootd"), "xrootd",
                      auth=auth)  # fmt: skip


def test_root_skips_rntuple_over_http_and_http_without_the_sites_auth(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = REGISTRY["root"]
    monkeypatch.setattr(engine_rntuple, "xrdclhttp_available", lambda: True)
    http = Point("format", layout="rntuple", protocol="http")
    assert root.skip_reason(http, QUICK) == engine_rntuple.NO_HTTP
    assert root.skip_reason(replace(http, layout="ordered"), QUICK) is None
    assert root.skip_reason(replace(http, protocol="xrootd"), QUICK) is None
    monkeypatch.setattr("instore.sweep.engines.http_auth_problem", lambda auth: f"no {auth}")
    assert root.site_reason(http, _site("token")) == "no token"
    assert root.site_reason(replace(http, protocol="xrootd"), _site("token")) is None
    assert REGISTRY["uproot"].site_reason(replace(http, engine="uproot"), _site("token")) is None
    assert root.threads_reason(replace(http, threads=4)) is None


def test_uproot_runs_format_points_at_the_first_cache_setting_only() -> None:
    uproot = REGISTRY["uproot"]
    first = Point("format", engine="uproot", cache_mb=0)
    assert uproot.skip_reason(first, QUICK) is None
    assert uproot.skip_reason(replace(first, cache_mb=None), QUICK) == (
        "uproot has no client cache: its format points run at the first cache_mb only"
    )
    assert uproot.skip_reason(Point("cache", engine="uproot", cache_mb=2.0), QUICK) is None
    assert uproot.threads_reason(replace(first, threads=2)) is None


def test_a_replay_reads_in_place_and_has_no_threads() -> None:
    replay = REGISTRY["replay"]
    point = Point("replay", engine="replay", trace="agc", protocol="stage-in")
    assert replay.skip_reason(point, QUICK) == (
        "a replay reads in place; stage-in copies the file first")  # fmt: skip
    for protocol in IN_PLACE:
        assert replay.skip_reason(replace(point, protocol=protocol), QUICK) is None
    assert replay.threads_reason(replace(point, threads=2)) == (
        "a replay sends the recorded job's requests: it has no threads of its own")  # fmt: skip
    assert replay.threads_reason(point) is None
    assert plan.threads_skip_reason(replace(point, threads=2), cores=8) == (
        replay.threads_reason(replace(point, threads=2)))  # fmt: skip

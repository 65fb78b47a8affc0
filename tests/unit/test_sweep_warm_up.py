"""The sweep's warm-up job reads over the first point's own protocol: the jobs' container sees
what the points read and no more (seen: a sweep of xrootd points only, on a site that also
offers posix, warmed up over posix, found no file, and fell back to a 10 s alignment)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace
from typing import Any

from instore.study import Point, load_study
from instore.sweep import plan, runner


class _Submitted(Exception):
    pass


class _Client:
    def __init__(self) -> None:
        self.jobs: list[Any] = []

    def submit(self, fn: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        self.jobs.append(job)
        raise _Submitted


class _Live:
    protocols = ("posix", "xrootd", "http")

    def url(self, protocol: str, file: str) -> str:
        return {"posix": f"/disk/{file}", "xrootd": f"root://se//{file}",
                "http": f"http://se/{file}"}[protocol]  # fmt: skip


def _warm_up_url(point: Point) -> str:
    client = _Client()
    study = load_study(overrides={"profile": "quick"})
    opts = SimpleNamespace(study=study, launch="fork")
    run = SimpleNamespace(opts=opts, live=_Live(), client=client, workers=["w"],
                          inputs=plan.Inputs(study),
                          target=None, access=None, startup=None)  # fmt: skip
    with contextlib.suppress(_Submitted):  # the job is all this test looks at
        runner._warm_up(run, point)  # type: ignore[arg-type]
    (job,) = client.jobs
    return job.argv[2]


def test_an_xrootd_sweep_warms_up_over_xrootd() -> None:
    assert _warm_up_url(Point(section="load", protocol="xrootd")).startswith("root://se//")


def test_a_posix_sweep_warms_up_over_posix() -> None:
    assert _warm_up_url(Point(section="layout", protocol="posix")).startswith("/disk/")


def test_a_protocol_the_site_lacks_falls_back_to_its_first() -> None:
    assert _warm_up_url(Point(section="caching", protocol="xcache")).startswith("/disk/")


def test_warm_payloads_compile_the_loops_of_the_formats_the_points_read_only() -> None:
    """A sweep of TTrees starts no RNTuple loop (2 s of cling per warm payload); one of both
    formats, or of a site's own dataset (whose files may hold either), starts both."""
    trees = [Point(section="layout", layout=name) for name in ("ordered", "unordered")]
    ntuple = Point(section="format", layout="rntuple-small")
    generated = plan.Inputs(load_study(overrides={"profile": "quick"}))
    assert generated.formats(trees) == ("ttree",)
    assert generated.formats([ntuple]) == ("rntuple",)
    assert generated.formats([ntuple, *trees]) == ("ttree", "rntuple")
    own = plan.Inputs(generated.study, dataset=object())  # type: ignore[arg-type]
    assert own.formats(trees) == ("ttree", "rntuple")

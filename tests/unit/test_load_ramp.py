"""The load ramp's guard (the site file's ``load:``): a point never runs more clients than the
site allows, the load section's points run in increasing order of clients, and the ramp stops
after the first point whose opens are too slow or whose jobs fail too often, skipping the
points above with the reason; a resumed sweep stops at the same place."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from instore.errors import InstoreError
from instore.site import load_site
from instore.site.loadguard import REAL_DEFAULTS, STOP_COLUMN, LoadGuard, load_guard
from instore.study import Point, load_study
from instore.sweep import runner
from instore.sweep.options import SweepOptions, SweepSummary
from instore.sweep.plan import plan
from instore.sweep.ramp import Ramp, clients_skip_reason, ramp_order, stop_reason
from instore.sweep.store import RecordStore

from tests.conftest import write_real_site


def _rows(opens_s: list[float], failed: int = 0) -> list[dict[str, Any]]:
    ok = [{"status": "ok", "open_s": s} for s in opens_s]
    return ok + [{"status": "failed", "open_s": None}] * failed


def test_slow_opens_stop_the_ramp_naming_the_p95_the_limit_and_the_clients() -> None:
    guard = LoadGuard(stop_p95_open_ms=500)
    assert stop_reason(_rows([0.812] * 16), guard, 16) == (
        "stopped: p95 open 812 ms > 500 ms at 16 clients"
    )
    assert stop_reason(_rows([0.1] * 15 + [0.9]), guard, 16) is None  # one slow open: p95 300 ms
    assert stop_reason(_rows([0.1] * 14 + [0.9] * 2), guard, 16) is not None


def test_failed_jobs_beyond_the_rate_stop_the_ramp() -> None:
    guard = LoadGuard(stop_error_rate=0.1)
    assert stop_reason(_rows([0.1] * 9, failed=1), guard, 10) is None  # 10%: not beyond
    assert stop_reason(_rows([0.1] * 8, failed=2), guard, 10) == (
        "stopped: 2 of 10 jobs failed (20% > 10%) at 10 clients"
    )
    assert stop_reason(_rows([9.0] * 8, failed=2), LoadGuard(), 10) is None  # no rule: no stop


def test_a_point_with_more_clients_than_the_site_allows_is_skipped() -> None:
    guard = LoadGuard(max_clients=16)
    assert clients_skip_reason(Point("load", fill=16), guard) is None
    assert clients_skip_reason(Point("load", fill=64), guard) == (
        "64 clients at once, more than the site's load.max_clients 16"
    )
    assert clients_skip_reason(Point("load", fill=64), LoadGuard()) is None


def test_real_sites_get_conservative_limits_emulated_ones_none(tmp_path: Path) -> None:
    assert load_guard(None, emulated=False) == LoadGuard(**REAL_DEFAULTS)
    assert load_guard(None, emulated=True) == LoadGuard()
    assert load_guard({"max_clients": 4}, emulated=False).stop_p95_open_ms == 500
    assert load_site("lan-hdd").load == LoadGuard()
    assert load_site("example-real").load.max_clients == 16
    path = write_real_site(tmp_path / "local.yaml", {"posix": "/tmp/{file}"})
    site = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**site, "load": {"max_clients": 0}}))
    with pytest.raises(InstoreError, match=r"load\.max_clients"):
        load_site(path)


def test_the_ramp_keeps_the_lowest_stop_and_skips_from_there_on() -> None:
    ramp = Ramp(LoadGuard(stop_p95_open_ms=500))
    assert ramp.observe(Point("load", fill=16), _rows([0.9] * 16)) is not None
    assert ramp.observe(Point("load", fill=4), _rows([0.6] * 4)) is not None
    assert ramp.skip_reason(Point("load", fill=1)) is None
    assert ramp.skip_reason(Point("load", fill=4, protocol="http")) == (
        "stopped: p95 open 600 ms > 500 ms at 4 clients"
    )
    assert ramp.observe(Point("jobfill", fill=8), _rows([9.0] * 8)) is None  # not a ramp
    assert ramp.skip_reason(Point("jobfill", fill=8)) is None


def test_the_load_points_run_in_increasing_order_of_clients_in_their_places() -> None:
    todo = [(Point("layout"), "a"), (Point("load", fill=64), "b"), (Point("load", fill=1), "c"),
            (Point("cache"), "d"), (Point("load", fill=16), "e")]  # fmt: skip
    assert [key for _, key in ramp_order(todo)] == ["a", "c", "e", "d", "b"]


# --- through the sweep's loop: planned, measured, stopped, resumed ----------------------------


def _opts(tmp_path: Path, load: dict[str, Any]) -> SweepOptions:
    grid = {"fill": [16, 1, 4, 8], "protocol": ["posix"]}
    prof = {"sites": ["local"], "files": {"size_mb": 1, "replicas": 1, "seed": 1},
            "sections": {"load": grid}}  # fmt: skip
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": prof}}))
    data = tmp_path / "files"
    data.mkdir(exist_ok=True)
    (data / "ordered-r0.root").write_bytes(b"")
    path = write_real_site(tmp_path / "local.yaml", {"posix": f"{data}/{{file}}"})
    site = yaml.safe_load(path.read_text())
    site["workers"]["cores"] = 16
    path.write_text(yaml.safe_dump({**site, "load": load}))
    return SweepOptions(study=load_study(tmp_path / "study.yaml"), site=str(path),
                        sections=["load"], data=data, results=tmp_path / "results",
                        progress=False)  # fmt: skip


def _sweep(opts: SweepOptions, open_s: dict[int, float]) -> tuple[SweepSummary, list[int]]:
    """The runner's loop over the plan, a point's clients opening in ``open_s[clients]``."""
    planned = plan(opts, runner.load_site(opts.site))
    store, ran = RecordStore(opts.results, "local"), []

    def run_point(run: Any, point: Point, key: str, repaired: Any) -> list[dict[str, Any]]:
        ran.append(point.jobs)
        return [{"point_key": key, "job": j, "jobs": point.jobs, "section": "load",
                 "measured_at": "2026-01-01", "status": "ok", "open_s": open_s[point.jobs]}
                for j in range(point.jobs)]  # fmt: skip

    summary = SweepSummary("local", skipped=dict(planned.skipped))
    live = SimpleNamespace(config=SimpleNamespace(name="local"), heal=list)
    run = SimpleNamespace(live=live, summary=summary, opts=opts, workers=["w"], cores=None,
                          series=planned.series, noise=None, store=store, ramp=planned.ramp)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "_run_point", run_point)
        runner._measure(run, planned.todo)  # type: ignore[arg-type]
    return summary, ran


def test_the_sweep_stops_the_ramp_where_opens_slow_and_a_rerun_stops_there_too(
    tmp_path: Path,
) -> None:
    opts = _opts(tmp_path, {"max_clients": 64, "stop_p95_open_ms": 500})
    opens = {1: 0.05, 4: 0.8, 8: 1.5, 16: 3.0}
    summary, ran = _sweep(opts, opens)
    reason = "stopped: p95 open 800 ms > 500 ms at 4 clients"
    assert ran == [1, 4]  # increasing, and nothing above the stop
    assert summary.skipped == {reason: 2}
    records = RecordStore(opts.results, "local").records()
    assert {r.get(STOP_COLUMN) for r in records if r["jobs"] == 4} == {reason}
    assert all(STOP_COLUMN not in r for r in records if r["jobs"] == 1)
    again = plan(opts, runner.load_site(opts.site))  # resumed: the records say where it stopped
    assert again.todo == [] and again.skipped == {reason: 2}


def test_max_clients_keeps_a_point_off_the_site_before_anything_runs(tmp_path: Path) -> None:
    opts = _opts(tmp_path, {"max_clients": 8})
    summary, ran = _sweep(opts, {1: 0.05, 4: 0.1, 8: 0.2, 16: 0.3})
    assert ran == [1, 4, 8]
    assert summary.skipped == {"16 clients at once, more than the site's load.max_clients 8": 1}


def test_the_load_page_names_where_the_ramp_stopped() -> None:
    import pandas as pd
    from instore.report.load import ramp_stops

    reason = "stopped: p95 open 812 ms > 500 ms at 16 clients"
    rows = pd.DataFrame({"jobs": [1, 16, 16], STOP_COLUMN: [None, reason, reason]})
    assert ramp_stops(rows) == [reason]
    assert ramp_stops(rows.drop(columns=[STOP_COLUMN])) == []  # records from before the rule

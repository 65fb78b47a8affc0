"""Traces are kept under the site they were recorded on (``traces/<site>/<name>``): a study of
a real site in a checkout that ran the default study records its own and leaves the traces the
emulated sites' replay points were measured with as they were (seen: a real-site study
re-recorded them in place, and the reference run's points, predicted against the new traces,
came out 9 of 51 within 10% instead of 48)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from instore.filenames import choose_recording, recorded_traces, trace_dir, traces_dir
from instore.predict.validate import TraceFinder, measured_points
from instore.replay.trace import load_trace
from instore.study import load_study
from instore.sweep.options import SweepOptions

from tests.unit.test_predict_model import small_reads, write_trace
from tests.unit.test_report_pipeline import dry_run

REPO = Path(__file__).resolve().parents[2]


def _record(data: Path, site: str, name: str, reads: int) -> Path:
    """A trace of ``reads`` small reads, as `instore record --site SITE` writes it."""
    where = trace_dir(data, site, name)
    where.parent.mkdir(parents=True, exist_ok=True)
    path = write_trace(where.parent, small_reads(reads), name=name)
    meta = json.loads((path / "trace.json").read_text())
    meta["recorded_on"] = {"site": site, "protocol": "xrootd", "files": ["f.root"]}
    (path / "trace.json").write_text(json.dumps(meta))
    return path


def _recorded_by_rule(output: str) -> set[str]:
    return set(re.findall(r"rule record_trace:\n(?:\s+\w+: .*\n)*?\s+output: (\S+)", output))


def test_a_real_site_study_records_its_traces_beside_the_emulated_sites_not_over_them(
    tmp_path: Path,
) -> None:
    emulated = dry_run(tmp_path, "profile=quick", "runtime=none")
    real = dry_run(tmp_path, "profile=quick", "runtime=none", "sites=[example-real]",
                   "calibrate=false")  # fmt: skip
    assert emulated.returncode == 0 and real.returncode == 0, real.stderr[-2000:]
    ours, theirs = _recorded_by_rule(emulated.stdout), _recorded_by_rule(real.stdout)
    assert ours and {Path(p).parent.name for p in ours} == {"lan-ssd"}
    assert theirs and {Path(p).parent.name for p in theirs} == {"example-real"}
    assert not ours & theirs  # the real site's recordings never overwrite lan-ssd's


def test_the_sweep_replays_the_traces_it_is_given_else_those_of_the_traces_own_site(
    tmp_path: Path,
) -> None:
    study = load_study(REPO / "config" / "study.yaml", {"profile": "quick"})
    name = next(iter(study.traces))
    data = tmp_path / "files"
    default = SweepOptions(study=study, site="lan-hdd", sections=["replay"], data=data)
    assert default.trace(name) == data / "traces" / study.trace(name).site / name
    given = trace_dir(data, "mysite", name)
    assert SweepOptions(study=study, site="mysite", sections=["replay"], data=data,
                        traces=(given,)).trace(name) == given  # fmt: skip


def test_a_replayed_point_is_predicted_from_the_recording_it_replayed(tmp_path: Path) -> None:
    """Two recordings of one analysis (lan-ssd's and a real site's): each site's records name
    theirs (the trace summary's ``recorded_on``), and validation compiles that one."""
    data = tmp_path / "files"
    ssd, mine = _record(data, "lan-ssd", "agc", 300), _record(data, "mysite", "agc", 30)
    assert load_trace(mine).summary()["recorded_on"] == "mysite"
    found = recorded_traces(traces_dir(data))
    assert found == {"agc": {"lan-ssd": ssd, "mysite": mine}}
    finder = TraceFinder(traces_dir(data))
    assert finder("agc", "mysite").reads == 30  # type: ignore[union-attr]
    assert finder("agc", "lan-ssd").reads == 300  # type: ignore[union-attr]
    rows = [{"section": "replay", "trace": "agc", "protocol": "xrootd", "status": "ok",
             "point_key": k, "job": 0, "wall_s": 1.0, "passes": 1.0,
             "recorded": {"recorded_on": site}}
            for k, site in (("a", "mysite"), ("b", "lan-ssd"))]  # fmt: skip
    assert sorted(p["recorded_on"] for p in measured_points(rows)) == ["lan-ssd", "mysite"]
    # a point is never predicted from another site's recording than the one it replayed
    assert finder("agc", "elsewhere") is None


def test_a_sweep_by_hand_takes_a_trace_only_where_it_is_unambiguous(tmp_path: Path) -> None:
    """Without --traces: the recording on the trace's study site, else the only one; two
    recordings elsewhere choose neither (the plan then names where it expects one)."""
    study = load_study(REPO / "config" / "study.yaml", {"profile": "quick"})
    name = next(iter(study.traces))
    data = tmp_path / "files"
    opts = SweepOptions(study=study, site="mysite", sections=["replay"], data=data)
    expected = trace_dir(data, study.trace(name).site, name)
    assert opts.trace(name) == expected  # none recorded
    mine = _record(data, "mysite", name, 3)
    assert opts.trace(name) == mine  # the only recording
    _record(data, "other", name, 3)
    assert opts.trace(name) == expected  # two elsewhere: neither
    ssd = _record(data, study.trace(name).site, name, 3)
    assert opts.trace(name) == ssd


def test_traces_kept_flat_by_an_earlier_checkout_are_still_found(tmp_path: Path) -> None:
    flat = write_trace(tmp_path, small_reads(5), name="old")
    found = recorded_traces(tmp_path)
    assert found == {"old": {"": flat}}
    assert choose_recording(found["old"], ["lan-ssd"]) == flat
    assert TraceFinder(tmp_path)("old", "lan-ssd") is not None
    assert TraceFinder(tmp_path)("missing") is None

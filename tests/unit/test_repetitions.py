"""Adaptive repetitions: the rule (agreeing runs stop at min, noisy ones go on to the cap, an
expensive point stays at one, a plain count is fixed), the study file's form and its errors,
and a sweep that plans, measures and resumes repetitions from its records alone."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from instore.errors import InstoreError
from instore.study import load_study
from instore.study.config import Repetitions
from instore.summary.interval import median_interval
from instore.sweep import runner
from instore.sweep.adaptive import Run, decide, run_of
from instore.sweep.dryrun import runs_at_most
from instore.sweep.noise import NoiseMonitor
from instore.sweep.options import SweepOptions, SweepSummary
from instore.sweep.plan import plan
from instore.sweep.store import RecordStore

from tests.conftest import write_real_site

ADAPTIVE = Repetitions(2, 5, 0.05)
NOISY = [1.0, 1.5, 0.8, 1.3, 0.9, 1.1]


def _runs(values: list[float], longest: float | None = None) -> list[Run]:
    return [Run(v, longest or v) for v in values]


def _stops_after(rule: Repetitions, values: list[float], expensive_s: float | None = None) -> int:
    """How many of ``values`` the rule measures before it stops."""
    for n in range(1, len(values) + 1):
        if not decide(rule, _runs(values[:n]), expensive_s).more:
            return n
    raise AssertionError("the rule never stopped")


def test_a_point_whose_runs_agree_stops_at_min() -> None:
    assert _stops_after(ADAPTIVE, [2.00, 2.02, 2.01]) == 2
    assert "within target" in decide(ADAPTIVE, _runs([2.00, 2.02])).reason


def test_a_noisy_point_goes_on_to_max() -> None:
    assert _stops_after(ADAPTIVE, NOISY) == 5
    assert "cap of 5 reached" in decide(ADAPTIVE, _runs(NOISY[:5])).reason
    assert decide(ADAPTIVE, _runs(NOISY[:3])).more


def test_a_budget_lets_a_cheap_noisy_point_go_on_and_stops_a_costly_one() -> None:
    """The lan-ssd points that ended wider than 5% at a cap of 8 runs were sub-second: a budget
    of job time lets them run on, while a point of seconds stops when its runs reach it."""
    rule = Repetitions(2, 24, 0.05, budget_s=8)
    cheap = [0.5 * v for v in NOISY * 4]  # 0.4-0.75 s, as noisy as ever
    assert _stops_after(rule, cheap) == 15  # 15 runs reach 8 s (8 stopped them at the cap)
    assert "budget of 8 s spent (8.2 s)" in decide(rule, _runs(cheap[:15])).reason
    costly = [3.0, 4.5, 3.3, 4.0]
    assert _stops_after(rule, costly) == 3  # 10.8 s (a cap of 8 would have let it run 8)
    assert _stops_after(rule, [0.50, 0.51, 0.50]) == 2  # agreeing runs stop at min, as before
    # at least min runs, whatever they cost
    assert decide(Repetitions(3, 24, 0.05, budget_s=1), _runs([4.0, 4.4])).more


def test_the_dry_run_counts_a_budgeted_points_runs_at_most_as_its_budget_allows() -> None:
    rule = Repetitions(2, 24, 0.05, budget_s=8)
    assert [runs_at_most(rule, w) for w in (0.1, 0.5, 1.0, 3.0, 60.0)] == [24, 16, 8, 3, 2]
    assert runs_at_most(Repetitions(2, 8), 0.1) == 8


def test_runs_that_agree_while_their_jobs_spread_go_on_as_the_report_interval_says() -> None:
    """A jobfill point: two runs with the same median job, but jobs 20% apart within each. The
    report's interval resamples the jobs too, so the rule judges that interval, not the runs'
    medians alone (which agree exactly)."""
    rows = [[{"status": "ok", "wall_s": w} for w in (1.0, 1.1, 1.2)] for _ in range(2)]
    runs = [run_of(r) for r in rows]
    assert runs[0].value == runs[1].value == 1.1
    jobs = median_interval([r.values() for r in runs])
    assert jobs.half_width > ADAPTIVE.target
    assert decide(ADAPTIVE, runs).more, "the jobs' spread keeps the interval wide"
    agreeing = [run_of([{"status": "ok", "wall_s": w} for w in (1.0, 1.01)]) for _ in range(2)]
    assert not decide(ADAPTIVE, agreeing).more


def test_an_expensive_point_stops_at_one_and_is_labelled() -> None:
    first = [Run(90.0, 95.0)]
    decision = decide(ADAPTIVE, first, expensive_s=60)
    assert not decision.more and "expensive" in decision.reason and "95 s" in decision.reason
    assert decide(ADAPTIVE, [Run(50.0, 55.0)], expensive_s=60).more  # below the line: repeated
    assert decide(ADAPTIVE, first, expensive_s=None).more  # no line drawn: nothing is expensive


def test_a_plain_integer_is_a_fixed_count(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path, repetitions=3))
    rule = study.rule_of(None, "layout")
    assert rule == Repetitions(3, 3) and not rule.adaptive and rule.text() == "fixed 3"
    assert _stops_after(rule, NOISY) == 3  # noisy or not
    assert _stops_after(rule, [1.0, 1.0, 1.0, 1.0]) == 3  # agreeing runs do not stop early


def test_a_repetition_with_failed_jobs_is_not_chased_beyond_min() -> None:
    runs = [Run(1.0, 1.0), Run(1.6, 1.6, failed=True)]
    assert decide(ADAPTIVE, runs[:1]).more
    assert "failed" in decide(ADAPTIVE, runs).reason and not decide(ADAPTIVE, runs).more


def test_the_judged_figure_is_the_median_wall_or_the_event_rate_in_fixed_time() -> None:
    rows = [
        {"status": "ok", "wall_s": 1.0, "event_rate_hz": 100.0},
        {"status": "ok", "wall_s": 3.0, "event_rate_hz": 300.0},
        {"status": "ok", "wall_s": 2.0, "event_rate_hz": 200.0},
        {"status": "failed", "wall_s": 9.0, "event_rate_hz": None},
    ]
    run = run_of(rows)
    assert run.value == 2.0 and run.longest_s == 9.0 and run.failed
    assert run_of(rows[:3], fixed_time=True).value == 200.0
    assert math.isnan(run_of([{"status": "failed", "wall_s": None}]).value)


# --- the study file -------------------------------------------------------------------------


def _study(tmp_path: Path, repetitions: Any = None, section: Any = None, fileset: Any = None,
           **profile: Any) -> Path:  # fmt: skip
    grid: dict[str, Any] = {"layout": ["ordered"], "protocol": ["posix"]}
    if section is not None:
        grid["repetitions"] = section
    prof: dict[str, Any] = {
        "sites": ["local"],
        "files": {"size_mb": 1, "replicas": 1, "seed": 1},
        "sections": {"layout": grid, "scale": {"fileset": ["big"], "protocol": ["posix"]}},
        "filesets": {"big": {"like": "cms-nanoaod", "size_mb": 1, "replicas": 1}},
        **profile,
    }
    if repetitions is not None:
        prof["repetitions"] = repetitions
    if fileset is not None:
        prof["filesets"]["big"]["repetitions"] = fileset
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": prof}}))
    return path


def test_the_rule_is_accepted_in_profile_section_and_file_set(tmp_path: Path) -> None:
    rule = {"min": 2, "max": 4, "target": 0.1}
    study = load_study(_study(tmp_path, repetitions=rule, expensive_s=30))
    assert study.repetitions == Repetitions(2, 4, 0.1) and study.expensive_s == 30
    assert study.rule_of(None, "layout").text() == "2-4 to 10%"
    study = load_study(_study(tmp_path, section={"min": 3, "max": 6}, fileset={"min": 1, "max": 2}))
    assert study.repetitions == Repetitions(1, 1)  # the default: once
    assert study.rule_of(None, "layout") == Repetitions(3, 6, 0.05)  # target defaults to 5%
    assert study.rule_of("big", "scale") == Repetitions(1, 2)  # the file set's own wins
    assert study.repetitions_of(None, "layout") == 6  # expand goes up to the cap


def test_the_shipped_profiles_repeat_as_documented() -> None:
    full = load_study(overrides={"profile": "full"})
    assert full.repetitions == Repetitions(2, 24, 0.05, 8.0) and full.expensive_s == 60
    assert full.rule_of(None, "jobfill") == Repetitions(2, 12, 0.05, 8.0)
    assert full.rule_of(None, "layout").text() == "2-24 to 5% within 8 s"
    assert full.rule_of(None, "caching") == Repetitions(1, 1)
    assert full.rule_of("nano1g", "scale") == Repetitions(1, 1)
    quick = load_study(overrides={"profile": "quick"})
    assert quick.repetitions == Repetitions(1, 1) and quick.expensive_s is None


BAD = [
    ("a-word", {"repetitions": "two"}, "profiles.t.repetitions:", "{min: 2, max: 5, target: 0.05}"),
    ("a-list", {"section": [2, 5]}, "sections.layout.repetitions:", "repetitions: 2"),
    ("no-max", {"repetitions": {"min": 2}}, "'max' is a required", "{min: 2, max: 5"),
    ("typo", {"fileset": {"mni": 2, "max": 3}}, "filesets.big.repetitions:", "{min: 2, max: 5"),
    ("target-percent", {"repetitions": {"min": 2, "max": 5, "target": 5}}, "repetitions.target",
     "a fraction between 0 and 1"),
    ("min-above-max", {"section": {"min": 5, "max": 2}}, "min 5 is more than max 2",
     "give max at least min"),
    ("budget-negative", {"repetitions": {"min": 2, "max": 5, "budget_s": -1}},
     "repetitions.budget_s", "give the seconds of job time"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "given", "field", "fix"), BAD, ids=[b[0] for b in BAD])
def test_a_malformed_rule_is_one_line_naming_the_key_and_the_fix(
    tmp_path: Path, name: str, given: dict[str, Any], field: str, fix: str
) -> None:
    path = _study(tmp_path, **given)
    with pytest.raises(InstoreError) as err:
        load_study(path)
    text = str(err.value)
    assert "\n" not in text and str(path) in text and " -- " in text, text
    assert field in text and fix in text.split(" -- ", 1)[1], text


# --- planned, measured and resumed from the records -----------------------------------------


def _opts(tmp_path: Path, rule: dict[str, Any], expensive_s: float | None = None) -> SweepOptions:
    extra = {} if expensive_s is None else {"expensive_s": expensive_s}
    study = load_study(_study(tmp_path, section=rule, **extra))
    data = tmp_path / "files"
    data.mkdir(exist_ok=True)
    (data / "ordered-r0.root").write_bytes(b"")
    return SweepOptions(study=study, site=str(write_real_site(tmp_path / "local.yaml",
                        {"posix": f"{data}/{{file}}"})), sections=["layout"], data=data,
                        results=tmp_path / "results", progress=False)  # fmt: skip


def _planned(opts: SweepOptions) -> runner.Plan:
    return plan(opts, runner.load_site(opts.site))


def _record(key: str, repetition: int, wall: float, day: int = 1) -> dict[str, Any]:
    return {"point_key": key, "job": 0, "jobs": 1, "measured_at": f"2026-01-{day:02d}",
            "section": "layout", "repetition": repetition, "status": "ok", "wall_s": wall}  # fmt: skip


def _measure(
    opts: SweepOptions, walls: list[float], noise: NoiseMonitor | None = None
) -> tuple[runner.Plan, list[dict[str, Any]]]:
    """Run the runner's loop over the plan, each repetition's job taking the next wall."""
    planned = _planned(opts)
    store = RecordStore(opts.results, "local")
    taken = iter(walls)

    def run_point(run: Any, point: Any, key: str, repaired: Any) -> list[dict[str, Any]]:
        return [_record(key, point.repetition, next(taken))]

    live = SimpleNamespace(config=SimpleNamespace(name="local"), heal=list)
    run = SimpleNamespace(live=live, summary=SweepSummary("local"), opts=opts, workers=["w"],
                          series=planned.series, noise=noise, store=store, cores=None,
                          ramp=planned.ramp)  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "_run_point", run_point)
        runner._measure(run, planned.todo)  # type: ignore[arg-type]
    return planned, store.records()


def test_the_sweep_measures_until_the_rule_stops_and_labels_each_record(tmp_path: Path) -> None:
    opts = _opts(tmp_path, {"min": 2, "max": 4})
    planned, records = _measure(opts, [1.0, 1.5, 0.8, 1.2, 9.9])
    assert len(planned.todo) == 1 and len(planned.keys) == 4  # one at a time, keys to the cap
    assert [r["repetition"] for r in records] == [0, 1, 2, 3]
    assert {r["repetitions_rule"] for r in records} == {"2-4 to 5%"}
    assert records[-1]["repetitions_decision"].startswith("cap of 4 reached")
    assert not any(r["expensive"] for r in records)


def test_an_expensive_first_run_is_the_only_one_and_says_so(tmp_path: Path) -> None:
    opts = _opts(tmp_path, {"min": 2, "max": 4}, expensive_s=60)
    _, records = _measure(opts, [75.0, 75.0])
    assert len(records) == 1 and records[0]["expensive"] is True
    assert records[0]["repetitions_rule"] == "2-4 to 5%, once above 60 s"


def test_a_rerun_keeps_what_exists_and_continues_a_wide_point(tmp_path: Path) -> None:
    opts = _opts(tmp_path, {"min": 2, "max": 4})
    first = _planned(opts)
    keys = first.series[first.todo[0][1]].keys  # repetition r's key at index r
    store = RecordStore(opts.results, "local")
    store.append([_record(keys[0], 0, 1.0)])  # a sweep killed after its first repetition
    again = _planned(opts)
    assert again.already == 1 and [p.repetition for p, _ in again.todo] == [1]
    store.append([_record(keys[1], 1, 1.01)])  # the two agree: nothing more to measure
    assert _planned(opts).todo == [] and _planned(opts).already == 2
    store.append([_record(keys[1], 1, 1.6, day=2)])  # remeasured later, and wide: on to the third
    _, records = _measure(opts, [1.3, 1.31])
    assert [r["point_key"] for r in records[-2:]] == keys[2:]
    assert _planned(opts).todo == []  # at the cap
    assert _planned(replace(opts, force=True)).todo[0][0].repetition == 0  # --force: anew


def test_each_record_keeps_the_last_machine_probe_before_its_point(tmp_path: Path) -> None:
    # the probe at 8% is taken again (11%) and the nearer kept
    figures = iter([(0.010, 0.02)] * 3 + [(0.0108, 0.02), (0.0111, 0.02), (0.010, 0.02)])
    clock = iter([0.0, 10.0, 70.0, 75.0, 80.0, 85.0])  # the second point finds a probe due
    monitor = NoiseMonitor(tmp_path, "local", every_s=60, measure=lambda: next(figures),
                           clock=lambda: next(clock))  # fmt: skip
    baseline = monitor.start()
    _, records = _measure(_opts(tmp_path, {"min": 2, "max": 2}), [1.0, 1.0], noise=monitor)
    assert [r["noise_drift"] for r in records] == [0.0, pytest.approx(0.08)]
    assert [r["noise_flagged"] for r in records] == [False, True]
    assert {r["noise_sweep"] for r in records} == {baseline.at}

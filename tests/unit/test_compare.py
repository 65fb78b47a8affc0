"""instore compare: two runs' points matched and their changes judged, on synthetic summaries
(and once on summaries computed from real records); bad input is one line with its fix."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml
from instore.cli import main
from instore.errors import InstoreError
from instore.report import baseline as rb
from instore.report.command import NOTEBOOKS
from instore.report.execute import error_outputs, execute, render
from instore.study.config import load_study
from instore.summary import baseline
from instore.summary.compare_cmd import write
from instore.summary.results import DEFAULT_NOISE, compare_dirs
from instore.summary.stats import GROUP, INTERVAL_METRICS

from tests.cli import CliMain
from tests.unit.data.records import rows, write_results

SITE = "lan-hdd"


def point(section: str = "layout", runs: int = 3, scale: float = 1.0, spread: float = 0.01,
          **knobs: object) -> dict[str, object]:  # fmt: skip
    """One summary row: ``runs`` repetitions of one job, their walls 10 s times ``scale``,
    spread evenly by +-``spread``; CPU
    efficiency and events/s move the other way, as they do for an I/O-bound job."""
    row: dict[str, object] = {c: None for c in GROUP}
    row.update(
        site=SITE,
        section=section,
        layout="unordered",
        protocol="posix",
        engine="root",
        branches="all",
        entry_fraction=1.0,
        cpu_us=0.0,
        fill=1,
        nodes=1,
        fixed_time_s=0.0,
    )
    row.update(knobs)  # fmt: skip
    noise = np.linspace(1 - spread, 1 + spread, runs) if runs > 1 else np.ones(1)
    values = {"wall_s": 10.0 * scale * noise, "cpu_efficiency": 0.5 / scale / noise,
              "event_rate_hz": 1000.0 / scale / noise, "mb_per_s": 50.0 / scale / noise}  # fmt: skip
    for metric in INTERVAL_METRICS:
        row[f"{metric}_runs"] = [[float(v)] for v in values[metric]]
    return row


def frame(*points: dict[str, object]) -> pd.DataFrame:
    return pd.DataFrame(list(points))


def two_points(scale: float = 1.0, spread: float = 0.01) -> tuple[pd.DataFrame, pd.DataFrame]:
    cpu_bound = {"section": "jobfill", "layout": "ordered", "cpu_us": 300.0}
    a = frame(point(cache_mb=0.0), point(**cpu_bound))
    b = frame(point(cache_mb=0.0, scale=scale, spread=spread), point(**cpu_bound))
    return a, b


def test_identical_results_leave_every_point_unchanged() -> None:
    a, _ = two_points()
    table = baseline.compare(a, a)
    assert (table["present"] == baseline.BOTH).all() and len(table) == 2
    assert (table["change"] == "unchanged").all()
    for figure in baseline.COMPARED:
        assert (table[f"{figure.metric}_after_before"] == 1).all()
        assert (table[f"{figure.metric}_change"] == "unchanged").all()


def test_a_point_30_percent_slower_with_tight_intervals_is_slower() -> None:
    a, b = two_points(scale=1.3)
    table = baseline.compare(a, b)
    first = table.iloc[0]  # sorted by the size of the change: the slowed point leads
    assert first["section"] == "layout" and first["change"] == "slower"
    assert first["wall_s_after_before"] == pytest.approx(1.3, rel=0.05)
    assert first["wall_s_lo"] > 1 and first["wall_s_change"] == "slower"
    assert first["cpu_efficiency_hi"] < 1 and first["cpu_efficiency_change"] == "slower"
    assert first["event_rate_hz_change"] == "slower"
    assert table.iloc[1]["change"] == "unchanged"
    shown = baseline.readable(table)
    assert "wall time after/before [95% interval]" in shown.columns
    assert shown.iloc[0]["wall time after/before [95% interval]"].endswith("slower")


def test_overlapping_intervals_are_unchanged() -> None:
    a, b = two_points(scale=1.05, spread=0.15)  # 5% apart, runs spread by +-15%
    row = baseline.compare(a, b).iloc[0]
    assert row["wall_s_lo"] < 1 < row["wall_s_hi"]
    assert row["change"] == "unchanged"


def test_a_change_within_the_machine_noise_is_unchanged() -> None:
    a, b = two_points(scale=1.08)
    assert baseline.compare(a, b).iloc[0]["change"] == "slower"
    quiet = baseline.compare(a, b, noise=0.10).iloc[0]
    assert quiet["wall_s_lo"] > 1 and quiet["change"] == "unchanged"


def test_a_faster_point_and_a_mixed_one() -> None:
    a, b = two_points(scale=0.7)
    assert baseline.compare(a, b).iloc[0]["change"] == "faster"
    assert baseline.overall(["faster", "slower", "unchanged"]) == baseline.MIXED


def test_points_only_in_one_run_are_listed_not_dropped() -> None:
    a, b = two_points()
    a = pd.concat([a, frame(point(section="cache", cache_mb=2.0))], ignore_index=True)
    b = pd.concat([b, frame(point(cpu_us=500.0))], ignore_index=True)
    table = baseline.compare(a, b)
    assert list(table["present"]) == [baseline.BOTH] * 2 + [baseline.ONLY_A, baseline.ONLY_B]
    assert table.iloc[2]["section"] == "cache" and "cache_mb=2" in table.iloc[2]["point"]
    assert "cpu_us=500" in table.iloc[3]["point"]
    notes = baseline.unmatched(a, b)
    assert "section cache: only in A" in notes and "cpu_us 500: only in B" in notes


def test_a_knob_missing_from_an_older_summary_counts_as_unset() -> None:
    a, _ = two_points()
    older = a.drop(columns=["io_scheduler", "filesystem"])
    assert (baseline.compare(older, a)["present"] == baseline.BOTH).all()


def test_no_point_in_common_is_one_line_with_the_fix() -> None:
    a, _ = two_points()
    other = a.assign(site="wan")
    with pytest.raises(InstoreError, match="no point in common") as err:
        baseline.compare(a, other)
    assert "\n" not in str(err.value) and " -- " in str(err.value)


def test_a_point_on_one_measurement_has_no_interval() -> None:
    a = frame(point(runs=1))
    table = baseline.compare(a, frame(point(runs=1, scale=1.5)))
    assert table.iloc[0]["change"] == baseline.ONE_MEASUREMENT
    assert "one measurement; no interval" in baseline.readable(table).iloc[0, 4]
    with pytest.raises(InstoreError, match=r"rests on a single measurement.*repetitions"):
        baseline.require_intervals(table)


def test_a_point_without_a_successful_job_in_a_run_is_not_measured() -> None:
    a, b = two_points()
    for metric in INTERVAL_METRICS:
        b.at[1, f"{metric}_runs"] = []
    table = baseline.compare(a, b)
    assert table.set_index("section").loc["jobfill", "change"] == baseline.NOT_MEASURED
    with pytest.raises(InstoreError, match=r"no point in common .* has a successful job"):
        baseline.require_intervals(table[table["section"] == "jobfill"])


def summaries(tmp_path: Path, name: str, stats: pd.DataFrame) -> Path:
    results = tmp_path / name
    for site, part in stats.groupby("site"):
        (results / site).mkdir(parents=True)
        part.to_parquet(results / site / "summary.parquet", index=False)
    return results


def test_the_command_prints_a_table_and_writes_csv_and_parquet(
    tmp_path: Path, cli_main: CliMain
) -> None:
    a, b = two_points(scale=1.3)
    ra, rb = summaries(tmp_path, "a", a), summaries(tmp_path, "b", b)
    done = cli_main("compare", str(ra), str(rb), "--out", str(tmp_path / "c.csv"))
    code, out = done.returncode, done.stdout
    assert code == 0
    assert "2 points in common: 1 slower, 1 unchanged" in out
    assert "wall time after/before [95% interval]" in out and "events/s after/before" in out
    assert pd.read_csv(tmp_path / "c.csv")["change"].tolist() == ["slower", "unchanged"]
    table, _ = compare_dirs(ra, rb)
    write(table, tmp_path / "c.parquet")
    assert pd.read_parquet(tmp_path / "c.parquet")["present"].tolist() == ["both", "both"]
    with pytest.raises(InstoreError, match=r"\.csv or a \.parquet"):
        write(table, tmp_path / "c.txt")


def test_summaries_are_computed_from_section_tables_when_none_is_written(tmp_path: Path) -> None:
    records = rows().query("section in ['layout', 'jobfill']")  # points with intervals
    ra = write_results(tmp_path / "a", records)
    slow = records.copy()
    slowed = slow["section"] == "jobfill"
    slow.loc[slowed, "wall_s"] *= 1.3
    slow.loc[slowed, "cpu_efficiency"] /= 1.3
    rb = write_results(tmp_path / "b", slow)
    table, notes = compare_dirs(ra, rb)
    assert not (ra / "fixture-cold" / "summary.parquet").exists(), "nothing written into A"
    both = table[table["present"] == baseline.BOTH]
    assert set(both["site"]) == {"fixture-cold", "fixture-warm"} and not notes
    with_interval = both[~both["change"].isin([baseline.ONE_MEASUREMENT, baseline.NOT_MEASURED])]
    assert len(with_interval) and len(baseline.without_interval(table))
    slowed = with_interval["section"] == "jobfill"
    assert slowed.any() and (~slowed).any()
    assert (with_interval[slowed]["wall_s_change"] == "slower").all()
    assert (with_interval[~slowed]["change"] == "unchanged").all()
    same, _ = compare_dirs(ra, ra)
    assert set(same["change"]) == {"unchanged", baseline.ONE_MEASUREMENT}


def test_the_noise_recorded_with_a_point_is_the_change_it_must_exceed(tmp_path: Path) -> None:
    records = rows().query("section == 'jobfill'")
    ra = write_results(tmp_path / "a", records)
    slow = records.assign(wall_s=records["wall_s"] * 1.2)
    rb = write_results(tmp_path / "b", slow)
    judged = compare_dirs(ra, rb)[0].query(
        "present == 'both' and change not in ['one measurement', 'not measured']"
    )
    assert (judged["wall_s_change"] == "slower").all()
    assert (judged["noise"] == DEFAULT_NOISE).all()  # none recorded: the default threshold
    drifting = write_results(tmp_path / "c", slow.assign(noise_cpu_drift=0.25))
    quiet = compare_dirs(ra, drifting)[0].query(
        "present == 'both' and change not in ['one measurement', 'not measured']"
    )
    assert (quiet["noise"] == 0.25).all() and (quiet["wall_s_change"] == "unchanged").all()


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing", r"no such directory, so not a results directory -- give a directory"),
        ("empty", r"not a results directory \(no <site>/<section>.parquet"),
        ("site-dir", r"the directory of site lan-hdd, not a results directory -- give its parent"),
        ("site-a-only", r"site lan-hdd is in A only .* -- name a site both runs have"),
        ("no-site-in-common", r"no site in common \(A has lan-hdd; B has wan\)"),
        ("no-point", r"no point in common"),
        ("single", r"rests on a single measurement .* -- set `repetitions: 3`"),
    ],
)
def test_bad_input_is_one_line_naming_cause_and_fix(
    tmp_path: Path, cli_main: CliMain, case: str, message: str
) -> None:
    a, _ = two_points()
    ra = summaries(tmp_path, "a", a)
    other = {  # built for the case at hand only
        "site-a-only": lambda: summaries(tmp_path, "w", a.assign(site="wan")),
        "no-site-in-common": lambda: summaries(tmp_path, "w", a.assign(site="wan")),
        "no-point": lambda: summaries(tmp_path, "c", a.assign(section="cache")),
        "single": lambda: summaries(tmp_path, "s2", frame(point(runs=1))),
        "empty": lambda: (tmp_path / "empty").mkdir() or tmp_path / "empty",
        "missing": lambda: tmp_path / "nowhere",
        "site-dir": lambda: ra / SITE,
    }[case]()
    first = summaries(tmp_path, "s1", frame(point(runs=1))) if case == "single" else ra
    argv = [str(first), str(other), *(["--site", SITE] if case == "site-a-only" else [])]
    done = cli_main("compare", *argv)
    code, out, err = done.returncode, done.stdout, done.stderr
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("instore compare: error: ")
    assert re.search(message, lines[0]), lines[0]


def test_the_help_says_what_is_compared(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in ("wall time (wall_s)", "CPU efficiency (cpu_efficiency)",
                  "events/s (event_rate_hz)", "faster, slower or unchanged", "cpu_us"):  # fmt: skip
        assert words in text


def test_a_study_file_may_name_a_baseline(tmp_path: Path) -> None:
    study = yaml.safe_load((Path(__file__).parents[1] / "e2e" / "tiny-study.yaml").read_text())
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    assert load_study(path).baseline is None
    path.write_text(yaml.safe_dump({**study, "baseline": "results-before"}))
    assert load_study(path).baseline == Path("results-before")
    path.write_text(yaml.safe_dump({**study, "baseline": 3}))
    with pytest.raises(InstoreError, match="baseline"):
        load_study(path)


def test_the_baseline_page_shows_the_comparison_with_error_bars(tmp_path: Path) -> None:
    records = rows().query("section in ['layout', 'jobfill']")  # points with intervals
    before = write_results(tmp_path / "before", records)
    slowed = records["section"] == "jobfill"
    after_rows = records.assign(wall_s=records["wall_s"].where(~slowed, records["wall_s"] * 1.3))
    after = write_results(tmp_path / "after", after_rows)
    nb = nbformat.read(NOTEBOOKS / "baseline.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert all(not c.outputs and c.execution_count is None for c in code)
    params = {"site": "fixture-cold", "results": str(after), "baseline": str(before)}
    executed = execute(NOTEBOOKS / "baseline.ipynb", tmp_path / "b.ipynb", params)
    assert error_outputs(executed) == []
    page = render(executed, tmp_path / "b.html").read_text()
    assert 'id="fig-baseline"' in page and 'id="fig-baseline-table"' in page
    assert "wall time after/before [95% interval]" in page and "slower" in page
    elsewhere = rb.load("nosuch", after, before)  # the page says why, the report renders
    assert elsewhere.problem and elsewhere.problem.startswith("site nosuch is in neither run")


def test_a_hairs_breadth_change_is_no_winner_unless_asked_for(
    tmp_path: Path, cli_main: CliMain
) -> None:
    """Seen by hand on a GSI/TLS site: two sweeps of one setup a minute apart, CPU efficiency
    0.9995 against 1.0000 with an interval just clear of 1, was named faster with no threshold.
    By default a change must exceed the 5% a quiet machine varies by; --noise 0 names it."""
    records = rows().query("section == 'jobfill'")
    steady = records.groupby("point_key")["wall_s"].transform("median")  # jobs alike, as there
    ra = write_results(tmp_path / "a", records.assign(wall_s=steady))
    rb = write_results(tmp_path / "b", records.assign(wall_s=steady * 1.02))
    both = "present == 'both' and change not in ['one measurement', 'not measured']"
    quiet = compare_dirs(ra, rb)[0].query(both)
    assert len(quiet) and (quiet["wall_s_lo"] > 1).all(), "the interval excludes 1 by a hair"
    assert (quiet["change"] == "unchanged").all()
    named = cli_main("compare", str(ra), str(rb), "--noise", "0")
    assert named.returncode == 0 and "slower" in named.stdout
    default = cli_main("compare", str(ra), str(rb))
    assert default.returncode == 0 and "exceeds the noise: 5.0% (--noise)" in default.stdout

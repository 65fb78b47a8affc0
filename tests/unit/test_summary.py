"""instore summarize: statistics and recommendations checked against the records themselves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.summary import point_stats, recommend
from instore.summary.command import recommendations_path, summarize, summary_path
from instore.summary.figures import FIGURES
from instore.summary.limits import Limits, from_calibration
from instore.summary.load import read_site
from instore.summary.sections.cache import cache
from instore.summary.sections.jobfill import jobfill
from instore.summary.sections.protocols import protocols

from tests.unit.data.records import rows, write_calibration, write_results

COLD = "fixture-cold"


@pytest.fixture(scope="module")
def records() -> pd.DataFrame:
    return rows()


@pytest.fixture(scope="module")
def stats(records: pd.DataFrame) -> pd.DataFrame:
    return point_stats(records[records["site"] == COLD])


def _point(frame: pd.DataFrame, **knobs: object) -> pd.DataFrame:
    mask = pd.Series(True, index=frame.index)
    for key, value in knobs.items():
        mask &= frame[key].isna() if value is None else frame[key] == value
    return frame[mask]


def test_medians_are_the_records_medians(records: pd.DataFrame, stats: pd.DataFrame) -> None:
    knobs = {"site": COLD, "section": "layout", "layout": "unordered", "cache_mb": 0.0}
    jobs = _point(records, **knobs)
    point = _point(stats, **knobs)
    assert len(point) == 1 and len(jobs) >= 2
    assert point["wall_s_median"].iloc[0] == pytest.approx(jobs["wall_s"].median())
    assert point["read_calls_median"].iloc[0] == pytest.approx(jobs["read_calls"].median())
    assert (
        point["wall_s_q25"].iloc[0] <= point["wall_s_median"].iloc[0] <= point["wall_s_q75"].iloc[0]
    )
    assert point["cache"].iloc[0] == "off"


def test_retries_are_the_extra_attempts_of_a_points_jobs(records: pd.DataFrame) -> None:
    jobs = records[(records["site"] == COLD) & (records["section"] == "layout")].copy()
    jobs["attempts"] = range(1, len(jobs) + 1)
    stats = point_stats(jobs)
    assert stats["retries"].sum() == (jobs["attempts"] - 1).sum() > 0
    assert stats["open_s_median"].notna().all()


def test_failed_jobs_are_counted_not_averaged(records: pd.DataFrame, stats: pd.DataFrame) -> None:
    failed = records[(records["site"] == COLD) & (records["status"] != "ok")]
    assert len(failed) >= 1
    assert stats["jobs_failed"].sum() == len(failed)
    only_failed = _point(stats, section="protocols", layout="missing")
    assert only_failed["jobs_ok"].iloc[0] == 0
    assert only_failed["wall_s_median"].isna().all()


def test_default_cache_is_its_own_point(stats: pd.DataFrame) -> None:
    labels = set(_point(stats, section="cache", layout="ordered")["cache"])
    assert labels == {"off", "2 MB", "default"}


def test_aggregate_event_rate_is_events_over_longest_job(
    records: pd.DataFrame, stats: pd.DataFrame
) -> None:
    jobs = _point(records, site=COLD, section="jobfill", fill=4)
    assert len(jobs) == 4
    expected = jobs["events"].sum() / jobs["wall_s"].max()
    got = _point(stats, section="jobfill", fill=4)["aggregate_event_rate_hz"].iloc[0]
    assert got == pytest.approx(expected)


def test_fractions_of_calibrated_limits(records: pd.DataFrame) -> None:
    limits = Limits(mb_per_s={"posix": 50.0, "xrootd": 25.0}, read_iops=200.0, source="calibration")
    stats = point_stats(records[records["site"] == COLD], limits)
    xrd = _point(stats, section="cache", protocol="xrootd").iloc[0]
    assert xrd["mb_per_s_of_limit"] == pytest.approx(xrd["mb_per_s_median"] / 25.0)
    assert xrd["read_rate_of_limit"] == pytest.approx(xrd["read_rate_hz_median"] / 200.0)
    assert point_stats(records[records["site"] == COLD])["mb_per_s_of_limit"].isna().all()


def test_calibration_file_is_read() -> None:
    limits = from_calibration(
        {
            "protocols": {"posix": {"mb_per_s": 120.0}, "http": {"mb_per_s": 0}},
            "fio": {"seq_read_mb_per_s": 130.0, "rand_read_iops": 150},
        }
    )
    assert limits.throughput("posix") == 120.0
    assert limits.throughput("http") == 130.0  # no usable figure: the storage's own limit
    assert limits.read_iops == 150.0
    assert from_calibration(None).throughput("posix") is None
    assert from_calibration({"rtt_ms": 25}).source == "calibration without usable limits"
    assert from_calibration(None).describe() == "No usable limits: the site was not calibrated"


def test_a_calibration_with_an_rtt_alone_says_what_it_holds() -> None:
    """A real site with one xrootd endpoint calibrates an RTT and no throughput: the page
    says so, not that the site was not calibrated."""
    told = from_calibration({"rtt_ms": 0.42, "protocols": {}}).describe()
    assert told == (
        "No throughput limits: its calibration holds an RTT of 0.42 ms to the storage; no "
        "whole-file read (the calibration file's size was unknown: no posix endpoint and no "
        "storage endpoint reported it); no disk figure (fio needs the site file's "
        "calibration.posix_dir)"
    )
    told = from_calibration({"fio": {"seq_read_mb_per_s": 78.8, "rand_read_iops": 150.2},
                             "protocols": {"xrootd": {"mb_per_s": 112.6}}}).describe()  # fmt: skip
    assert told == (
        "Calibrated limits: 79 MB/s disk (fio sequential), 113 MB/s xrootd, 150 random-read IOPS"
    )


def test_jobfill_advice_follows_the_floor(stats: pd.DataFrame) -> None:
    eff = _point(stats, section="jobfill").groupby("fill")["cpu_efficiency_median"].min()
    floor = (eff.max() + eff.min()) / 2  # some fills above, some below
    advice = jobfill(stats, floor)
    keep = int(eff[eff >= floor].index.max())
    assert f"at most {keep} job" in advice.text
    everyone = jobfill(stats, eff.min() - 0.01)
    assert f"Up to {int(eff.index.max())} jobs" in everyone.text
    assert advice.figure == "jobfill.html#fig-jobfill"


def test_protocol_advice_names_the_most_efficient(stats: pd.DataFrame) -> None:
    part = _point(stats, section="protocols", engine="root").dropna(subset=["wall_s_median"])
    best = part.groupby("protocol")["cpu_efficiency_median"].median().idxmax()
    text = protocols(stats).text  # the best's figure first (named with "Use" where it leads)
    assert re.search(r"median CPU efficiency [^,]* with ([\w-]+), ", text).group(1) == best


def test_cache_advice_is_the_smallest_good_enough(stats: pd.DataFrame) -> None:
    advice = cache(stats)
    slowdown = advice.evidence["slowdown"]
    assert slowdown[advice.evidence["chosen"]] <= 1.10
    assert advice.figure.startswith("cache.html#")


def test_single_protocol_gives_no_protocol_advice(stats: pd.DataFrame) -> None:
    only_posix = stats[(stats["section"] != "protocols") | (stats["protocol"] == "posix")]
    assert protocols(only_posix) is None


def test_every_recommendation_links_a_known_figure(stats: pd.DataFrame) -> None:
    anchors = {f"{page}.html#{anchor}" for page, anchor in FIGURES.values()}
    advice = recommend(stats)
    assert {r.section for r in advice} == {"protocols", "cache", "layout", "readahead", "jobfill"}
    assert all(r.figure in anchors for r in advice)


def test_summarize_command_writes_both_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write_results(tmp_path / "results")
    write_calibration(results, COLD, {"fio": {"seq_read_mb_per_s": 100.0, "rand_read_iops": 150}})
    assert main(["summarize", "--site", COLD, "--results", str(results)]) == 0
    table = pd.read_parquet(summary_path(results, COLD))
    assert set(table["limits_source"]) == {"calibration"}
    assert table["limit_mb_per_s"].dropna().eq(100.0).all()
    advice = json.loads(recommendations_path(results, COLD).read_text())
    assert [a["section"] for a in advice] == [
        "protocols",
        "cache",
        "layout",
        "readahead",
        "jobfill",
    ]
    assert "[jobfill]" in capsys.readouterr().out


def test_missing_results_name_the_sweep_to_run(tmp_path: Path) -> None:
    with pytest.raises(InstoreError, match="run instore sweep --site nowhere"):
        summarize(tmp_path, "nowhere")
    write_results(tmp_path)
    assert len(read_site(tmp_path, COLD, ["cache"])) == len(
        rows().query("site == @COLD and section == 'cache'")
    )


def _with_block_readahead(records: pd.DataFrame, block_kb: float) -> pd.DataFrame:
    """The sparse readahead points as if measured at one block readahead, the disk having read
    what each point's jobs needed times a factor that grows with both readaheads."""
    part = _point(records, site=COLD, section="readahead").copy()
    part = part[part["branches"] != "all"]
    part["block_readahead_kb"] = block_kb
    part["point_key"] = part["point_key"] + f"-{block_kb:g}"
    needed = part.groupby("point_key")["bytes_needed"].transform("sum")
    factor = (1.5 if block_kb < 1024 else 3.0) * (part["readahead_kb"] / 16) ** 0.5
    part["disk_bytes_read"] = (needed * factor).round()
    return part


def test_disk_amplification_is_the_points_disk_bytes_over_its_jobs_needs(
    records: pd.DataFrame,
) -> None:
    jobs = pd.concat([_with_block_readahead(records, 128), _with_block_readahead(records, 4096)])
    assert set(jobs["readahead_kb"]) == {16, 1024}
    stats = point_stats(jobs).set_index(["readahead_kb", "block_readahead_kb"])
    amp = stats["disk_amplification_median"]
    assert amp[(16, 128)] == pytest.approx(1.5, rel=1e-3)
    assert amp[(1024, 4096)] == pytest.approx(24.0, rel=1e-3)
    advice = {r.section: r for r in recommend(stats.reset_index())}["readahead"]
    assert (
        "the disk read 24.0x the bytes needed at a readahead of 1024 KB (block device 4096 KB), "
        "1.5x at 16 KB (block device 128 KB)" in advice.text
    )


def test_disk_amplification_is_unknown_where_the_disk_was_not_counted(stats: pd.DataFrame) -> None:
    assert stats["disk_amplification_median"].isna().all()
    advice = {r.section: r for r in recommend(stats)}["readahead"]
    assert "disk read" not in advice.text


def test_jobfill_advice_per_workload_when_the_grid_has_several(stats: pd.DataFrame) -> None:
    """Light jobs (no CPU per event) starved by the storage get their own advice, apart from
    CPU-heavy ones on the same node."""
    heavy = _point(stats, section="jobfill")
    assert set(heavy["cpu_us"]) == {200.0}
    light = heavy.assign(cpu_us=0.0, cpu_efficiency_median=heavy["cpu_efficiency_median"] * 0.2)
    floor = float(heavy["cpu_efficiency_median"].min()) - 0.01
    advice = jobfill(pd.concat([heavy, light]), floor)
    assert advice.text.startswith(
        f"With 0 us of CPU per event, even one job per node runs under {floor:.0%}"
    )
    assert f"; with 200 us of CPU per event, up to {int(heavy['fill'].max())} jobs" in advice.text
    assert set(advice.evidence["efficiency_by_fill"]) == {"0.0", "200.0"}


def test_no_cache_size_is_recommended_when_none_is_good_on_every_layout(
    stats: pd.DataFrame,
) -> None:
    """Each layout has its own best cache, and each is over 10% slower on the other layout:
    the advice names no size and says why (it used to raise IndexError in summarize)."""
    split = pd.DataFrame(
        {
            "section": "cache", "jobs_ok": 3, "protocol": "posix", "engine": "root",
            "layout": ["ordered", "ordered", "unordered", "unordered"],
            "cache": ["off", "8 MB", "off", "8 MB"],
            "wall_s_median": [1.0, 2.0, 4.0, 2.0],  # off best ordered, 8 MB best unordered
            "cache_bytes_effective_median": [0, 8e6, 0, 8e6],
            "read_calls_median": [900.0, 20.0, 900.0, 20.0],
        }
    )  # fmt: skip
    advice = cache(split)
    assert advice is not None and advice.evidence["chosen"] is None
    assert advice.text.startswith("No single TTreeCache size is recommended")
    assert "100% slower" in advice.text  # off (or 8 MB) takes twice the best wall time
    study = pd.concat([stats[stats["section"] != "cache"], split], ignore_index=True)
    found = {r.section: r for r in recommend(study)}
    assert found["cache"].text == advice.text


def test_a_failed_jobs_record_without_counters_is_summarized() -> None:
    """A job that printed no record keeps no counters: the table holds JSON NaN there."""
    from instore.summary.load import counter

    frame = pd.DataFrame({"counters": ["NaN", json.dumps({"perfstats_disk_s": 1.5}), None]})
    values = counter(frame, "perfstats_disk_s")
    assert values.isna().tolist() == [True, False, True] and values.iloc[1] == 1.5


def test_a_calibrated_limit_is_the_faster_of_the_copy_and_the_open_files_read() -> None:
    """A copy's rate holds its tool's start and authentication (19 MB/s over GSI on loopback
    for a 7.8 MB file, where the open file read at 164); the read's, one request at a time (733
    MB/s over http on lan-ssd, where the copy made 1,163). Each is a lower bound: the faster is
    the limit, so no job is shown faster than its storage."""
    told = from_calibration(
        {"protocols": {"xrootd": {"mb_per_s": 19.1, "read_mb_per_s": 164.0},
                       "http": {"mb_per_s": 1163.3, "read_mb_per_s": 733.4},
                       "posix": {"mb_per_s": 91.6}}}  # an older calibration: the copy alone
    )  # fmt: skip
    assert told.throughput("xrootd") == 164.0
    assert told.throughput("http") == 1163.3
    assert told.throughput("posix") == 91.6

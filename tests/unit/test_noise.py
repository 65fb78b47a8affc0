"""Machine noise: the probes time real work, drift is measured against the sweep's first
figures, probes are kept, and the page's summary names the points measured on a drifted machine."""

from __future__ import annotations

import errno
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from instore.summary.noise import DRIFT_LIMIT, NOISE_LOG, drift_summary, machine_shift
from instore.sweep import noise
from instore.sweep.noise import NoiseMonitor, cpu_unit, local_read, probe_file


def test_the_probes_time_real_work(tmp_path: Path) -> None:
    assert 0 < cpu_unit(loops=20_000, runs=3) < 5
    path = probe_file(tmp_path, size=1 << 20)
    assert path.stat().st_size == 1 << 20
    written = path.stat().st_mtime_ns
    assert probe_file(tmp_path, size=1 << 20).stat().st_mtime_ns == written  # written once
    assert 0 < local_read(path) < 5


class Machine:
    """Probe figures handed out in turn, and a clock the test moves."""

    def __init__(self, figures: list[tuple[float, float]]) -> None:
        self.figures, self.now = iter(figures), 0.0

    def measure(self) -> tuple[float, float]:
        return next(self.figures)

    def clock(self) -> float:
        return self.now


def _monitor(tmp_path: Path, figures: list[tuple[float, float]]) -> tuple[NoiseMonitor, Machine]:
    machine = Machine(figures)
    monitor = NoiseMonitor(tmp_path, "site", every_s=60, measure=machine.measure,
                           clock=machine.clock)  # fmt: skip
    return monitor, machine


def test_drift_is_against_the_sweeps_first_probes_and_flags_beyond_five_percent(
    tmp_path: Path,
) -> None:
    baseline = [(0.010, 0.020), (0.011, 0.021), (0.050, 0.019)]  # one unlucky probe of three
    monitor, machine = _monitor(
        tmp_path,
        [*baseline, (0.0112, 0.020), (0.012, 0.020), (0.0125, 0.020), (0.011, 0.040),
         (0.016, 0.020), (0.0111, 0.020), (0.0108, 0.02)],
    )  # fmt: skip
    first = monitor.start()
    assert (first.cpu_s, first.read_s) == (0.011, 0.020)  # the median of the three
    assert monitor.fields()["noise_drift"] == 0 and not monitor.fields()["noise_flagged"]
    assert monitor.between() is first  # not yet due: the last probe stands
    machine.now = 61
    calm = monitor.between()
    assert calm.cpu_drift == pytest.approx(0.0112 / 0.011 - 1) and calm.read_drift == 0
    assert calm.drift < DRIFT_LIMIT and not calm.fields()["noise_flagged"]
    machine.now = 125  # slower, and again when probed once more: flagged, the nearer kept
    busy = monitor.between()
    assert busy.drift == pytest.approx(0.012 / 0.011 - 1) and busy.fields()["noise_flagged"]
    machine.now = 190  # the read alone twice as slow: no flag
    slow_read = monitor.between()
    assert slow_read.drift == pytest.approx(1.0) and not slow_read.fields()["noise_flagged"]
    machine.now = 255  # one slow CPU probe, calm when taken again: no flag
    lone = monitor.between()
    assert (
        lone.cpu_drift == pytest.approx(0.0111 / 0.011 - 1) and not lone.fields()["noise_flagged"]
    )
    assert monitor.fields()["noise_sweep"] == first.at
    monitor.close()
    kept = [json.loads(line) for line in (tmp_path / "site" / NOISE_LOG).read_text().splitlines()]
    assert [p["when"] for p in kept] == ["before", "during", "during", "during", "during", "after"]
    assert kept[2]["drift"] == pytest.approx(busy.drift)


def test_without_room_for_the_read_file_the_cpu_probe_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*_args: object, **_kwargs: object) -> Path:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(noise, "probe_file", full)
    monkeypatch.setattr(noise, "cpu_unit", lambda: 0.01)
    monitor = NoiseMonitor(tmp_path, "site")
    probe = monitor.start()
    assert math.isnan(probe.read_s) and probe.drift == 0
    assert monitor.probe().drift == 0


def _rows(
    key: str,
    section: str,
    drift: float | None,
    sweep: str = "s1",
    read: float = 0.0,
    column: str = "noise_cpu_drift",
) -> list[dict[str, Any]]:
    noise_fields = {} if drift is None else {column: drift, "noise_read_drift": read,
                                             "noise_sweep": sweep}  # fmt: skip
    return [{"point_key": key, "section": section, "layout": "unordered", "cache_mb": 0.0,
             "repetition": 0, "measured_at": "2026-01-01", "job": j, **noise_fields}
            for j in range(2)]  # fmt: skip


def test_the_summary_gives_the_largest_drift_and_the_flagged_points(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    pd.DataFrame(_rows("a", "layout", 0.01) + _rows("b", "layout", -0.08)).to_parquet(
        site / "layout.parquet"
    )
    pd.DataFrame(_rows("c", "cache", 0.02)).to_parquet(site / "cache.parquet")
    probes = [{"sweep": "s1", "cpu_drift": d, "read_drift": 0.0} for d in (0.0, 0.03, 0.09)]
    probes.append({"sweep": "old", "cpu_drift": 0.5})  # another study's sweep: not this one's
    (site / NOISE_LOG).write_text("".join(json.dumps(p) + "\n" for p in probes) + '{"torn')
    summary = drift_summary(tmp_path, "site")
    assert summary.max_cpu_drift == pytest.approx(0.09) and summary.probes == 3
    assert list(summary.flagged["section"]) == ["layout"]  # faster by 8% is drift too
    assert summary.flagged["point"].item() == "layout=unordered cache_mb=0.0"
    assert "9.0%" in summary.text() and "1 point(s)" in summary.text()
    assert "<table" in summary._repr_html_()


def test_a_local_read_slowed_by_the_studys_own_writes_flags_no_point(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    pd.DataFrame(_rows("a", "layout", 0.01, read=0.6)).to_parquet(site / "layout.parquet")
    summary = drift_summary(tmp_path, "site")
    assert summary.flagged.empty and summary.max_cpu_drift == pytest.approx(0.01)
    assert summary.max_read_drift == pytest.approx(0.6) and "60%" in summary.text()


def test_records_from_before_the_cpu_drift_flag_on_their_drift(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    rows = _rows("a", "layout", 0.01, column="noise_drift")
    pd.DataFrame(rows + _rows("b", "layout", 0.07, column="noise_drift")).to_parquet(
        site / "layout.parquet"
    )
    summary = drift_summary(tmp_path, "site")
    assert summary.max_cpu_drift == pytest.approx(0.07) and len(summary.flagged) == 1


def test_records_from_before_the_probes_say_so(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    pd.DataFrame(_rows("a", "layout", None)).to_parquet(tmp_path / "site" / "layout.parquet")
    summary = drift_summary(tmp_path, "site")
    assert math.isnan(summary.max_cpu_drift) and summary.flagged.empty
    assert "No machine-noise probes" in summary.text()


def test_machine_shift_between_two_studies_is_the_larger_probe_change(tmp_path: Path) -> None:
    """The machine 6% slower in CPU and 2% in reads in B, its probes within 1% in each run: a
    change under 6% is the machine's."""
    for run, cpu, read in (("a", 0.010, 0.020), ("b", 0.0106, 0.0204)):
        (tmp_path / run / "s").mkdir(parents=True)
        probes = [{"cpu_s": cpu * f, "read_s": read * f} for f in (0.99, 1.0, 1.01)]
        (tmp_path / run / "s" / NOISE_LOG).write_text("".join(json.dumps(p) + "\n" for p in probes))
    assert machine_shift(tmp_path / "a", tmp_path / "b", ["s"]) == pytest.approx(0.06)
    # with itself: the probes' own spread, the scaled median absolute deviation (1% here)
    assert machine_shift(tmp_path / "a", tmp_path / "a", ["s"]) == pytest.approx(0.01 * 1.4826)
    (tmp_path / "c" / "s").mkdir(parents=True)  # no probes: unknown, not zero
    assert math.isnan(machine_shift(tmp_path / "a", tmp_path / "c", ["s"]))

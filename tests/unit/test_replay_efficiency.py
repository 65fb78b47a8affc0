"""The replay's predicted CPU efficiency is over the span it replays and per core: a cut pass is
credited the CPU of the think time it replayed, never that of its data bytes, and no replay
predicts more than 1 per core of the cores the recorded job kept busy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from instore.replay import efficiency
from instore.replay.closed_loop import replay
from instore.replay.targets import by_url_map
from instore.replay.trace import load_trace

URL_MAP = "root://old.example//store/={}/data/"


def _reads_early_computes_late(tmp_path: Path, cpu_share: float) -> Path:
    """A job that opens, reads its data in 0.02 s, then computes 0.3 s before it ends (its
    recorded CPU ``cpu_share`` of its wall): the shape of agc-load, whose cut passes were
    credited all their CPU once their bytes were in."""
    t, rows = 1000.0, []
    for op, args, dur, resp in (("Open", "root://old.example//store/f.root;16;0;0", 0.005, ""),
                                ("Read", "0;65536;0", 0.005, "65536"),
                                ("Read", "65536;65536;0", 0.005, "65536"),
                                ("Close", "0", 0.001, "")):  # fmt: skip
        rows.append(f'"9","{op}","{t:.6f}","{args}","{t + dur:.6f}","[SUCCESS]","{resp}"')
        t += dur + 0.001
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    start, end = 1000.0 - 0.02, t + 0.3
    meta = {"trace_version": 1, "start_unix": start, "end_unix": end, "wall_s": end - start,
            "cpu_s": cpu_share * (end - start), "exit_code": 0, "events": 100}  # fmt: skip
    (trace / "trace.json").write_text(json.dumps(meta))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.root").write_bytes(bytes(1 << 17))
    return trace


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_a_cut_pass_is_credited_the_cpu_of_its_time_not_of_its_bytes(tmp_path: Path) -> None:
    """Regression (issue 40): 109% predicted for agc-load in 10 s of fixed time on lan-ssd.
    A busy job (95% of its wall on CPU) replayed on page-cache storage for 0.5 s: its second
    pass is cut in its final computation, with all its bytes read. Credited by bytes it would
    stand for 2 passes' CPU in about 1.6 passes' time (about 120%)."""
    trace = load_trace(_reads_early_computes_late(tmp_path, cpu_share=0.95))
    targets = by_url_map(trace.files, [URL_MAP.format(tmp_path)])
    rec = replay(trace, targets, fixed_time_s=0.5)
    assert rec.error is None and rec.passes == pytest.approx(2.0)  # the events: both passes' data
    assert rec.job_cores == 1
    assert rec.predicted_cpu_efficiency is not None and rec.predicted_cpu_efficiency <= 1.0
    assert rec.predicted_cpu_efficiency == pytest.approx(rec.recorded_cpu_efficiency, rel=0.05)
    assert rec.predicted_cpu_s < 2 * trace.meta["cpu_s"]


def test_a_replay_shorter_than_the_jobs_cpu_is_cpu_bound_not_above_one() -> None:
    """1.2 s of CPU replayed in 1 s on one core: the job would be CPU-bound there."""
    got = efficiency.predict(cpu_s=1.2, cores=1, cpu_passes=1.0, wall_s=1.0)
    assert (got.efficiency, got.cpu_bound, got.cpu_s) == (1.0, True, pytest.approx(1.2))
    fits = efficiency.predict(cpu_s=0.8, cores=1, cpu_passes=1.0, wall_s=1.0)
    assert (fits.efficiency, fits.cpu_bound) == (pytest.approx(0.8), False)


@pytest.mark.parametrize(
    ("cpu_s", "wall_s", "cores"),
    [
        (0.5, 1.0, 1),
        (1.04, 1.0, 1),
        (1.6, 1.0, 2),
        (3.5, 1.0, 4),
        (None, 1.0, 1),
        (1.0, 0.0, 1),
        (1.057047, 0.971435, 1),
    ],
)
def test_the_cores_a_job_kept_busy(cpu_s: float | None, wall_s: float, cores: int) -> None:
    """A single-threaded job's client threads add a few percent, not a core: the last case is
    the agc-load trace of the run of a5fca5f (CPU over wall 1.09), once counted as 2 cores."""
    assert efficiency.job_cores(cpu_s, wall_s) == cores


def test_a_multi_threaded_jobs_efficiency_is_per_core() -> None:
    """Two threads busy 90% of a 1 s job: 1.8 s of CPU, 90% per core, recorded and predicted."""
    assert efficiency.recorded(1.8, 1.0) == pytest.approx(0.9)
    got = efficiency.predict(1.8, efficiency.job_cores(1.8, 1.0), 1.0, 1.0)
    assert got.efficiency == pytest.approx(0.9) and not got.cpu_bound


def test_a_cut_pass_without_think_time_falls_back_to_its_bytes() -> None:
    assert efficiency.passes_of_cpu(2, 0.0, 0.0, 0.4) == pytest.approx(2.4)
    assert efficiency.passes_of_cpu(2, 0.1, 0.4, 1.0) == pytest.approx(2.25)


def test_a_table_never_shows_an_efficiency_above_100_percent_bare(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Records from before this change (or a payload's client threads) can still hold one: the
    report's tables mark it and say why under the caption."""
    import pandas as pd
    from instore.report import show

    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    frame = pd.DataFrame({"clients": [1, 4], "cpu_efficiency": [1.09, 0.93]})
    show.table(frame, "Load", percent=("cpu_efficiency",))
    assert "109%" + show.OVER_MARK in shown[0] and "93%" + show.OVER_MARK not in shown[0]
    assert "above 100% per core" in shown[0]
    show.table(frame.assign(cpu_efficiency=[0.9, 0.93]), "Load", percent=("cpu_efficiency",))
    assert "above 100%" not in shown[1]


def test_a_table_of_intervals_marks_an_efficiency_above_100_percent() -> None:
    """The load and replay tables go through intervals.table: its text carries the mark."""
    import pandas as pd
    from instore.report import intervals, show

    frame = pd.DataFrame({"clients": [1, 4], "cpu_efficiency": [1.09, 0.93],
                          "cpu_efficiency_lo": [1.08, 0.9], "cpu_efficiency_hi": [1.1, 0.95],
                          "cpu_efficiency_n": [2, 2], "cpu_efficiency_basis": ["jobs", "jobs"]})  # fmt: skip
    shown = intervals.table(frame, {"clients": "clients", "cpu_efficiency": "CPU efficiency"},
                            percent=("cpu_efficiency",))  # fmt: skip
    column = next(c for c in shown.columns if c.startswith("CPU efficiency"))
    assert shown[column].iloc[0].endswith(show.OVER_MARK)
    assert not shown[column].iloc[1].endswith(show.OVER_MARK)

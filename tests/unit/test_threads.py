"""Threads in the payload: the axis parses and keys as it should, a point the worker cannot run
is skipped saying why, CPU efficiency is over wall x threads, and a job split by cluster over two
threads reads exactly what one thread reads (both engines)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml
from instore.cli import build_parser
from instore.errors import InstoreError
from instore.payload import runner as payload_runner
from instore.payload.command import options_from_args
from instore.payload.pattern import Pattern
from instore.payload.procstats import ProcSnapshot
from instore.payload.result import EngineResult
from instore.payload.runner import ReadOptions, run_read
from instore.payload.threads import cpu_efficiency, split_clusters
from instore.study import Point, expand, load_study
from instore.sweep import plan

from tests.unit.test_sweep_skip import _sweep_nothing_starts

FILES = {"size_mb": 1, "replicas": 1, "seed": 1}


def _study(tmp_path: Path, grid: dict) -> Path:
    study = {"profile": "t", "profiles": {"t": {"sites": ["local"], "files": FILES,
                                               "sections": {"jobfill": grid}}}}  # fmt: skip
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    return path


def test_one_thread_keeps_the_keys_points_had_before_the_axis() -> None:
    point = Point(section="jobfill", fill=2, cpu_us=200.0)
    knobs = {k: v for k, v in point.knobs().items() if k not in ("threads", "mt_mode")}
    old = {k: v for k, v in knobs.items()
           if v is not None or k not in ("cache_state", "rtt_ms", "bandwidth_mbit", "fileset",
                                         "trace", "io_scheduler", "filesystem")}  # fmt: skip
    blob = json.dumps({"site": "s", "files": FILES, "section": "jobfill", "repetition": 0, **old},
                      sort_keys=True)  # fmt: skip
    assert point.key("s", FILES) == hashlib.sha256(blob.encode()).hexdigest()[:16]
    assert Point(section="jobfill", threads=2).key("s", FILES) != point.key("s", FILES)


def test_the_grid_expands_threads_and_names_each_points_mode(tmp_path: Path) -> None:
    grid = {"fill": [1, 2], "threads": [1, 2], "engine": ["root", "uproot"],
            "mt_mode": ["cluster", "implicit"]}  # fmt: skip
    points = expand(load_study(_study(tmp_path, grid)), "jobfill")
    modes = {(p.engine, p.threads, p.mt_mode) for p in points}
    assert modes == {("root", 1, None), ("root", 2, "cluster"), ("root", 2, "implicit"),
                     ("uproot", 1, None), ("uproot", 2, "executors")}  # fmt: skip
    assert len(points) == 2 * len(modes)  # one thread has no mode: its points collapse
    two = next(p for p in points if p.threads == 2 and p.mt_mode == "implicit")
    assert two.read_args()[-4:] == ["--threads", "2", "--mt-mode", "implicit"]
    assert "--threads" not in next(p for p in points if p.threads == 1).read_args()


@pytest.mark.parametrize("grid", [{"threads": [0]}, {"threads": [2], "mt_mode": ["tbb"]}])
def test_the_schema_refuses_bad_threads(tmp_path: Path, grid: dict) -> None:
    with pytest.raises(InstoreError):
        load_study(_study(tmp_path, grid))


def _parse(*argv: str) -> ReadOptions:
    return options_from_args(build_parser().parse_args(["read", "/f.root", *argv]))


def test_read_parses_threads_and_resolves_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payload_runner, "too_many_threads", lambda *_: None)
    assert (_parse().threads, _parse().mt_mode) == (1, None)
    assert _parse("--threads", "2").mt_mode == "cluster"
    assert _parse("--threads", "2", "--mt-mode", "implicit").mt_mode == "implicit"
    assert _parse("--engine", "uproot", "--threads", "4").mt_mode == "executors"
    assert _parse("--threads", "1", "--mt-mode", "implicit").mt_mode is None
    knobs = _parse("--threads", "2").knobs()
    assert (knobs["threads"], knobs["mt_mode"]) == (2, "cluster")


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (("--threads", "0"), "below 1"),
        (("--engine", "uproot", "--threads", "2", "--mt-mode", "implicit"), "no --mt-mode"),
        (("--threads", "4096"), "the worker has"),
    ],
)
def test_bad_threads_are_one_line_errors(argv: tuple[str, ...], words: str) -> None:
    with pytest.raises(InstoreError, match=words):
        _parse(*argv)


def test_a_point_with_more_threads_than_cores_is_skipped_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Known from the site file before anything starts; from the workers once they are up."""
    sections = {"readahead": {"protocol": ["posix"], "threads": [4]}}
    summary = _sweep_nothing_starts(tmp_path, monkeypatch, sections)
    assert summary.skipped == {"4 threads per job, the worker has 2 core(s)": 1}
    assert plan.cluster_skip_reason(Point(section="x", threads=3), workers=1, cores=2)
    assert plan.cluster_skip_reason(Point(section="x", threads=2), workers=1, cores=2) is None


def test_cpu_efficiency_is_over_wall_times_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    assert cpu_efficiency(3.0, 2.0, 2) == 0.75
    assert cpu_efficiency(1.0, 0.0, 2) is None
    monkeypatch.setattr(payload_runner, "too_many_threads", lambda *_: None)
    before, after = ProcSnapshot(10.0, 1.0, 0.5, 0, 0, 0), ProcSnapshot(12.0, 3.5, 1.0, 0, 0, 0)
    opts = ReadOptions("/f.root", threads=2)
    m = payload_runner._measurement(before, after, EngineResult(), 0.0, opts)
    assert m.cpu_efficiency == pytest.approx(3.0 / (2.0 * 2)) and m.cpu_efficiency_note is None


def test_an_efficiency_above_one_per_core_is_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 40: no efficiency above 100% per core without saying why. One thread, 2.1 s of
    CPU (its client library's threads beside it) in 2 s of wall."""
    monkeypatch.setattr(payload_runner, "too_many_threads", lambda *_: None)
    before, after = ProcSnapshot(10.0, 1.0, 0.5, 0, 0, 0), ProcSnapshot(12.0, 3.0, 0.6, 0, 0, 0)
    m = payload_runner._measurement(before, after, EngineResult(), 0.0, ReadOptions("/f.root"))
    assert m.cpu_efficiency == pytest.approx(1.05)
    assert m.cpu_efficiency_note is not None and "105%" in m.cpu_efficiency_note


def test_split_clusters_covers_every_processed_entry_once() -> None:
    bounds = [0, 1700, 3400, 5100, 6000]
    assert split_clusters(bounds, 0, 6000, 1, 2) == [(0, 3400), (3400, 6000)]
    assert split_clusters([0, 6000], 0, 6000, 1, 2) == [(0, 6000)]  # one cluster: one thread
    for stride in (1, 3, 7):
        ranges = split_clusters(bounds, 0, 6000, stride, 3)
        hits = [e for a, b in ranges for e in range(a, b, stride)]
        assert hits == list(range(0, 6000, stride))


def _read_forked(opts: ReadOptions) -> dict:
    """``run_read`` in a forked child, as a warm payload runs a job: ROOT's thread safety and
    implicit multi-threading, once on, stay on in a process, and must not reach other tests."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(w, json.dumps(run_read(opts).as_dict()).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read()
    os.waitpid(pid, 0)
    return json.loads(text)


@pytest.mark.parametrize("engine", ["root", "uproot"])
def test_two_threads_read_what_one_thread_reads(small_files: dict[str, Path], engine: str) -> None:
    """Entries split by cluster (root) or uproot's executors: the same events and bytes needed,
    the records say threads and mode, and the CPU of both threads is the job's."""
    path = str(small_files["ordered"])
    pattern = Pattern(entry_fraction=0.5, cpu_us=50.0)
    one = run_read(ReadOptions(path, engine=engine, pattern=pattern)).as_dict()
    two = _read_forked(ReadOptions(path, engine=engine, pattern=pattern, threads=2))
    assert one["error"] is None and two["error"] is None, (one["error"], two["error"])
    for key in ("events", "bytes_needed", "entries", "branches_read"):
        assert two[key] == one[key], key
    assert (one["threads"], one["mt_mode"], two["threads"]) == (1, None, 2)
    assert two["mt_mode"] == {"root": "cluster", "uproot": "executors"}[engine]
    assert two["threads_used"] == 2 and two["threads_note"] is None
    assert two["bytes_read"] >= two["bytes_needed"] > 0
    burnt = two["events"] * 50e-6  # spent on both threads: getrusage counts every thread's CPU
    assert two["user_s"] + two["sys_s"] >= 0.9 * burnt
    if engine == "root":  # each thread its own file and cache: their counters are summed
        assert two["vector_reads"] >= one["vector_reads"]
        assert sum(two["read_size_hist"].values()) == two["counters"]["perfstats_read_calls"]
        assert two["counters"]["read_log_complete"] == 1  # each thread's reads in its own log


def test_implicit_mode_reads_what_one_thread_reads(small_files: dict[str, Path]) -> None:
    """ROOT's implicit multi-threading under TTree::GetEntry: the same events and bytes. Without
    a cache the pool's threads read baskets themselves, which no per-thread TTreePerfStats sees:
    the record says its read log is incomplete (the TFile's counters are not)."""
    path = str(small_files["ordered"])
    pattern = Pattern(entry_fraction=0.5)
    one = run_read(ReadOptions(path, pattern=pattern, cache_bytes=0)).as_dict()
    opts = ReadOptions(path, pattern=pattern, cache_bytes=0, threads=2, mt_mode="implicit")
    two = _read_forked(opts)
    assert two["error"] is None, two["error"]
    assert (two["events"], two["bytes_needed"]) == (one["events"], one["bytes_needed"])
    assert (two["mt_mode"], two["threads_used"]) == ("implicit", 2)
    assert (one["counters"]["read_log_complete"], two["counters"]["read_log_complete"]) == (1, 0)
    assert two["read_calls"] == one["read_calls"]


def test_an_rntuple_split_by_cluster_reads_the_same_entries(tmp_path: Path) -> None:
    """Each thread its own reader over whole clusters: the same events and bytes needed (bytes
    read may grow by the cluster a thread's cache reads ahead past its range)."""
    from tests.unit.test_payload_rntuple import write_root_rntuple

    path = str(write_root_rntuple(tmp_path / "nt.root"))
    one = run_read(ReadOptions(path)).as_dict()
    two = _read_forked(ReadOptions(path, threads=2))
    assert two["error"] is None, two["error"]
    assert (two["events"], two["bytes_needed"]) == (one["events"], one["bytes_needed"])
    assert two["threads_used"] == 2 and two["counters"]["nClusterLoaded"] >= 2
    assert two["bytes_read"] >= one["bytes_read"]


def test_the_jobfill_page_puts_jobs_of_two_threads_beside_two_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 job x 2 threads and 2 jobs x 1 thread ask the same cores: the table says so, and the
    figure's x is the cores asked once the section has jobs of more than one thread."""
    from instore.report import jobfill as jobfill_page
    from instore.report import sections, show
    from instore.summary.command import summarize, write
    from instore.summary.sections.jobfill import jobfill

    from tests.unit.data.records import rows, write_results

    old = rows().query("site == 'fixture-cold' and section == 'jobfill'")
    two = old[old["fill"] == 1].assign(threads=2, mt_mode="cluster",
                                       point_key=lambda f: f["point_key"] + "-t2")  # fmt: skip
    results = write_results(tmp_path, pd.concat([old, two], ignore_index=True))
    write(results, "fixture-cold", *summarize(results, "fixture-cold"))
    shown: list[str] = []
    monkeypatch.setattr(show, "_display", shown.append)
    view = sections.SiteView.load("fixture-cold", results)
    jobfill_page.jobfill_table(view)
    jobfill_page.jobfill(view)
    assert "cores asked (jobs x threads)" in shown[0] and "threads per job" in shown[0]
    assert any(m.startswith("<figure") for m in shown[1:])
    advice = jobfill(view.stats)
    assert "1 job(s) of 2 threads (cluster) process" in advice.text
    assert "the events/s of 2 one-thread jobs on the same cores" in advice.text


def test_compare_matches_one_thread_points_with_runs_from_before_threads() -> None:
    from instore.summary.baseline import keys

    old = pd.DataFrame([{"site": "s", "section": "jobfill", "fill": 2}])
    new = old.assign(threads=1, mt_mode=None)
    assert keys(old).iloc[0] == keys(new).iloc[0]
    assert keys(new.assign(threads=2, mt_mode="cluster")).iloc[0] != keys(old).iloc[0]

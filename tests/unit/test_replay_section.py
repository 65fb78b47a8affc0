"""The replay section in the study: a `trace` axis names recorded analyses; its points read
the trace's file set and layout with the replayer, each job runs `instore replay` against the
point's URL, stage-in (which copies the file first) is skipped with its reason, and a trace
that was never recorded stops the sweep with the command that records it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from instore.errors import InstoreError
from instore.study import load_study
from instore.study.grid import expand
from instore.sweep import plan as sweep_plan
from instore.sweep.jobs import job_argv, payload_engine
from instore.sweep.options import SweepOptions

from tests.conftest import write_real_site


def _study(tmp_path: Path, **changes: object) -> Path:
    profile = {
        "sites": ["local"],
        "files": {"size_mb": 1, "replicas": 1, "seed": 1},
        "filesets": {"nano": {"like": "cms-nanoaod", "size_mb": 4, "replicas": 1}},
        "traces": {"rdf": {"analysis": "analyses/agc_ttbar_rdf.py", "fileset": "nano"}},
        "sections": {"replay": {"trace": ["rdf"], "protocol": ["posix", "stage-in"]}},
    }
    profile.update(changes)
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({"profile": "t", "profiles": {"t": profile}}))
    return path


def test_replay_points_read_the_traces_file_set_with_the_replayer(tmp_path: Path) -> None:
    study = load_study(_study(tmp_path))
    points = expand(study, "replay")
    assert [(p.trace, p.fileset, p.layout, p.engine) for p in points] == [
        ("rdf", "nano", "ordered", "replay")
    ] * 2
    assert study.layouts_of("nano") == {"ordered"}
    argv = job_argv(points[0], "root://h:1094//data/nano-ordered-r0.root", "Events",
                    tmp_path, start_at=12.5, trace=tmp_path / "files" / "traces" / "lan-ssd" / "rdf")  # fmt: skip
    assert argv == ("instore", "replay", str(tmp_path / "files" / "traces" / "lan-ssd" / "rdf"),
                    "--target", "root://h:1094//data/nano-ordered-r0.root", "--record-only", "--no-check",
                    "--timeout", "60", "--start-at", "12.500")  # fmt: skip
    # ROOT's XRootD client and PyPI xrootd's cannot share a process: the replayer (PyPI
    # xrootd) is forked by the warm payload that holds no ROOT
    assert payload_engine(points[0]) == "uproot"


def test_a_fixed_time_replay_point_replays_for_that_long(tmp_path: Path) -> None:
    """The HEPiX axis reaches a replay job as it reaches a reading one (Point.read_args)."""
    study = load_study(_study(tmp_path, sections={"replay": {"trace": ["rdf"],
                                                             "fixed_time_s": [0, 30]}}))  # fmt: skip
    once, timed = expand(study, "replay")
    argv = job_argv(timed, "/d/f.root", "Events", tmp_path, trace=tmp_path / "rdf")
    assert argv[argv.index("--fixed-time") + 1] == "30"
    assert "--fixed-time" not in job_argv(once, "/d/f.root", "Events", tmp_path, trace=tmp_path)


def test_a_replay_request_times_out_within_a_third_of_the_job_time_out(tmp_path: Path) -> None:
    """A request stuck on a dead server ends the replay with its own record (the request and
    why) before the sweep kills the job, which would leave only "timed out"."""
    point = expand(load_study(_study(tmp_path)), "replay")[0]
    for job_timeout, request_timeout in ((30, "10"), (600, "60"), (None, "60")):
        argv = job_argv(point, "root://h//f.root", "Events", tmp_path, trace=tmp_path,
                        job_timeout_s=job_timeout)  # fmt: skip
        assert argv[argv.index("--timeout") + 1] == request_timeout


def test_a_replay_job_names_its_trace_by_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sweep's --data is relative in `make study` (data/files); a job in a container runs
    in another directory, with the data bound at its absolute path (seen: every replay point
    failed with "no such trace")."""
    monkeypatch.chdir(tmp_path)
    point = expand(load_study(_study(tmp_path)), "replay")[0]
    trace = SweepOptions(study=load_study(_study(tmp_path)), site="lan-hdd", sections=["replay"],
                         data=Path("data/files")).trace("rdf")  # fmt: skip
    argv = job_argv(point, "root://h//f.root", "Events", tmp_path, trace=trace)
    assert argv[2] == str(tmp_path / "data" / "files" / "traces" / "lan-ssd" / "rdf")


def test_a_trace_naming_an_unknown_file_set_or_section_trace_is_one_line(tmp_path: Path) -> None:
    bad_set = {"rdf": {"analysis": "a.py", "fileset": "nano9"}}
    with pytest.raises(InstoreError, match="trace rdf: no file set named 'nano9'"):
        load_study(_study(tmp_path, traces=bad_set))
    bad_section = {"replay": {"trace": ["uproot"]}}
    with pytest.raises(InstoreError, match=r"section replay: no trace named 'uproot'.*rdf"):
        load_study(_study(tmp_path, sections=bad_section))


def _opts(tmp_path: Path, data: Path) -> SweepOptions:
    endpoints = {"posix": f"{data}/{{file}}", "stage-in": "root://localhost:1094//d/{file}"}
    site = write_real_site(tmp_path / "local.yaml", endpoints)
    return SweepOptions(study=load_study(_study(tmp_path)), site=str(site), sections=["replay"],
                        data=data, results=tmp_path / "results", progress=False)  # fmt: skip


def test_stage_in_is_skipped_and_a_missing_trace_names_the_recording(tmp_path: Path) -> None:
    data = tmp_path / "files"
    data.mkdir()
    (data / "nano-ordered-r0.root").write_bytes(b"")
    opts = _opts(tmp_path, data)
    from instore.site import load_site

    site = load_site(opts.site)
    with pytest.raises(InstoreError) as err:
        sweep_plan.plan(opts, site)
    message = str(err.value)
    assert "trace rdf was not recorded" in message
    assert f"instore record --site lan-ssd --file {data}/nano-ordered-r0.root" in message
    assert "-- python analyses/agc_ttbar_rdf.py --tree Events" in message
    (data / "traces" / "lan-ssd" / "rdf").mkdir(parents=True)
    (data / "traces" / "lan-ssd" / "rdf" / "trace.json").write_text("{}")
    planned = sweep_plan.plan(opts, site)
    assert [p.protocol for p, _ in planned.todo] == ["posix"]
    assert planned.skipped == {"a replay reads in place; stage-in copies the file first": 1}


def test_fixed_time_replays_deal_out_the_sets_other_copies_to_later_passes(
    tmp_path: Path,
) -> None:
    """HEPiX's fixed time, cold: a client's later passes read copies no client of the point
    read first (job j: j + jobs, j + 2 jobs, ...), and each job is told them in its argv."""
    study = load_study(_study(
        tmp_path,
        filesets={"nano": {"like": "cms-nanoaod", "size_mb": 4, "replicas": 8, "identical": True}},
        sections={"load": {"trace": ["rdf"], "fill": [1, 2, 8], "fixed_time_s": [10],
                           "protocol": ["posix"]}},
    ))  # fmt: skip
    by_fill = {p.fill: p for p in expand(study, "load")}
    one = sweep_plan.Inputs(study).passes(by_fill[1])
    assert one == [[f"nano-ordered-r{k}.root" for k in range(1, 8)]]
    assert sweep_plan.Inputs(study).passes(by_fill[2]) == [
        ["nano-ordered-r2.root", "nano-ordered-r4.root", "nano-ordered-r6.root"],
        ["nano-ordered-r3.root", "nano-ordered-r5.root", "nano-ordered-r7.root"],
    ]
    assert sweep_plan.Inputs(study).passes(by_fill[8]) == [[]] * 8  # none left: re-read
    assert len(set(sweep_plan.Inputs(study).read(by_fill[2]))) == 8  # all placed on the site
    argv = job_argv(by_fill[1], "/d/nano-ordered-r0.root", "Events", tmp_path, trace=tmp_path,
                    pass_urls=["/d/nano-ordered-r1.root", "/d/nano-ordered-r2.root"])  # fmt: skip
    assert argv[-4:] == ("--pass-target", "/d/nano-ordered-r1.root",
                         "--pass-target", "/d/nano-ordered-r2.root")  # fmt: skip
    once = expand(load_study(_study(tmp_path)), "replay")[0]
    assert sweep_plan.Inputs(study).passes(once) == [[]]  # one pass: nothing more to read

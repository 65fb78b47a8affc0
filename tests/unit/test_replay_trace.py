"""The trace format: parsing XrdClRecorder's CSV, stripping credentials (through `instore
record` itself, with a command that writes recorder lines), think times, and the one-line
refusals of what is not a trace."""

from __future__ import annotations

import io
import json
import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.replay.record_cmd import events_in_line, record
from instore.replay.targets import by_url_map, file_name
from instore.replay.trace import (
    REDACTED,
    Request,
    Trace,
    load_trace,
    parse_csv,
    sanitize_line,
    strip_command,
    think_times,
)
from instore.replay.xrdreplay import mapped_csv, parse_summary

# Written by the ROOT wheel's recorder (XrdCl 5) for a PyROOT loop over root:// (2026-11-25).
ROOT_CSV = """\
"94831205776512","Open","100.000000000","root://localhost:21094//ordered-r0.root;16;0;0","100.002500000","[SUCCESS]",""
"94831205776512","Read","100.003000000","0;300;0","100.004000000","[SUCCESS]","300"
"94831205776512","Stat","100.004100000","false;0","100.004110000","[SUCCESS]","3128632;48;1795594966;1795594966;1795594974;rw-r--r--;xrootd;root;"
"94831205776512","Read","100.005000000","3128120;431;0","100.006000000","[SUCCESS]","431"
"94831205776512","VectorRead","100.106000000","270;970541;0","100.110000000","[SUCCESS]","970541;270;970541"
"94831205776512","VectorRead","100.310000000","970811;2097136;3067947;46121;0","100.315000000","[SUCCESS]","2143257;970811;2097136;3067947;46121"
"94831205776512","Close","100.415000000","0","100.416000000","[SUCCESS]",""
"""
# uproot's client (XrdCl 6) keeps two vector reads in flight; lines come in completion order.
UPROOT_CSV = """\
"1","Open","10.0","root://h//a.root;16;0;0","10.1","[SUCCESS]",""
"1","VectorRead","10.3","0;10;100;10;0","10.6","[SUCCESS]","20;0;10;100;10"
"1","VectorRead","10.2","200;5;0","10.5","[SUCCESS]","5;200;5"
"1","Close","10.7","0","10.8","[SUCCESS]",""
"""
SECRET = "s3cr3tT0ken"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl"


def test_parse_root_trace() -> None:
    files, requests, skipped = parse_csv(ROOT_CSV, "t")
    assert files == ["root://localhost:21094//ordered-r0.root"]
    assert [r.op for r in requests] == [
        "Open", "Read", "Stat", "Read", "VectorRead", "VectorRead", "Close",
    ]  # fmt: skip
    assert requests[4].chunks == ((270, 970541),)
    assert requests[5].chunks == ((970811, 2097136), (3067947, 46121))
    assert requests[5].nbytes == 2143257
    assert requests[2].force is False
    assert skipped == {}


def test_requests_sorted_by_start_and_overlap_counted() -> None:
    _, requests, _ = parse_csv(UPROOT_CSV, "t")
    assert [r.start for r in requests] == [10.0, 10.2, 10.3, 10.7]
    think = think_times(requests)
    # 10.2 after the open's end 10.1; 10.3 starts while 10.2 is in flight; close 0.1 after 10.6
    assert think.before == pytest.approx((0.0, 0.1, 0.0, 0.1))
    assert think.overlapping == 1


def test_think_times_with_job_times() -> None:
    reqs = [Request("Open", 0, 1, 5.0, 5.5), Request("Read", 0, 1, 7.5, 8.0),
            Request("Close", 0, 1, 8.25, 8.5)]  # fmt: skip
    think = think_times(reqs, job_start=2.0, job_end=10.0)
    assert think.lead_s == pytest.approx(3.0)
    assert think.before == pytest.approx((0.0, 2.0, 0.25))
    assert think.tail_s == pytest.approx(1.5)
    assert think.total_s == pytest.approx(6.75)
    assert think.overlapping == 0


def test_writes_and_failures_are_skipped_not_replayed() -> None:
    text = ROOT_CSV.replace('"Read","100.005000000","3128120;431;0","100.006000000","[SUCCESS]"',
                            '"Read","100.005000000","3128120;431;0","100.006000000","[ERROR] x"')  # fmt: skip
    text += '"7","Open","101","root://h//out.root;2;0;0","101.1","[SUCCESS]",""\n'
    text += '"7","Write","101.2","0;100;0","101.3","[SUCCESS]",""\n'
    files, requests, skipped = parse_csv(text, "t")
    assert skipped == {"failed Read": 1, "Write": 1}
    assert sum(r.op == "Read" for r in requests) == 1
    assert files[1] == "root://h//out.root"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("a,b,c\n1,2,3\n", "not an XrdClRecorder trace"),
        (ROOT_CSV[:-40], "truncated"),
        (ROOT_CSV.replace('"[SUCCESS]",""\n', '"[SUCCESS]","","new"\n', 1), "newer recorder"),
        (ROOT_CSV.replace('"Stat"', '"StatX"'), "unknown to this parser"),
        (ROOT_CSV.replace('"100.002500000"', '"soon"', 1), "not an XrdClRecorder line"),
        ("\n".join(ROOT_CSV.splitlines()[1:]) + "\n", "never opened"),
        (ROOT_CSV.replace("270;970541;0", "270;0"), "without offset;size pairs"),
    ],
)
def test_bad_traces_one_line(text: str, says: str) -> None:
    with pytest.raises(InstoreError) as err:
        parse_csv(text, "t.csv")
    line = str(err.value)
    assert says in line
    assert "\n" not in line and " -- " in line  # the cause, then the fix


def test_newer_trace_version_and_not_text(tmp_path: Path) -> None:
    (tmp_path / "xrdcl.csv").write_text(ROOT_CSV)
    (tmp_path / "trace.json").write_text(json.dumps({"trace_version": 99}))
    with pytest.raises(InstoreError, match="newer than this instore reads"):
        load_trace(tmp_path)
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InstoreError, match="not text"):
        load_trace(binary)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InstoreError, match=r"holds no xrdcl\.csv"):
        load_trace(empty)


def test_sanitize_line_strips_every_credential() -> None:
    raw = (f'"1","Open","1.0","root://user:pw@h:1094//f.root?authz={SECRET}&xrd.wantprot=gsi;'
           f'16;0;0","1.1","[ERROR] Server responded: [3010] no access to '
           f'https://h/f?access_token={SECRET} with {JWT}",""')  # fmt: skip
    line = sanitize_line(raw)
    assert SECRET not in line and JWT not in line and "pw@" not in line
    assert "wantprot" not in line  # any CGI, not only the known token names
    assert '"root://h:1094//f.root;16;0;0"' in line
    files, _, skipped = parse_csv(line.replace("[ERROR]", "[SUCCESS]") + "\n", "t")
    assert files == ["root://h:1094//f.root"] and skipped == {}


def test_strip_command() -> None:
    argv = ["python", "ana.py", "--token", SECRET, f"--password={SECRET}",
            f"root://h//f.root?authz={SECRET}", f"BEARER_TOKEN={SECRET}", JWT, "--events", "10"]  # fmt: skip
    out = strip_command(argv)
    assert SECRET not in json.dumps(out) and JWT not in json.dumps(out)
    assert out[:4] == ["python", "ana.py", "--token", REDACTED]
    assert out[5] == "root://h//f.root" and out[-2:] == ["--events", "10"]


def _writer_script(tmp_path: Path) -> Path:
    """A 'job' of two processes, each writing recorder lines as XrdClRecorder does (opening
    XRD_RECORDERPATH with O_TRUNC), with tokens in URLs and messages."""
    script = tmp_path / "job.py"
    lines = [
        f'"5","Open","{{t}}","root://h//a.root?authz={SECRET}&x=1;16;0;0","{{t}}","[SUCCESS]",""',
        '"5","Read","{t}","0;100;0","{t}","[SUCCESS]","100"',
        '"5","Close","{t}","0","{t}","[SUCCESS]",""',
    ]
    script.write_text(
        "import os, subprocess, sys, time\n"
        f"LINES = {lines!r}\n"
        "def write():\n"
        "    fd = os.open(os.environ['XRD_RECORDERPATH'], os.O_CREAT | os.O_WRONLY | os.O_TRUNC)\n"
        "    for line in LINES:\n"
        "        os.write(fd, (line.format(t=time.time()) + '\\n').encode())\n"
        "    os.close(fd)\n"
        "if sys.argv[1:] == ['child']:\n"
        "    write()\n"
        "else:\n"
        "    write()\n"
        "    subprocess.run([sys.executable, __file__, 'child'], check=True)\n"
        "    sum(i * i for i in range(300000))\n"
        "    sys.exit(3)\n"
    )
    return script


def test_record_keeps_no_credential_and_every_process(tmp_path: Path) -> None:
    script = _writer_script(tmp_path)
    code, trace_dir = record([sys.executable, str(script), "--token", SECRET], tmp_path / "tr")
    assert code == 3
    for path in trace_dir.iterdir():
        text = path.read_text()
        assert SECRET not in text, path.name
        assert "authz" not in text, path.name
    meta = json.loads((trace_dir / "trace.json").read_text())
    assert meta["exit_code"] == 3 and meta["command"][-1] == REDACTED
    assert meta["cpu_s"] == pytest.approx(meta["user_s"] + meta["sys_s"])
    assert meta["cpu_s"] > 0 and meta["start_unix"] < meta["end_unix"]
    assert set(meta["recorder"]["offered"]) == {"XrdCl 5", "XrdCl 6"}
    trace = load_trace(trace_dir)
    # both processes' lines are there: the FIFO is not truncated by the second's open
    assert [r.op for r in trace.requests] == ["Open", "Read", "Close"] * 2
    assert trace.files == ("root://h//a.root",)
    assert trace.summary()["bytes_read"] == 200


# A job printing as analyses/agc_ttbar_*.py do: its result as one JSON line, among others.
PRINTING_JOB = (
    "import json, sys\n"
    "print('processing', flush=True)\n"
    "print(json.dumps({'analysis': 'a', 'events': 1234, 'cutflow': {'all': 1234}}))\n"
    "print(json.dumps({'events': 'many'}))\n"  # not an integer: not the job's events
    "sys.stdout.write('done, no newline')\n"
)


def test_record_learns_the_events_the_job_prints_and_passes_its_output_on(
    tmp_path: Path,
) -> None:
    out = io.BytesIO()
    code, trace_dir = record([sys.executable, "-c", PRINTING_JOB], tmp_path / "tr", stdout=out)
    assert code == 0
    printed = out.getvalue().decode()
    assert printed.startswith("processing\n{") and printed.endswith("}\ndone, no newline")
    meta = json.loads((trace_dir / "trace.json").read_text())
    assert (meta["events"], meta["events_from"]) == (1234, "stdout")
    # no XRootD request was made: the trace holds metadata only (what load_trace reads)
    assert (trace_dir / "xrdcl.csv").read_text() == ""


def test_record_events_given_win_and_unknown_stay_none(tmp_path: Path) -> None:
    _, given = record([sys.executable, "-c", PRINTING_JOB], tmp_path / "a", events=99,
                      stdout=io.BytesIO())  # fmt: skip
    assert json.loads((given / "trace.json").read_text())["events"] == 99
    _, silent = record([sys.executable, "-c", "print('no result')"], tmp_path / "b",
                       stdout=io.BytesIO())  # fmt: skip
    meta = json.loads((silent / "trace.json").read_text())
    assert meta["events"] is None and meta["events_from"] is None


def test_negative_events_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--events", "-5", "--out", str(tmp_path / "t"), "--", "true"]) == 2
    err = capsys.readouterr().err
    assert "events is negative -- give --events 0 or more" in err
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("line", "events"),
    [
        ('{"analysis": "x", "events": 10}', 10),
        (b'  {"events": 0}\r', 0),
        ('{"events": true}', None),
        ('{"events": 1.5}', None),
        ('{"events": -1}', None),
        ("[1, 2]", None),
        ('{"events": 3', None),
        ("events: 3", None),
    ],
)
def test_events_in_line(line: str | bytes, events: int | None) -> None:
    assert events_in_line(line) == events


def test_trace_events_in_summary_and_old_traces_without_them(tmp_path: Path) -> None:
    (tmp_path / "xrdcl.csv").write_text(ROOT_CSV)
    (tmp_path / "trace.json").write_text(json.dumps({"trace_version": 1, "wall_s": 1.0}))
    assert load_trace(tmp_path).summary()["events"] is None  # recorded before events were
    (tmp_path / "trace.json").write_text(json.dumps({"trace_version": 1, "events": 5000}))
    assert load_trace(tmp_path).summary()["events"] == 5000


def test_progress_counts_the_share_of_a_pass_s_data_read() -> None:
    """A cut pass stands for the data it has read: after the open nothing (the job's start-up
    is not progress), after the first read 300 of the pass's 3,114,529 bytes, after the last
    read the whole pass; the Stat and the Close add nothing."""
    files, requests, _ = parse_csv(ROOT_CSV, "t")
    trace = _trace_of(files, requests, {"start_unix": 99.6, "end_unix": 101.0})
    total = 300 + 431 + 970541 + 2143257
    progress = trace.progress()
    assert [r.op for r in requests] == ["Open", "Read", "Stat", "Read", "VectorRead",
                                        "VectorRead", "Close"]  # fmt: skip
    assert progress[0] == 0.0
    assert progress[1] == pytest.approx(300 / total) and progress[2] == progress[1]
    assert progress[4] == pytest.approx((300 + 431 + 970541) / total)
    assert progress[-2] == progress[-1] == 1.0
    assert progress == sorted(progress)
    # the job's timeline does not enter: a bare CSV counts the same
    assert _trace_of(files, requests, {}).progress() == progress


def _trace_of(files: list[str], requests: list[Request], meta: dict[str, float]) -> Trace:
    return Trace(Path("t"), Path("t.csv"), tuple(files), tuple(requests), {}, meta)


def test_record_refuses_preset_plugin(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XRD_PLUGIN", "/x/libOther.so")
    with pytest.raises(InstoreError, match="XRD_PLUGIN is already set"):
        record(["true"], tmp_path / "t")


def test_cli_record_missing_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["record", "--out", str(tmp_path / "t"), "--", "no-such-program-here"]) == 2
    assert "cannot run 'no-such-program-here'" in capsys.readouterr().err


def test_url_map_and_file_names() -> None:
    files = ["root://a.example:1094//store/x/f1.root", "root://b.example//data/f2.root"]
    targets = by_url_map(files, ["root://a.example:1094//store/=/data/",
                                 "root://b.example//=https://c.example/"])  # fmt: skip
    assert targets.urls == ("/data/x/f1.root", "https://c.example/data/f2.root")
    assert [file_name(f) for f in files] == ["f1.root", "f2.root"]
    with pytest.raises(InstoreError, match="matches no --url-map prefix"):
        by_url_map(files, ["root://a.example:1094//=/d/"])
    with pytest.raises(InstoreError, match="is not OLD=NEW"):
        by_url_map(files, ["nothing"])


def test_xrdreplay_mapping_and_summary(tmp_path: Path) -> None:
    (tmp_path / "xrdcl.csv").write_text(ROOT_CSV)
    trace = load_trace(tmp_path)
    text = mapped_csv(trace, by_url_map(trace.files, ["root://localhost:21094//=root://s:1//d/"]))
    assert '"root://s:1//d/ordered-r0.root;16;0;0"' in text
    assert text.count("\n") == ROOT_CSV.count("\n")
    out = parse_summary(
        "# read::n : 4\n# =====\n# IO Summary\n# =====\n# Total   Runtime  : 0.008069 s\n"
        "# Sampled Runtime  : 0.275177 s\n# IOPS      (R)    : 6 [ std:4 vec:2 page:0 ]\n"
        "# Performance Mark : 3410.21%\n# Response Errors  : 0\n"
    )
    assert out["total_runtime_s"] == pytest.approx(0.008069)
    assert out["sampled_runtime_s"] == pytest.approx(0.275177)
    assert out["iops_read"] == 6 and out["response_errors"] == 0
    assert out["performance_mark_pct"] == pytest.approx(3410.21)
    assert "read::n" not in out["printed"]


# A job that counts its runs in a file and prints its result as analyses/ do.
COUNTING_JOB = (
    "import json, pathlib, sys\n"
    "runs = pathlib.Path(sys.argv[1])\n"
    "n = int(runs.read_text()) + 1 if runs.exists() else 1\n"
    "runs.write_text(str(n))\n"
    "print(json.dumps({'events': 100 * n}))\n"
    "sys.exit(0 if n < int(sys.argv[2]) else 5)\n"
)


def test_warm_up_runs_first_unrecorded_and_the_trace_says_so(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    out = io.BytesIO()
    code, trace_dir = record([sys.executable, "-c", COUNTING_JOB, str(runs), "9"],
                             tmp_path / "tr", stdout=out, warm_up=2)  # fmt: skip
    assert code == 0 and runs.read_text() == "3"
    # the recorded run is the third; the warm-ups' output did not reach the job's stdout
    assert out.getvalue().decode() == '{"events": 300}\n'
    meta = json.loads((trace_dir / "trace.json").read_text())
    assert meta["events"] == 300 and meta["software_warm"] is True
    assert [w["exit_code"] for w in meta["warm_up"]] == [0, 0]
    assert all(w["wall_s"] > 0 and w["cpu_s"] > 0 for w in meta["warm_up"])


def test_a_failing_warm_up_records_nothing_and_says_which_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    out = str(tmp_path / "tr")
    argv = ["record", "--warm-up", "3", "--out", out, "--", sys.executable, "-c", COUNTING_JOB]
    assert main([*argv, str(runs), "2"]) == 2
    err = capsys.readouterr().err
    assert "warm-up run 2 of the command exited with 5; nothing was recorded" in err
    assert "run the command by hand" in err and runs.read_text() == "2"
    assert not Path(out).exists()
    assert main(["record", "--warm-up", "-1", "--out", out, "--", "true"]) == 2
    assert "warm-up is negative -- give --warm-up 0" in capsys.readouterr().err


def test_ctrl_c_during_a_warm_up_says_interrupted_not_a_failing_command(tmp_path: Path) -> None:
    """Ctrl-C reaches the recorder while it waits for a warm-up run (here: only the recorder,
    so the run itself ends well): the error says so instead of blaming the command. Ctrl-C as
    a terminal delivers it: a suite started in the background (nohup, `make test &`) inherits
    SIGINT ignored, and Python then raises no KeyboardInterrupt."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(InstoreError, match="interrupted during warm-up run 1 of 1") as err:
            record([sys.executable, "-c", "import time; time.sleep(1.5)"], tmp_path / "tr",
                   warm_up=1)  # fmt: skip
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert "run instore record again" in str(err.value) and not (tmp_path / "tr").exists()

"""The closed loop on a local file: the recorded think time is kept, the reads are the
recorded ones, a replay that fails part-way records what it measured and why it stopped, and
HEPiX's fixed-time mode replays the trace until the time is up and counts the events."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path

import pytest
from instore.cli import main
from instore.errors import InstoreError
from instore.replay.closed_loop import replay
from instore.replay.targets import Targets, by_url_map
from instore.replay.trace import load_trace
from instore.storage.file import FileReader

SIZE = 1 << 20
GAP = 0.15  # think time between responses and the next request, as recorded
EVENTS = 4000  # the events the recorded job processed
URL_MAP = "root://old.example//store/={}/data/"


def _trace(tmp_path: Path, gap: float = GAP, events: int | None = EVENTS) -> Path:
    """A recorded job: lead-in 0.1 s, open, a read, two vector reads, close, tail 0.05 s."""
    t = 1000.0
    rows = []

    def add(op: str, args: str, dur: float, resp: str = "") -> None:
        nonlocal t
        rows.append(f'"9","{op}","{t:.9f}","{args}","{t + dur:.9f}","[SUCCESS]","{resp}"')
        t += dur + gap

    add("Open", "root://old.example//store/f.root;16;0;0", 0.01)
    add("Read", "0;4096;0", 0.001, "4096")
    add("VectorRead", "8192;1000;500000;20000;0", 0.002, "21000;8192;1000;500000;20000")
    add("Stat", "false;0", 0.0)
    add("VectorRead", f"{SIZE - 100};100;0", 0.001, f"100;{SIZE - 100};100")
    add("Close", "0", 0.001)
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    end = t - gap + 0.05
    meta = {"trace_version": 1, "start_unix": 999.9, "end_unix": end, "wall_s": end - 999.9,
            "cpu_s": 0.5, "user_s": 0.4, "sys_s": 0.1, "exit_code": 0, "command": ["ana"],
            "events": events}  # fmt: skip
    (trace / "trace.json").write_text(json.dumps(meta))
    data = tmp_path / "data"
    data.mkdir()
    (data / "f.root").write_bytes(bytes(range(256)) * (SIZE // 256))
    return trace


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_closed_loop_keeps_think_time_and_reads(tmp_path: Path) -> None:
    trace = load_trace(_trace(tmp_path))
    think = trace.think()
    assert think.lead_s == pytest.approx(0.1) and think.tail_s == pytest.approx(0.05)
    assert think.between_s == pytest.approx(5 * GAP)
    rec = replay(trace, by_url_map(trace.files, [f"root://old.example//store/={tmp_path}/data/"]))
    assert rec.error is None and rec.requests_done == rec.requests_total == 6
    assert rec.bytes_read == trace.summary()["bytes_read"] == 4096 + 21000 + 100
    assert (rec.read_calls, rec.vector_reads, rec.chunks_read) == (3, 2, 4)
    assert rec.stats_from_open == 1
    assert rec.wall_s >= think.total_s
    assert rec.wall_s < think.total_s + 0.5  # the loop adds little beyond the think time
    assert rec.predicted_cpu_efficiency == pytest.approx(0.5 / rec.wall_s)
    assert rec.read_latency_p50_s is not None and rec.read_latency_p99_s is not None
    assert rec.read_latency_p50_s <= rec.read_latency_p99_s
    assert rec.passes == 1.0 and rec.fixed_time_s == 0.0
    assert rec.events == EVENTS and rec.events_per_s == pytest.approx(EVENTS / rec.wall_s)


def test_failure_part_way_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace_dir = _trace(tmp_path)
    calls = {"n": 0}
    real = FileReader.read_ranges

    def flaky(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("the disk went away")
        return real(self, ranges)

    monkeypatch.setattr(FileReader, "read_ranges", flaky)
    out = tmp_path / "rec.json"
    code = main(["replay", str(trace_dir), "--url-map",
                 f"root://old.example//store/={tmp_path}/data/", "--out", str(out)])  # fmt: skip
    assert code == 1
    rec = json.loads(out.read_text())
    assert rec["stopped_at"] == 2 and rec["requests_done"] == 2
    assert "VectorRead (request 2 of 6)" in rec["error"] and "the disk went away" in rec["error"]
    assert rec["bytes_read"] == 4096 and rec["read_calls"] == 1
    assert rec["predicted_cpu_efficiency"] is None and rec["predicted_wall_s"] is None
    # it stood for the share of the data it read: the first read, 4096 of 25,196 bytes
    done = load_trace(trace_dir).progress()[1]
    assert done == pytest.approx(4096 / (4096 + 21000 + 100))
    assert rec["passes"] == pytest.approx(done) and rec["events"] == pytest.approx(EVENTS * done)


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_fixed_time_replays_until_the_time_is_up(tmp_path: Path) -> None:
    """HEPiX's method: pass after pass (about 0.27 s each here) until 0.7 s have passed, then
    stop mid-pass; the cut pass counts the share of a pass's data it has read."""
    trace = load_trace(_trace(tmp_path, gap=0.02))
    fixed = 0.7
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]), fixed_time_s=fixed)
    assert rec.error is None and rec.fixed_time_s == fixed
    assert rec.wall_s == pytest.approx(fixed, abs=0.1)
    assert rec.passes is not None and 1 < rec.passes < 4
    whole = int(rec.passes)
    assert any(rec.passes - whole == pytest.approx(p) for p in [0.0, *trace.progress()])
    assert rec.passes == pytest.approx(rec.bytes_read / (4096 + 21000 + 100))
    assert rec.requests_done >= 6 * (rec.passes // 1) - 1  # a pass whose data is in: 5 of 6
    assert rec.events == pytest.approx(rec.passes * EVENTS)
    assert rec.events_per_s == pytest.approx(rec.events / rec.wall_s)
    # the CPU it stands for: whole passes, the cut one by the share of a pass's think time it
    # replayed (0.25 s a pass), not of its data bytes; 0.5 s of CPU in 0.265 s of recorded
    # wall kept two cores busy, and the efficiency is per core
    assert rec.predicted_cpu_s == pytest.approx(0.5 * rec.think_s / trace.think().total_s)
    assert abs(rec.predicted_cpu_s / 0.5 - rec.passes) < 1  # they differ in the cut pass only
    assert rec.job_cores == 2
    per_core = rec.predicted_cpu_s / (2 * rec.wall_s)
    assert rec.predicted_cpu_efficiency == pytest.approx(min(1.0, per_core))
    assert rec.cpu_bound == (per_core > 1)
    assert rec.predicted_wall_s == pytest.approx(rec.wall_s / rec.passes)
    # each complete pass's own wall, lead-in to tail: together no more than the fixed time,
    # each about the trace's recorded think (0.25 s a pass; a sleep overslept is taken off the
    # next one, so a pass may come a little under it); the cut pass, which may have read all
    # its data before the time was up in its tail, has none
    assert 0 <= rec.passes - len(rec.pass_walls_s) <= 1
    assert all(0.2 < w < fixed for w in rec.pass_walls_s), rec.pass_walls_s
    assert sum(rec.pass_walls_s) <= rec.wall_s


def test_later_passes_read_their_own_files_cold(tmp_path: Path) -> None:
    """--pass-target: pass 2 reads the first, pass 3 the second, then round again, so no pass
    finds its file in the page cache its previous pass filled. A missing one stops the replay
    naming it and its pass."""
    trace = load_trace(_trace(tmp_path, gap=0.02))
    data = tmp_path / "data"
    copies = [data / "copy-1.root", data / "copy-2.root"]
    for copy in copies:
        copy.write_bytes((data / "f.root").read_bytes())
    targets = by_url_map(trace.files, [URL_MAP.format(tmp_path)])
    assert targets.with_pass_urls([str(c) for c in copies]).for_pass(3) == (str(copies[0]),)
    rec = replay(trace, targets.with_pass_urls([str(c) for c in copies]), fixed_time_s=0.7)
    assert rec.error is None and rec.passes is not None and rec.passes > 1
    assert rec.pass_urls == [str(c) for c in copies]
    gone = str(data / "gone.root")
    rec = replay(trace, targets.with_pass_urls([gone]), fixed_time_s=0.7, check=False)
    assert rec.error is not None and "in pass 2) on " + gone in rec.error
    assert rec.passes == pytest.approx(1.0)  # the first pass, on the target, was whole


def test_pass_targets_need_fixed_time_and_a_one_file_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_dir = _trace(tmp_path)
    code = main(["replay", str(trace_dir), "--url-map", URL_MAP.format(tmp_path),
                 "--pass-target", str(tmp_path / "data" / "f.root")])  # fmt: skip
    assert code == 2 and "give --fixed-time S with it" in capsys.readouterr().err
    two = Targets(("/a.root", "/b.root"))
    with pytest.raises(InstoreError, match="the trace reads 2"):
        two.with_pass_urls(["/c.root"])


def test_no_events_in_the_trace_and_a_negative_fixed_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace_dir = _trace(tmp_path, gap=0.01, events=None)
    trace = load_trace(trace_dir)
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]))
    assert rec.passes == 1.0 and rec.events is None and rec.events_per_s is None
    code = main(["replay", str(trace_dir), "--url-map", URL_MAP.format(tmp_path),
                 "--fixed-time", "-1"])  # fmt: skip
    assert code == 2
    assert "fixed time is negative -- give --fixed-time 0 (replay once) or more seconds" in (
        capsys.readouterr().err
    )


def test_target_too_small_or_missing(tmp_path: Path) -> None:
    trace = load_trace(_trace(tmp_path))
    (tmp_path / "data" / "f.root").write_bytes(b"x" * 1000)
    targets = by_url_map(trace.files, [f"root://old.example//store/={tmp_path}/data/"])
    with pytest.raises(InstoreError, match="holds 1000 bytes but the trace reads up to byte"):
        replay(trace, targets)
    (tmp_path / "data" / "f.root").unlink()
    with pytest.raises(InstoreError, match="1 of 1 trace file"):
        replay(trace, targets)


def test_the_collector_leaves_the_trace_alone_while_the_replay_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What exists before the clock (modules, the trace) is frozen: the cyclic collector the
    reads' small objects set off no longer walks it (a quarter of a paced replay's CPU)."""
    trace = load_trace(_trace(tmp_path, gap=0.0))
    seen: list[tuple[int, bool]] = []
    read_ranges = FileReader.read_ranges

    def watching(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        tracked = any(o is trace.requests for o in gc.get_objects(generation=2))
        seen.append((gc.get_freeze_count(), tracked))
        return read_ranges(self, ranges)

    monkeypatch.setattr(FileReader, "read_ranges", watching)
    try:
        rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]))
    finally:
        gc.unfreeze()
    assert rec.error is None and len(seen) == 3
    assert all(frozen > 0 and not tracked for frozen, tracked in seen)


def _startup_trace(tmp_path: Path, reads: int, read_size: int) -> Path:
    """A recorded job with a long start-up (0.3 s of imports and opening before its first
    read), then ``reads`` reads 5 ms apart: as the AGC-style analyses the load section replays."""
    t = 1000.0
    rows = [f'"9","Open","{t:.6f}","root://old.example//store/f.root;16;0;0","{t + 0.01:.6f}",'
            '"[SUCCESS]",""']  # fmt: skip
    t += 0.3
    for i in range(reads):
        rows.append(f'"9","Read","{t:.6f}","{i * read_size};{read_size};0","{t + 0.001:.6f}",'
                    f'"[SUCCESS]","{read_size}"')  # fmt: skip
        t += 0.006
    rows.append(f'"9","Close","{t:.6f}","0","{t + 0.001:.6f}","[SUCCESS]",""')
    trace = tmp_path / "startup-trace"
    trace.mkdir()
    (trace / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    meta = {"trace_version": 1, "start_unix": 999.9, "end_unix": t + 0.05, "wall_s": t - 999.85,
            "cpu_s": 0.3, "user_s": 0.3, "sys_s": 0.0, "exit_code": 0, "command": ["ana"],
            "events": EVENTS}  # fmt: skip
    (trace / "trace.json").write_text(json.dumps(meta))
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "f.root").write_bytes(bytes(reads * read_size))
    return trace


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_fixed_time_events_per_mb_stay_put_when_the_disk_saturates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that serves one read at a time gives each of k clients every k-th read: a read
    takes k times its service time. In fixed time, fewer bytes then mean fewer events: the
    events counted per MB read stay within 10% from 1 to 64 clients. Counted along the recorded
    timeline (before), a client cut after its start-up and one read stood for 0.6 of a pass."""
    service_s = 0.004
    trace = load_trace(_startup_trace(tmp_path, reads=20, read_size=25_000))
    targets = by_url_map(trace.files, [URL_MAP.format(tmp_path)])
    real = FileReader.read_ranges
    per_mb = {}
    for clients in (1, 4, 16, 64):

        def saturated(self: FileReader, ranges: list[tuple[int, int]], k: int = clients) -> list:
            time.sleep(service_s * k)  # the disk's queue: every client's reads ahead of this one
            return real(self, ranges)

        monkeypatch.setattr(FileReader, "read_ranges", saturated)
        rec = replay(trace, targets, fixed_time_s=0.6, check=False)
        assert rec.error is None and rec.bytes_read > 0 and rec.events is not None
        per_mb[clients] = rec.events / (rec.bytes_read / 1e6)
    base = per_mb[1]
    assert all(abs(v / base - 1) <= 0.10 for v in per_mb.values()), per_mb
    # the CPU follows the time replayed away from storage (its start-up CPU was spent even
    # where its reads were not), never the data's share; at most 1 per core
    assert rec.predicted_cpu_s == pytest.approx(0.3 * rec.think_s / trace.think().total_s)
    assert rec.predicted_cpu_efficiency <= 1.0

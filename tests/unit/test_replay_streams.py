"""Streams: a multi-threaded job's file objects replayed side by side, each closed-loop with its
own think times (its wall about the longer stream's), ``--serialise`` one after another (about
the sum), a single-stream trace as before, and requests on one file object that cannot be told
apart replayed one after another with one line saying why."""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path

import pytest
from instore.replay.closed_loop import replay
from instore.replay.streams import SERIALISE, concurrent_objects, group_handles, plan
from instore.replay.targets import by_url_map
from instore.replay.trace import load_trace, parse_csv, think_times
from instore.storage.file import FileReader

DATA = Path(__file__).parent / "data"
URL_MAP = "root://old.example//store/={}/data/"
SERVICE = 0.06  # each read's time on the storage, recorded and replayed alike
THINK = 0.04  # each stream's CPU between a response and its next read
READS = 3  # per stream
SIZE = 1 << 20


def _row(obj: str, op: str, t: float, args: str, dur: float, resp: str = "") -> str:
    return f'"{obj}","{op}","{t:.6f}","{args}","{t + dur:.6f}","[SUCCESS]","{resp}"'


def _two_streams(tmp_path: Path, offset: float = 0.01) -> Path:
    """Two threads of one job, each with its own file object: open, READS x (think, read),
    close; the second starts ``offset`` s after the first, so their requests overlap."""
    rows = []
    for k, obj in enumerate(("140001", "140002")):
        t = 1000.0 + k * offset
        rows.append(_row(obj, "Open", t, "root://old.example//store/f.root;16;0;0", 0.005))
        t += 0.005
        for i in range(READS):
            t += THINK
            at = (2 * i + k) * 100_000
            rows.append(_row(obj, "Read", t, f"{at};50000;0", SERVICE, "50000"))
            t += SERVICE
        rows.append(_row(obj, "Close", t + 0.005, "0", 0.001))
    end = 1000.0 + offset + 0.005 + READS * (THINK + SERVICE) + 0.006 + 0.02
    trace = tmp_path / "trace"
    trace.mkdir()
    (trace / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    meta = {"trace_version": 1, "start_unix": 999.95, "end_unix": end, "wall_s": end - 999.95,
            "cpu_s": 0.5, "exit_code": 0, "events": 1000}  # fmt: skip
    (trace / "trace.json").write_text(json.dumps(meta))
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "f.root").write_bytes(bytes(SIZE))
    return trace


@pytest.fixture
def slow_disk(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float, float]]:
    """Every read takes SERVICE s, as recorded; (thread, issued, answered) of each."""
    seen: list[tuple[str, float, float]] = []
    real = FileReader.read_ranges

    def slow(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        t0 = time.perf_counter()
        time.sleep(SERVICE)
        out = real(self, ranges)
        seen.append((threading.current_thread().name, t0, time.perf_counter()))
        return out

    monkeypatch.setattr(FileReader, "read_ranges", slow)
    return seen


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_two_streams_side_by_side_each_with_its_think_times(
    tmp_path: Path, slow_disk: list[tuple[str, float, float]]
) -> None:
    trace = load_trace(_two_streams(tmp_path))
    targets = by_url_map(trace.files, [URL_MAP.format(tmp_path)])
    rec = replay(trace, targets)
    assert rec.error is None and rec.streams == rec.streams_in_trace == 2
    summary = trace.summary()
    assert (rec.bytes_read, rec.read_calls) == (summary["bytes_read"], summary["read_calls"])
    assert rec.bytes_read == 2 * READS * 50_000
    stream_s = 0.005 + READS * (THINK + SERVICE) + 0.006  # one stream, open to close
    longer = 0.05 + 0.01 + stream_s + 0.02  # lead-in, the second's offset, the stream, tail
    # (a local open and close take less than the recorded 6 ms); the sum is 0.15 s more
    assert longer - 0.02 <= rec.wall_s < longer + 0.1
    assert rec.overlapping_requests == rec.overlapping_side_by_side > 0
    assert rec.overlapping_serialised == 0 and rec.serialise_reason is None
    assert rec.overlapping_replayed and rec.overlapping_replayed >= READS  # measured overlap
    # each stream's reads in a thread of its own, THINK apart after each response
    by_thread: dict[str, list[tuple[float, float]]] = {}
    for name, t0, t1 in slow_disk:
        by_thread.setdefault(name, []).append((t0, t1))
    assert len(by_thread) == 2 and all(len(v) == READS for v in by_thread.values())
    # a pause the timer overslept is taken off the stream's next one (the clock's debt), so a
    # single gap may come short by what the pause before it overslept; their sum may not
    gaps = [b[0] - a[1] for reads in by_thread.values() for a, b in itertools.pairwise(reads)]
    assert all(0 < g < THINK + 0.03 for g in gaps), gaps
    owed = len(gaps) * THINK - rec.sleep_overshoot_s - 0.002
    assert sum(gaps) >= owed, (gaps, rec.sleep_overshoot_s)


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_serialise_gives_the_sum(tmp_path: Path, slow_disk: list) -> None:
    trace = load_trace(_two_streams(tmp_path))
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]), serialise=True)
    assert rec.error is None and (rec.streams, rec.streams_in_trace) == (1, 2)
    assert rec.serialise_reason == SERIALISE
    assert rec.overlapping_serialised == rec.overlapping_requests and rec.overlapping_replayed == 0
    think = trace.think()
    reads = 2 * READS * SERVICE  # every read after the other's
    assert rec.wall_s >= think.total_s + reads
    assert rec.wall_s < think.total_s + reads + 0.15
    assert rec.bytes_read == 2 * READS * 50_000 and rec.read_calls == 2 * READS


def test_single_stream_trace_is_the_serial_plan() -> None:
    """One file object, or several never in flight together: as before, one after another."""
    one = [_row("7", "Open", 10, "root://h//a.root;16;0;0", 0.1),
           _row("7", "Read", 10.2, "0;10;0", 0.1, "10"),
           _row("8", "Open", 10.35, "root://h//b.root;16;0;0", 0.1),  # a friend, same thread
           _row("8", "Read", 10.5, "0;10;0", 0.1, "10"),
           _row("7", "Read", 10.7, "10;10;0", 0.1, "10"),
           _row("7", "Close", 10.9, "0", 0.1), _row("8", "Close", 11.1, "0", 0.1)]  # fmt: skip
    _, requests, _ = parse_csv("\n".join(one) + "\n", "t")
    assert not concurrent_objects(requests)
    think = think_times(requests)
    p = plan(requests, think)
    assert p.streams == (tuple(range(len(requests))),) and p.before == think.before
    assert p.serialise_reason is None and p.side_by_side == p.serialised == 0


def test_recorded_two_thread_rdataframe_job() -> None:
    """A real recording (ROOT 6.40, EnableImplicitMT(2), over root://): the main thread opens
    the file for the tree's metadata, then for the data frame (read between the first's reads
    and its Close, kept open to the job's end), then once more; then a file object per task,
    two at a time. Two streams: the main thread's with its tasks', and the other thread's."""
    _, requests, _ = parse_csv((DATA / "rdf-mt2-xrdcl.csv").read_text(), "t")
    assert concurrent_objects(requests)
    stream_of = group_handles(requests)
    assert len(stream_of) == 6
    main_thread = {h for h, k in stream_of.items() if k == stream_of[1]}
    assert main_thread == {1, 2, 3, 4, 6} and set(stream_of.values()) == {0, 1}
    p = plan(requests, think_times(requests))
    assert sorted(len(s) for s in p.streams) == [9, 42]
    assert p.side_by_side == p.overlapping > 0 and p.serialised == 0
    # the data frame's file is closed last, after the other thread's stream has ended
    final = len(requests) - 1
    assert requests[final].op == "Close" and requests[final].handle == 2
    assert [stream_of[requests[i].handle] for i in p.waits[final]] == [stream_of[5]]
    # the other thread starts after what came before it on the main thread (the JIT's end)
    other = next(s for s in p.streams if len(s) == 9)[0]
    assert requests[other].op == "Open" and p.waits[other]
    assert requests[p.waits[other][0]].end < requests[other].start
    assert all(b >= 0 for b in p.before)


# One file object, two vector reads in flight (uproot's client sends a batch's together), then
# a read after both responses.
ONE_OBJECT = """\
"1","Open","10.0","root://old.example//store/f.root;16;0;0","10.1","[SUCCESS]",""
"1","VectorRead","10.2","200;5;0","10.5","[SUCCESS]","5;200;5"
"1","VectorRead","10.3","0;10;100;10;0","10.6","[SUCCESS]","20;0;10;100;10"
"1","Read","10.7","300;10;0","10.8","[SUCCESS]","10"
"1","Close","10.9","0","11.0","[SUCCESS]",""
"""


def test_reads_in_flight_together_on_one_file_object_are_plans_side_by_side() -> None:
    """Seen in coffea's traces (uproot over XRootD): 9 pairs of vector reads a pass, the second
    sent before the first's answer, that a replay sent one after another, a round trip more
    each on a WAN (about half of coffea's 11-14% overprediction there)."""
    _, requests, _ = parse_csv(ONE_OBJECT, "t")
    think = think_times(requests)
    p = plan(requests, think)
    first, second, after = 1, 2, 3
    assert p.detached == {first}  # the stream goes on once it is sent
    assert first not in p.waits[second]  # the second is sent without its answer
    assert first in p.waits[after]  # the read after both waits for both (the second: in turn)
    assert (p.side_by_side, p.serialised, p.serialise_reason) == (1, 0, None)
    assert p.before == think.before  # the think time summed stays the trace's
    old = plan(requests, think, in_flight=False)  # as replays sent them before
    assert old.detached == frozenset() and old.serialised == 1 and old.serialise_reason


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_reads_in_flight_together_on_one_file_object_are_replayed_so(
    tmp_path: Path, slow_disk: list[tuple[str, float, float]]
) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.root").write_bytes(bytes(1000))
    csv = tmp_path / "x.csv"
    csv.write_text(ONE_OBJECT)
    trace = load_trace(csv)
    targets = by_url_map(trace.files, [URL_MAP.format(tmp_path)])
    rec = replay(trace, targets)
    assert rec.error is None and rec.streams == 1 and rec.bytes_read == 35
    assert (rec.overlapping_side_by_side, rec.overlapping_serialised) == (1, 0)
    assert rec.serialise_reason is None and rec.overlapping_replayed == 1
    (_, _, a1), (_, b0, b1), (_, c0, _) = sorted(slow_disk, key=lambda s: s[1])
    assert b0 < a1 and c0 >= max(a1, b1)  # both in flight, the third after both answers
    think = trace.think()
    assert rec.wall_s < think.total_s + 2 * SERVICE + 0.03  # two reads' time, not three
    serial = replay(trace, targets, serialise=True)
    assert serial.wall_s >= think.total_s + 3 * SERVICE


def test_a_failed_read_in_flight_ends_the_replay_with_its_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = FileReader.read_ranges

    def failing(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        if ranges[0][0] == 200:  # the first of the two in flight
            raise OSError("the storage failed this read")
        return real(self, ranges)

    monkeypatch.setattr(FileReader, "read_ranges", failing)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.root").write_bytes(bytes(1000))
    csv = tmp_path / "x.csv"
    csv.write_text(ONE_OBJECT)
    trace = load_trace(csv)
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]))
    assert rec.error is not None and "(request 1 of 5)" in rec.error, rec.error
    assert "the storage failed this read" in rec.error


def test_fixed_time_counts_the_bytes_all_streams_read(tmp_path: Path) -> None:
    trace = load_trace(_two_streams(tmp_path))
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]), fixed_time_s=0.5)
    assert rec.error is None and rec.streams == 2
    assert rec.passes is not None and 1 < rec.passes < 3
    assert rec.passes == pytest.approx(rec.bytes_read / (2 * READS * 50_000))
    assert rec.events == pytest.approx(1000 * rec.passes)


@pytest.mark.quiet  # times itself: not beside other work (Makefile: test)
def test_a_failing_stream_stops_the_other_and_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = load_trace(_two_streams(tmp_path))
    calls = {"n": 0}
    real = FileReader.read_ranges

    def flaky(self: FileReader, ranges: list[tuple[int, int]]) -> list[bytes]:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("the disk went away")
        return real(self, ranges)

    monkeypatch.setattr(FileReader, "read_ranges", flaky)
    t0 = time.perf_counter()
    rec = replay(trace, by_url_map(trace.files, [URL_MAP.format(tmp_path)]))
    assert time.perf_counter() - t0 < 1.0  # the other stream stopped: no hang
    assert rec.error is not None and "the disk went away" in rec.error
    assert rec.stopped_at is not None and trace.requests[rec.stopped_at].op == "Read"
    assert f"(request {rec.stopped_at} of {len(trace.requests)})" in rec.error
    assert rec.read_calls == 2 and rec.predicted_wall_s is None

"""The prediction model's physics: round trips scale with RTT, transfers with bandwidth, a warm
XCache has no origin round trips, clients queue on a disk and share a link, streams overlap, a
protocol without vector reads pays a round trip per chunk, and CPU efficiency per core never
exceeds 1."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from instore.access import XROOTD
from instore.errors import InstoreError
from instore.predict.compiled import compile_trace
from instore.predict.model import predict
from instore.predict.profile import (
    CONNECT_ROUND_TRIPS,
    Param,
    Profile,
    Protocol,
    XCache,
    from_dict,
)
from instore.predict.readahead import mount_plan
from instore.predict.scenario import Scenario
from instore.predict.tcp import INITIAL_WINDOW_BYTES
from instore.replay.trace import load_trace

DATA = Path(__file__).parent / "data"
THINK = 0.002


def profile(**over: object) -> Profile:
    base = Profile(
        site="test", kind="hand-written",
        rtt_ms=Param(10.0, "given"), bandwidth_mbit=Param(1000.0, "given"),
        tcp_window_kb=Param(None, "given"), disk_seq_mb_per_s=Param(1000.0, "given"),
        disk_random_ms=Param(0.0, "given"), client_cpu_request_us=Param(0.0, "given"),
        client_cpu_mb_ms=Param(0.0, "given"),
        protocols={"xrootd": Protocol(Param(0.0, "given")),
                   "fuse": Protocol(Param(0.0, "given"), vector=False,
                                    in_flight_kb=Param(256.0, "given"))},
        xcache=XCache(Param(1024, "given"), Param(1000.0, "given"), Param(0.1, "given")),
        cores=2,
    )  # fmt: skip
    return replace(base, **over)  # type: ignore[arg-type]


def _row(obj: str, op: str, t: float, args: str, dur: float, resp: str = "") -> str:
    return f'"{obj}","{op}","{t:.6f}","{args}","{t + dur:.6f}","[SUCCESS]","{resp}"'


def write_trace(tmp_path: Path, reads: list[list[tuple[int, int]]], think: float = THINK,
                cpu_s: float | None = None, name: str = "trace") -> Path:  # fmt: skip
    """One file object: Open, then each read (a vector read where it has several chunks) after
    ``think`` s, then Close; the recorded job's CPU is its think time unless given."""
    t = 1000.0
    rows = [_row("1", "Open", t, "root://h//f.root;16;0;0", 0.001)]
    t += 0.001
    for chunks in reads:
        t += think
        size = sum(s for _, s in chunks)
        if len(chunks) == 1:
            rows.append(_row("1", "Read", t, f"{chunks[0][0]};{chunks[0][1]};0", 0.001, str(size)))
        else:
            args = ";".join(f"{o};{s}" for o, s in chunks) + ";0"
            rows.append(_row("1", "VectorRead", t, args, 0.001, str(size)))
        t += 0.001
    rows.append(_row("1", "Close", t, "0", 0.001))
    end = t + 0.001
    out = tmp_path / name
    out.mkdir()
    (out / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    meta = {"trace_version": 1, "start_unix": 1000.0, "end_unix": end, "wall_s": end - 1000.0,
            "cpu_s": cpu_s if cpu_s is not None else think * len(reads), "events": 1000}  # fmt: skip
    (out / "trace.json").write_text(json.dumps(meta))
    return out


def small_reads(
    n: int = 200, size: int = 4096, stride: int = 1 << 20
) -> list[list[tuple[int, int]]]:
    return [[(i * stride, size)] for i in range(n)]


def ramp(size: float, rate: float, rtt_s: float) -> tuple[int, float]:
    """A new connection's response of ``size`` bytes, in closed form: the whole round trips of
    slow start (the initial window doubling) until the window fills the path (rate x RTT), and
    what they add to the bytes' own time at the rate (the rest flows at the rate). For a size
    beyond what those rounds send. The model counts the bytes' time as transfer, what the
    window adds as round trips."""
    rounds = math.ceil(math.log2(rate * rtt_s / INITIAL_WINDOW_BYTES))
    sent = INITIAL_WINDOW_BYTES * (2**rounds - 1)
    assert size > sent
    return rounds, rounds * rtt_s - sent / rate


# a window that fills any of these paths from the first byte: tests of other things than TCP's
FULL_WINDOW = Param(64 * 1024.0, "given")


def io_time(pred: object) -> float:
    return pred.wall_s - pred.breakdown["think"]  # type: ignore[attr-defined]


def test_doubling_rtt_doubles_a_round_trip_bound_jobs_io(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads())))
    one = predict(c, profile())
    two = predict(c, profile().with_changes(rtt_ms=20.0))
    assert one.waits_on == "round_trips"
    assert io_time(two) / io_time(one) == pytest.approx(2.0, rel=0.03)
    # 200 reads, an open (two trips: connect and open) and a close at 10 ms each
    assert one.breakdown["round_trips"] == pytest.approx(0.203 * 10, rel=0.01)


def test_bandwidth_halved_doubles_a_transfer_bound_jobs_io(tmp_path: Path) -> None:
    reads = [[(i * (8 << 20), 8 << 20)] for i in range(20)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads)))
    p = profile(rtt_ms=Param(0.1, "given"))
    full, half = predict(c, p), predict(c, p.with_changes(bandwidth_mbit=500.0))
    assert full.waits_on == "transfer"
    assert io_time(half) / io_time(full) == pytest.approx(2.0, rel=0.05)
    assert full.breakdown["transfer"] == pytest.approx(20 * (8 << 20) * 8 / 1e9, rel=0.05)


def test_stage_in_copies_each_file_once_then_reads_it_from_the_page_cache(tmp_path: Path) -> None:
    """The copy crosses the link at the file's first open (its bytes, its own open's round
    trip and the request's), and the job's 50 reads then cost no round trip. (A stage-in
    prediction raised ValueError here: the copy's piece was built in the wrong shape.)"""
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(50))))
    p = profile(protocols={"stage-in": Protocol(Param(0.0, "given")),
                           "xrootd": Protocol(Param(0.0, "given"))})  # fmt: skip
    staged, remote = predict(c, p, Scenario(protocol="stage-in")), predict(c, p)
    size = c.file_sizes[0]
    assert size == 49 * (1 << 20) + 4096
    # a copy opens a connection of its own: its window ramps up over 7 round trips first,
    # what they add counted as round trips
    rounds, added_s = ramp(size, 1e9 / 8, 0.010)
    assert rounds == 7
    assert staged.breakdown["transfer"] == pytest.approx(size * 8 / 1e9, rel=0.01)
    assert staged.breakdown["round_trips"] == pytest.approx(2 * 0.010 + added_s, rel=0.01)
    assert remote.breakdown["round_trips"] > 50 * 0.010


def test_tcp_window_caps_one_flow(tmp_path: Path) -> None:
    reads = [[(0, 64 << 20)]]
    c = compile_trace(load_trace(write_trace(tmp_path, reads)))
    p = profile(rtt_ms=Param(50.0, "given"))
    capped = predict(c, p.with_changes(tcp_window_kb=256.0))
    # 256 kB per 50 ms: 5.24 MB/s, so 64 MiB take about 12.8 s instead of 0.54 s
    assert capped.breakdown["transfer"] == pytest.approx((64 << 20) / (256 * 1024 / 0.05), rel=0.02)


def test_warm_xcache_removes_origin_round_trips_cold_pays_one_per_block(tmp_path: Path) -> None:
    # 100 reads of 4 kB, 10 to each 1 MB block: a cold cache fetches 10 blocks
    reads = [[(i * 100_000, 4096)] for i in range(100)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads)))
    p = profile(rtt_ms=Param(25.0, "given"), tcp_initial_window_kb=FULL_WINDOW)
    direct = predict(c, p)
    cold = predict(c, p, Scenario(xcache="cold"))
    warm = predict(c, p, Scenario(xcache="warm"))
    blocks = len({i * 100_000 // (1 << 20) for i in range(100)})
    # 100 reads, the open after connecting to the cache (XRootD: 3 round trips), the close
    local = 0.1e-3 * (100 + 1 + CONNECT_ROUND_TRIPS[XROOTD] + 1)
    assert warm.breakdown["round_trips"] == pytest.approx(local, rel=0.01)
    assert cold.breakdown["round_trips"] == pytest.approx(0.025 * blocks + local, rel=0.01)
    assert warm.wall_s < cold.wall_s < direct.wall_s


def test_no_xcache_in_the_profile_is_one_line(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(3))))
    with pytest.raises(InstoreError, match="has no XCache"):
        predict(c, profile(xcache=None), Scenario(xcache="warm"))
    with pytest.raises(InstoreError, match="no protocol 'davs'"):
        predict(c, profile(), Scenario(protocol="davs"))


def test_efficiency_per_core_never_above_one(tmp_path: Path) -> None:
    # the recording says 10 s of CPU (threads reading ahead, say) over 0.4 s of think time
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(200), cpu_s=10.0)))
    pred = predict(c, profile(rtt_ms=Param(0.01, "given")), Scenario(xcache=None))
    assert pred.threads == 1
    assert pred.cpu_efficiency_per_core <= 1.0
    assert pred.cpu_efficiency == pytest.approx(1.0)


def test_more_clients_queue_on_a_disk_bound_site(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(100))))
    hdd = profile(rtt_ms=Param(0.2, "given"), disk_random_ms=Param(1000 / 150, "given"))
    one, eight = predict(c, hdd), predict(c, hdd, Scenario(clients=8))
    assert one.breakdown["disk_queue"] == pytest.approx(0.0, abs=1e-9)
    assert eight.breakdown["disk_queue"] > 3 * one.breakdown["disk"]
    # 800 seeks at 150 IOPS: the disk, busy all the time, takes 5.3 s for them all
    assert eight.wall_max_s == pytest.approx(800 / 150, rel=0.05)
    assert eight.cpu_efficiency < one.cpu_efficiency / 4


def test_a_disk_that_serves_reads_side_by_side_queues_clients_that_much_less(
    tmp_path: Path,
) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(100))))
    ssd = profile(rtt_ms=Param(0.2, "given"), disk_random_ms=Param(1.0, "given"))
    one_queue = predict(c, ssd, Scenario(clients=16))
    # fio served 3.4 times the reads at a deep queue: 3 servers of 1 ms each side by side
    wide = predict(c, replace(ssd, disk_parallel=Param(3.4, "given")), Scenario(clients=16))
    # 1,600 reads; the disk, busy all the time, serves 1,000 a second, or 3,000 side by side
    assert one_queue.wall_max_s == pytest.approx(1600 * 0.001, rel=0.05)
    assert wide.wall_max_s == pytest.approx(1600 * 0.001 / 3, rel=0.05)
    assert wide.breakdown["disk_queue"] < one_queue.breakdown["disk_queue"] / 2
    # one client alone waits for each read's service time as fio measured it one at a time
    alone = predict(c, replace(ssd, disk_parallel=Param(3.4, "given")))
    assert alone.breakdown["disk"] == pytest.approx(100 * 0.001, rel=0.01)
    # a what-if disk of given IOPS serves them one at a time
    what_if = replace(ssd, disk_parallel=Param(3.4, "given")).with_changes(iops=1000)
    assert what_if.disk_parallel.value == 1.0


def test_a_disk_as_parallel_as_one_within_fios_noise_is_one_server_at_its_own_speed(
    tmp_path: Path,
) -> None:
    """lan-hdd's throttled spindle: 150.17 IOPS at queue depth 16 over 150.14 at 1 (a fresh
    study's calibration). Rounded up, that was two servers at half speed each: every read of
    one client took twice its service time, and the study's lan-hdd replays were predicted
    up to 52% slow and its 16 clients 384%."""
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(100))))
    hdd = profile(rtt_ms=Param(0.2, "given"), disk_random_ms=Param(6.66, "given"))
    noisy = replace(hdd, disk_parallel=Param(150.166634 / 150.139944, "calibration"))
    for clients in (1, 16):
        assert predict(c, noisy, Scenario(clients=clients)).wall_s == pytest.approx(
            predict(c, hdd, Scenario(clients=clients)).wall_s, rel=1e-9)  # fmt: skip


def test_clients_share_the_link(tmp_path: Path) -> None:
    reads = [[(i * (4 << 20), 4 << 20)] for i in range(10)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads, think=0.0)))
    p = profile(rtt_ms=Param(0.1, "given"), bandwidth_mbit=Param(100.0, "given"))
    many = predict(c, p, Scenario(clients=8))
    assert many.aggregate_mb_per_s <= 100 / 8 * 1.001
    assert many.aggregate_mb_per_s == pytest.approx(100 / 8 * (1 << 20) / 1e6 * 4 / 4, rel=0.1)


def test_vector_read_is_one_round_trip_unless_the_protocol_splits_it(tmp_path: Path) -> None:
    reads = [[(k * 1_000_000 + j * 10_000, 1000) for j in range(10)] for k in range(20)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads)))
    p = profile(tcp_initial_window_kb=FULL_WINDOW)
    xrd, fuse = predict(c, p), predict(c, p, Scenario(protocol="fuse"))
    # 20 vector reads, the open after connecting, the close
    opened = 1 + CONNECT_ROUND_TRIPS[XROOTD] + 1
    assert xrd.breakdown["round_trips"] == pytest.approx(0.010 * (20 + opened), rel=0.01)
    # through a mount the kernel asks for each chunk's pages, a stretch of them one request
    # after another, but not for pages its cache holds (read ahead for an earlier chunk)
    waited = sum(len(w) for w, _ in mount_plan(c))
    assert waited < 200
    assert fuse.breakdown["round_trips"] == pytest.approx(0.010 * (waited + 3), rel=0.01)


def test_fuse_read_is_one_round_trip_flowing_no_faster_than_its_bytes_in_flight(
    tmp_path: Path,
) -> None:
    # the kernel sends a 16 MiB read as 128 kB requests a few at a time: one round trip, and a
    # flow of 256 kB per 50 ms (5.24 MB/s) where the link would give 125 MB/s; either way the
    # connection's window ramps up first (5 round trips to 256 kB in flight, 9 to the link's)
    c = compile_trace(load_trace(write_trace(tmp_path, [[(0, 16 << 20)]])))
    p = profile(rtt_ms=Param(50.0, "given"))
    fuse, xrd = predict(c, p, Scenario(protocol="fuse")), predict(c, p)
    mount_rate = 256 * 1024 / 0.05
    mount_rounds, mount_added_s = ramp(16 << 20, mount_rate, 0.05)
    link_rounds, link_added_s = ramp(16 << 20, 125e6, 0.05)
    assert (mount_rounds, link_rounds) == (5, 9)
    trips = 0.050 * (1 + 3)  # the mount is connected: its open 2, the read, the close
    assert fuse.breakdown["round_trips"] == pytest.approx(trips + mount_added_s, rel=0.01)
    assert fuse.breakdown["transfer"] == pytest.approx((16 << 20) / mount_rate, rel=0.01)
    assert xrd.breakdown["transfer"] == pytest.approx((16 << 20) / 125e6, rel=0.01)
    connecting = 0.050 * (CONNECT_ROUND_TRIPS[XROOTD] - 1)  # XRootD connects in 3, not 1
    assert xrd.breakdown["round_trips"] == pytest.approx(trips + connecting + link_added_s,
                                                         rel=0.01)  # fmt: skip


def test_disk_serves_what_its_readahead_brought_in_and_seeks_for_the_rest(tmp_path: Path) -> None:
    # 100 reads of 4 kB back to back: the first is read alone, each read after it that the
    # cache lacks brings 128 kB; 100 reads with a 4 kB gap between them are each a random read
    hdd = profile(rtt_ms=Param(0.2, "given"), disk_random_ms=Param(10.0, "given"),
                  readahead_kb=128.0)  # fmt: skip
    back_to_back = small_reads(100, 4096, 4096)
    gapped = small_reads(100, 4096, 8192)
    seq = predict(compile_trace(load_trace(write_trace(tmp_path, back_to_back, name="a"))), hdd)
    rnd = predict(compile_trace(load_trace(write_trace(tmp_path, gapped, name="b"))), hdd)
    ios = 1 + -(-(100 * 4096 - 4096) // (128 * 1024))
    assert seq.breakdown["disk"] == pytest.approx(ios * 0.010, rel=0.05)
    assert rnd.breakdown["disk"] == pytest.approx(100 * 0.010, rel=0.05)


def test_an_idle_throttled_disk_lets_a_slices_reads_through_at_once(tmp_path: Path) -> None:
    # 100 random reads at 150 IOPS, 0.2 s apart: the throttle refills 30 tokens between them
    # (capped at its slice, 15), so none waits; back to back they wait for all but the first 15
    hdd = profile(rtt_ms=Param(0.2, "given"), disk_random_ms=Param(1000 / 150, "given"))
    throttled = replace(hdd, disk_burst_ios=Param(15.0, "given"))
    apart = compile_trace(load_trace(write_trace(tmp_path, small_reads(100), think=0.2, name="a")))
    close = compile_trace(load_trace(write_trace(tmp_path, small_reads(100), think=0.0, name="b")))
    assert predict(apart, hdd).breakdown["disk"] == pytest.approx(100 / 150, rel=0.05)
    assert predict(apart, throttled).breakdown["disk"] < 0.01
    assert predict(close, throttled).breakdown["disk"] == pytest.approx(85 / 150, rel=0.05)


def test_a_fixed_time_point_counts_passes_as_the_replayer_does(tmp_path: Path) -> None:
    """Ten reads 0.1 s apart on a site whose I/O takes no time (the first 100 kB, the others
    1 MB): a pass takes 1 s, read k answers at (k + 1) x 0.1 s. In 2.55 passes' time a client
    makes 2 whole passes and, of the third, the reads answered by 0.55 s: 5, whose bytes are
    4.1 of the pass's 9.1 MB. The replayer counts a cut pass by its bytes answered."""
    reads = [[(0, 100_000)]] + [[(k << 20, 1_000_000)] for k in range(1, 10)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads, think=0.1)))
    instant = profile(rtt_ms=Param(1e-6, "given"), bandwidth_mbit=Param(1e9, "given"),
                      disk_seq_mb_per_s=Param(1e9, "given"))  # fmt: skip
    one = predict(c, instant)
    assert one.wall_s == pytest.approx(1.0, abs=0.005)
    fixed = predict(c, instant, Scenario(until_s=2.55 * one.wall_s))
    assert fixed.passes == pytest.approx(2 + 4.1 / 9.1, rel=1e-3)


def test_streams_overlap_a_serial_replay_does_not() -> None:
    trace = load_trace(DATA / "rdf-mt2-xrdcl.csv")
    p = profile(rtt_ms=Param(50.0, "given"))
    side, serial = predict(compile_trace(trace), p), predict(compile_trace(trace, True), p)
    assert side.threads > 1
    assert side.wall_s < serial.wall_s


def test_breakdown_sums_to_the_wall(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(50))))
    for sc in (Scenario(), Scenario(clients=4), Scenario(xcache="cold"), Scenario(protocol="fuse")):
        pred = predict(c, profile(disk_random_ms=Param(5.0, "given")), sc)
        assert sum(pred.breakdown.values()) == pytest.approx(pred.wall_s, rel=1e-9)


def test_jobs_beyond_the_cores_stretch_think_time(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(50), think=0.02)))
    alone = predict(c, profile(rtt_ms=Param(0.1, "given")))
    four = predict(c, profile(rtt_ms=Param(0.1, "given")), Scenario(jobs_per_node=4))
    assert four.breakdown["think"] == pytest.approx(2 * alone.breakdown["think"], rel=0.01)


def test_a_faster_cpu_divides_think_time_and_cpu_and_leaves_the_io(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(50), think=0.02)))
    p = profile(rtt_ms=Param(10.0, "given"))
    same, fast = predict(c, p), predict(c, p, Scenario(cpu_speed=2.0))
    assert fast.breakdown["think"] == pytest.approx(same.breakdown["think"] / 2, rel=1e-9)
    assert io_time(fast) == pytest.approx(io_time(same), rel=1e-9)
    assert fast.cpu_s == pytest.approx(same.cpu_s / 2, rel=1e-9)
    assert fast.cpu_efficiency_per_core < same.cpu_efficiency_per_core <= 1.0
    # a slower CPU (0.5) with 4 jobs on 2 cores: the two stretches multiply
    both = predict(c, p, Scenario(cpu_speed=0.5, jobs_per_node=4))
    assert both.breakdown["think"] == pytest.approx(4 * same.breakdown["think"], rel=1e-9)


@pytest.mark.parametrize("speed", [0.0, -1.0, float("nan")])
def test_a_cpu_speed_that_is_no_speed_is_one_line(tmp_path: Path, speed: float) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(5))))
    with pytest.raises(InstoreError, match=r"--cpu-speed .*: not a speed") as err:
        predict(c, profile(), Scenario(cpu_speed=speed))
    assert "above 0" in err.value.fix


def test_client_cpu_of_this_site_replaces_the_recordings(tmp_path: Path) -> None:
    c = compile_trace(load_trace(write_trace(tmp_path, small_reads(100))))
    lan = profile(client_cpu_request_us=Param(100.0, "given"))
    wan = profile(client_cpu_request_us=Param(600.0, "given"))
    same = predict(c, wan, Scenario(recorded_on=wan))
    moved = predict(c, wan, Scenario(recorded_on=lan))
    assert moved.wall_s - same.wall_s == pytest.approx(100 * 500e-6, rel=0.01)
    assert moved.cpu_s - same.cpu_s == pytest.approx(100 * 500e-6, rel=0.01)


def test_reads_after_a_pause_ramp_up_again_unless_the_server_keeps_its_window(
    tmp_path: Path,
) -> None:
    """Ten 256 kB reads a second apart on a 25 ms, 100 Mbit/s path: each one's connection has
    been idle beyond its retransmission timeout, so each ramps up from the initial window (four
    round trips more than its bytes); a server with tcp_slow_start_after_idle = 0 pays that only
    on its way up. Profiles written before this parameter read as Linux's default (1)."""
    reads = [[(i * (1 << 20), 256 * 1024)] for i in range(10)]
    c = compile_trace(load_trace(write_trace(tmp_path, reads, think=1.0)))
    wan = profile(rtt_ms=Param(25.0, "given"), bandwidth_mbit=Param(100.0, "given"))
    kept = replace(wan, tcp_slow_start_after_idle=Param(0.0, "given"))
    bytes_s = 256 * 1024 / 12.5e6  # each read's bytes at the rate: its transfer either way
    ramped, steady = predict(c, wan), predict(c, kept)
    assert ramped.breakdown["transfer"] == pytest.approx(10 * bytes_s, rel=0.01)
    assert steady.breakdown["transfer"] == pytest.approx(10 * bytes_s, rel=0.01)
    # what the window adds, as round trips: four rounds on every read where the server shrinks
    # it (less the 217 kB they carry at the rate); kept, four on the first read and one on the
    # second (its 232 kB window short of the path's 312 kB), then none
    four = 4 * 0.025 - INITIAL_WINDOW_BYTES * 15 / 12.5e6
    one = 0.025 - INITIAL_WINDOW_BYTES * 16 / 12.5e6
    extra = ramped.breakdown["round_trips"] - steady.breakdown["round_trips"]
    assert extra == pytest.approx(10 * four - (four + one), rel=0.01)
    assert ramped.waits_on == "round_trips"
    data = wan.as_dict()
    del data["parameters"]["tcp_slow_start_after_idle"]
    assert from_dict(data).tcp_slow_start_after_idle.value == 1.0


def test_a_profiles_own_connect_round_trips_replace_the_protocols_usual(tmp_path: Path) -> None:
    """A site whose XRootD connection costs more (a TLS or GSI handshake's round trips) says so
    in its profile; a profile without it gets XRootD's 3, and its file keeps what it said."""
    c = compile_trace(load_trace(write_trace(tmp_path, [[(0, 4096)]])))
    usual = predict(c, profile())
    slow = profile(protocols={"xrootd": Protocol(Param(0.0, "given"), connect_round_trips=5.0)})
    assert predict(c, slow).wall_s - usual.wall_s == pytest.approx(2 * 0.010, rel=1e-6)
    again = from_dict(json.loads(json.dumps(slow.as_dict())))
    assert again.protocols["xrootd"].connect_round_trips == 5.0
    assert profile().protocols["xrootd"].connect_trips("xrootd") == CONNECT_ROUND_TRIPS[XROOTD]


def test_reads_sent_together_on_one_file_object_cost_one_round_trip_a_pair(
    tmp_path: Path,
) -> None:
    """uproot over XRootD (coffea's traces) sends a batch's vector reads together and waits for
    them all: predicted one round trip a pair, as the replay now sends them, and two where a
    replay sent them one after another; where the time goes still sums to the wall."""
    pairs, t = 20, 1000.0
    rows = [_row("1", "Open", t, "root://h//f.root;16;0;0", 0.001)]
    t += 0.001
    for k in range(pairs):
        t += THINK
        rows.append(_row("1", "VectorRead", t, f"{k * 8192};4096;{k * 8192 + 4096};4096;0",
                         0.001, "8192"))  # fmt: skip
        rows.append(_row("1", "Read", t + 0.0001, f"{(k + 64) * 8192};4096;0", 0.001, "4096"))
        t += 0.0011
    rows.append(_row("1", "Close", t, "0", 0.001))
    out = tmp_path / "pairs"
    out.mkdir()
    (out / "xrdcl.csv").write_text("\n".join(rows) + "\n")
    meta = {"trace_version": 1, "start_unix": 1000.0, "end_unix": t + 0.001,
            "wall_s": t + 0.001 - 1000.0, "cpu_s": THINK * pairs, "events": 1000}  # fmt: skip
    (out / "trace.json").write_text(json.dumps(meta))
    trace = load_trace(out)
    together = predict(compile_trace(trace), profile(), Scenario(protocol=XROOTD))
    in_turn = predict(compile_trace(trace, in_flight=False), profile(), Scenario(protocol=XROOTD))
    rtt = 0.010
    assert in_turn.wall_s - together.wall_s == pytest.approx(pairs * rtt, rel=0.05)
    assert in_turn.breakdown["round_trips"] - together.breakdown["round_trips"] == (
        pytest.approx(pairs * rtt, rel=0.05))  # fmt: skip
    for pred in (together, in_turn):
        assert sum(pred.breakdown.values()) == pytest.approx(pred.wall_s, rel=1e-6)

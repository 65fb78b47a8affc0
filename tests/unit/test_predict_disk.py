"""The model's disk: an IOPS throttle (the emulated disks') charges a service time for each
request the block layer sends and nothing for the bytes; a server that reads a range in
pieces (XrdHttp's 128 kB) makes one disk request for each piece the page cache lacks; a FUSE
mount's requests are read at the server through its kernel's readahead. Each checked against
the disk requests and walls the study measured on lan-hdd."""

from __future__ import annotations

import json
import lzma
import statistics
from pathlib import Path

import pytest
from instore.predict.compiled import compile_trace
from instore.predict.disk import Disk, DiskRule, in_pieces, page_in
from instore.predict.fit import fit_profile
from instore.predict.pages import FilePages, read_through
from instore.predict.profile import read_profile
from instore.predict.scenario import Scenario
from instore.predict.simulation import Simulation
from instore.predict.validate import TraceFinder, check_site
from instore.replay.trace import load_trace

SEEK = 1 / 150  # lan-hdd: 150 IOPS
SEQ = 78.8e6  # fio's 1 MiB reads through the throttle: 150 x the block layer's 512 kB
TINY = 1e-9  # a throttle whose burst passes no request
RUN = Path(__file__).parents[2] / "docs/data/trials/study-9fa2734"
RUN_43B4BD1 = Path(__file__).parents[2] / "docs/data/trials/study-43b4bd1"
KB128 = 128 * 1024


def test_a_throttle_charges_each_block_request_a_service_time_and_nothing_for_its_bytes() -> None:
    throttled = Disk(1, SEEK, SEQ, burst_ios=TINY)
    assert throttled.serve(0.0, 1, 128 * 1024)[1:] == pytest.approx((SEEK, SEEK))
    start, service, end = throttled.serve(10.0, 1, 2_000_000)  # the block layer's 4 requests
    assert (service, end - start) == pytest.approx((4 * SEEK, 4 * SEEK))
    plain = Disk(1, SEEK, SEQ, burst_ios=0.0)  # a disk without a throttle: seek and bytes
    start, service, end = plain.serve(0.0, 1, 128 * 1024)
    assert (service, end - start) == pytest.approx((SEEK, SEEK + 128 * 1024 / SEQ))
    point = {"read_calls": 10, "bytes_read": 4_000_000, "cold": True}  # no block counts
    assert DiskRule(SEQ, SEEK, TINY).parts(point, 0.0, 10) == pytest.approx((10 * SEEK, 0.0))
    counted = {**point, "disk_reads": 12, "disk_bytes_read": 4_000_000}
    assert DiskRule(SEQ, SEEK, TINY).parts(counted, 0.0, 10) == pytest.approx((12 * SEEK, 0.0))
    assert DiskRule(SEQ, SEEK).parts(counted, 0.0, 10) == pytest.approx((12 * SEEK, 4e6 / SEQ))


def test_a_server_reading_in_pieces_makes_a_disk_request_for_each_piece_it_lacks() -> None:
    whole = page_in(([], []), ((0, 1 << 20),), 128 * 1024)
    pieces = page_in(([], []), in_pieces(((0, 1 << 20),), 128 * 1024), 128 * 1024)
    assert whole == (1, 1 << 20) and pieces == (8, 1 << 20)
    cached = ([0], [1 << 20])
    assert page_in(cached, in_pieces(((0, 1 << 20),), 128 * 1024), 128 * 1024) == (0, 0)


def test_a_mounts_requests_read_ahead_at_the_server_and_split_around_its_cached_pages() -> None:
    # a stretch of 128 kB requests: each reads its window and opens the next one ahead
    stream = FilePages(32)
    assert read_through(stream, ((0, KB128),)) == (2, 2 * KB128)
    assert read_through(stream, ((KB128, KB128),)) == (1, KB128)
    # a lone request whose middle the server holds: a read for each stretch it lacks, where
    # one read per run (page_in) reads it whole
    pages = FilePages(32)
    assert read_through(pages, ((1 << 20, 16384),))[0] == 1
    assert read_through(pages, (((1 << 20) - 32768, 81920),)) == (2, 65536)
    assert page_in(([1 << 20], [(1 << 20) + 16384]), (((1 << 20) - 32768, 81920),), KB128) == (
        1, 81920)  # fmt: skip


def _disk_requests(sim: Simulation) -> int:
    """The disk requests of a chained trace's pass (its plan's page cache outcomes)."""
    assert sim.planned is not None
    return sum(p[2] for steps, ahead in sim.planned for p in steps + ahead)


def test_lan_hdds_fuse_replays_make_about_the_block_devices_count_of_requests() -> None:
    """The run of 43b4bd1's lan-hdd (the reference run then; 150 IOPS: a replay's wall is
    mostly its disk requests): through the mount the block device counted 371, 266 and 224 requests for agc-uproot,
    agc-coffea and agc-rdf. Read as one request per run the model made 278, 208 and 178, and
    predicted each faster through the mount than read in place, the reverse of the measured."""
    profile = read_profile(RUN_43B4BD1 / "profiles/lan-hdd-profile.json")
    with lzma.open(RUN_43B4BD1 / "lan-hdd-records.jsonl.xz", "rt") as f:
        replays = [r for r in map(json.loads, f) if r.get("section") == "replay"]
    fuse = {r["trace"]: r for r in replays if r["protocol"] == "fuse"}
    assert sorted(fuse) == ["agc-coffea", "agc-rdf", "agc-uproot"]
    for name, r in fuse.items():
        # as it was replayed: a stream's requests in flight together one after another
        assert r["overlapping_serialised"] > 0 or name != "agc-coffea"
        c = compile_trace(load_trace(RUN_43B4BD1 / "traces/lan-ssd" / name), in_flight=False)
        sim = Simulation(c, profile, Scenario(protocol="fuse"))
        assert _disk_requests(sim) == pytest.approx(r["disk_reads"], rel=0.15), name
        walls = {}
        for proto in ("fuse", "posix"):
            one = Simulation(c, profile, Scenario(protocol=proto))
            one.loop()
            walls[proto] = one.walls[0][0]
        assert walls["fuse"] > walls["posix"], name


def _records(site: str) -> list[dict]:
    with lzma.open(RUN / f"{site}-records.jsonl.xz", "rt") as f:
        return [json.loads(line) for line in f]


def test_lan_hdds_payload_points_and_http_replays_are_explained_by_the_throttles_requests() -> None:
    """The fresh study of 9fa2734's lan-hdd (kept in docs/data): charged a service time and
    its bytes for each request, its own payload points came out at a median error of 16.4%
    and its HTTP replays 3-8% short (XrdHttp's 128 kB pieces unknown to the model); each
    block request at a service time and HTTP in pieces, 6.8% and within 3%."""
    records = _records("lan-hdd")
    calibration = json.loads((RUN / "profiles/lan-hdd-calibration.json").read_text())
    profile = fit_profile("lan-hdd", calibration, records)
    assert profile.protocols["http"].server_read_kb == 128
    assert profile.fit_quality is not None and profile.fit_quality["median_abs_error"] < 0.10
    checks, _ = check_site(profile, records, TraceFinder(RUN / "traces"))
    http = [c for c in checks if c.section == "replay" and c.protocol == "http"]
    errors = [c.predicted_wall_s / c.measured_wall_s - 1 for c in http]
    assert len(errors) == 3 and statistics.median(abs(e) for e in errors) < 0.03, errors
    assert all(abs(e) < 0.05 for e in errors), errors

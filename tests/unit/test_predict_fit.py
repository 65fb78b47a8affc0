"""Fitting a site profile: known parameters come back from synthetic payload records made with
them, the validating sections (replay, load, caching) are never used, and the profile file and
its schema round-trip, refusing a bad hand-written one in one line."""

from __future__ import annotations

import json
import lzma
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.predict.disk import DiskRule
from instore.predict.fit import fit_profile, payload_records
from instore.predict.payload import payload_wall, reads_after_open
from instore.predict.profile import (
    Param,
    Profile,
    Protocol,
    read_profile,
    site_profile,
    write_profile,
)
from instore.predict.tcp import Connection

RTT_MS = 25.0
BW_MBIT = 100.0
SEQ = 400.0
IOPS = 2000.0
SERVER_MS = {"xrootd": 0.4, "http": 1.5}
CPU_REQ_US = 300.0
CPU_MB_MS = 20.0
OPEN_TRIPS = 6.0

EMULATION = {"network": {"bandwidth_mbit": BW_MBIT, "rtt_ms_target": RTT_MS},
             "disk": {"read_iops": None, "read_mbps": None, "readahead_kb": 128},
             "cache": {"blocksize_kb": 1024}}  # fmt: skip
CALIBRATION = {"rtt_ms": RTT_MS, "fio": {"seq_read_mb_per_s": SEQ, "rand_read_iops": IOPS},
               "protocols": {"xrootd": {"mb_per_s": 11.9}, "xcache": {"mb_per_s": 300.0}}}  # fmt: skip


def record(section: str, protocol: str, calls: int, mb: float, work: float, layout: str) -> dict:
    """One payload job made with the known parameters: its CPU (work plus the client's per
    call and per MB) and its wall (CPU plus round trips, server, disk, link)."""
    cpu = work + calls * CPU_REQ_US / 1e6 + mb * CPU_MB_MS / 1e3
    opened = OPEN_TRIPS * RTT_MS / 1e3
    # the disk's streaming hidden behind the slower link, as in the model
    io = (opened + calls * RTT_MS / 1e3 + max(mb * 8 / BW_MBIT, mb / SEQ) + calls / IOPS
          + calls * SERVER_MS[protocol] / 1e3)  # fmt: skip
    cond = {"workers": {"nodes": 1, "cores": 2}, "protocols": ["xrootd", "http", "fuse"],
            "emulation": EMULATION}  # fmt: skip
    return {"section": section, "protocol": protocol, "status": "ok", "read_calls": calls,
            "bytes_read": int(mb * 1e6), "wall_s": cpu + io, "open_s": opened, "user_s": cpu * 0.9,
            "sys_s": cpu * 0.1, "cold": True, "layout": layout, "branches": "all",
            "entry_fraction": 1.0, "events": 1000, "file_size": 10**8, "engine": "root",
            "pattern_cpu_us": 0.0, "conditions": json.dumps(cond)}  # fmt: skip


def synthetic() -> list[dict]:
    out = []
    for layout, work in (("ordered", 2.0), ("unordered", 3.0)):
        for protocol in SERVER_MS:
            for calls, mb in ((10, 30.0), (200, 32.0), (2000, 35.0), (50, 60.0)):
                out.append(record("cache", protocol, calls, mb, work, layout))
    # validation points, made with wildly different parameters: a fit that used them would show
    for section in ("replay", "load", "caching"):
        bad = record("protocols", "xrootd", 100, 10.0, 1.0, "ordered")
        out.append({**bad, "section": section, "wall_s": 1000.0})
    return out


def test_fit_recovers_known_parameters() -> None:
    prof = fit_profile("wan", CALIBRATION, synthetic())
    assert prof.rtt_ms.value == RTT_MS and "calibration" in prof.rtt_ms.source
    assert prof.bandwidth_mbit.value == BW_MBIT
    assert prof.disk_random_ms.value == pytest.approx(1000 / IOPS)
    assert prof.disk_seq_mb_per_s.value == SEQ
    for name, ms in SERVER_MS.items():
        got = prof.protocols[name].request_ms
        assert got.value == pytest.approx(ms, rel=1e-6), name
        assert got.fit and got.fit["points"] == 8 and got.fit["median_abs_error"] < 1e-9
    opens = prof.protocols["xrootd"].open_round_trips
    assert opens is not None and opens.value == pytest.approx(OPEN_TRIPS)
    assert prof.client_cpu_request_us.value == pytest.approx(CPU_REQ_US, rel=1e-6)
    assert prof.client_cpu_mb_ms.value == pytest.approx(CPU_MB_MS, rel=1e-6)
    assert prof.fit_quality and prof.fit_quality["within_10pct"] == 1.0
    assert prof.cores == 2
    # fuse is on the site but was not measured: its mechanics, a server time of 0 said so
    assert not prof.protocols["fuse"].vector and prof.protocols["fuse"].in_flight_kb is None
    assert "no payload point" in prof.protocols["fuse"].request_ms.source
    # the copy's 11.9 MB/s filled the 100 Mbit/s link: the window does not bind
    assert prof.tcp_window_kb.value is None
    assert prof.xcache and prof.xcache.local_mb_per_s.value == 300.0


def test_the_disks_reads_side_by_side_are_fios_deep_queue_over_one_at_a_time() -> None:
    assert fit_profile("wan", CALIBRATION, synthetic()).disk_parallel.value == 1.0  # no deep fio
    deep = {**CALIBRATION["fio"], "rand_read_queue_depth": 16, "rand_read_iops_deep": 3 * IOPS}
    prof = fit_profile("wan", {**CALIBRATION, "fio": deep}, synthetic())
    assert prof.disk_parallel.value == pytest.approx(3.0)
    assert "queue depth 16" in prof.disk_parallel.source
    throttled = {**deep, "rand_read_iops_deep": 0.97 * IOPS}  # a throttle: no more, some noise
    assert (
        fit_profile("wan", {**CALIBRATION, "fio": throttled}, synthetic()).disk_parallel.value
        == 1.0
    )


def test_a_slow_copy_on_a_long_link_shows_the_window() -> None:
    slow = {**CALIBRATION, "protocols": {"xrootd": {"mb_per_s": 5.0}}}
    prof = fit_profile("wan", slow, synthetic())
    assert prof.tcp_window_kb.value == pytest.approx(5.0e6 * 0.025 / 1024)
    assert "x RTT" in prof.tcp_window_kb.source


def slow_flow_points(rate: float) -> list[dict]:
    """The payload points as if each flow came at ``rate`` bytes/s, under the link's."""
    rows = []
    for r in synthetic():
        if r["section"] != "cache":
            continue
        slower = r["bytes_read"] / rate - r["bytes_read"] * 8 / (BW_MBIT * 1e6)
        rows.append({**r, "wall_s": r["wall_s"] + slower})
    return rows


def test_a_window_no_copy_showed_is_fitted_from_the_payload_points() -> None:
    """No whole-file copy in the calibration, and the points read at 2 MB/s per flow on a
    100 Mbit/s link: the window that rate implies, with the request times still recovered."""
    rate = 2e6
    prof = fit_profile("wan", {**CALIBRATION, "protocols": {}}, slow_flow_points(rate))
    assert prof.tcp_window_kb.value == pytest.approx(rate * RTT_MS / 1e3 / 1024, rel=1e-6)
    for name, ms in SERVER_MS.items():
        assert prof.protocols[name].request_ms.value == pytest.approx(ms, rel=1e-6), name
    assert prof.fit_quality and prof.fit_quality["within_10pct"] == 1.0


def test_a_copy_that_filled_the_link_keeps_the_window_unbound_whatever_the_points_say() -> None:
    """A fresh study's WAN (2026-11-28, f0e4aca): the calibration's copy came at 11.7 MB/s on a
    100 Mbit/s link, but the payload points' joint fit gave 9.5 MB/s a flow, and a 235 kB window
    fitted from it bound at 100 ms, predicting a held-out whole-file read at +159%. The copy
    is the direct measurement of one flow: where it filled the link, the points do not bind it."""
    prof = fit_profile("wan", CALIBRATION, slow_flow_points(8e6))
    assert prof.tcp_window_kb.value is None
    assert "filled the link" in prof.tcp_window_kb.source


def test_a_fuse_mounts_bytes_in_flight_are_fitted_and_its_server_time_is_the_mounts() -> None:
    # xrootdfs: the site's XRootD's server time per request, and 8 MB/s where the link gives
    # 12.5 MB/s: 200 kB in flight at 25 ms
    rate = 8e6
    fuse = []
    for calls, mb in ((8, 15.0), (40, 20.0), (100, 9.0)):
        r = record("protocols", "xrootd", calls, mb, 1.0, "ordered")
        link = mb * 8 / BW_MBIT
        slower = mb * 1e6 / rate - link
        fuse.append({**r, "protocol": "fuse", "wall_s": r["wall_s"] + slower})
    prof = fit_profile("wan", CALIBRATION, [*synthetic(), *fuse])
    got = prof.protocols["fuse"]
    assert got.request_ms.value == pytest.approx(SERVER_MS["xrootd"], rel=1e-6)
    assert "mounts (xrootd)" in got.request_ms.source
    assert got.in_flight_kb is not None
    assert got.in_flight_kb.value == pytest.approx(rate * RTT_MS / 1e3 / 1024, rel=0.02)
    assert prof.flow_bytes_per_s(got) == pytest.approx(rate, rel=0.02)
    assert prof.flow_bytes_per_s(prof.protocols["xrootd"]) == BW_MBIT * 1e6 / 8
    # the mount's points never move the link's fit or the other protocols'
    assert prof.protocols["xrootd"].request_ms.value == pytest.approx(SERVER_MS["xrootd"], rel=1e-6)


def test_a_throttled_disk_is_charged_its_block_reads_less_its_burst_not_a_seek_per_call() -> None:
    """lan-hdd (150 IOPS, 120 MB/s, a 15-request burst): a layout point of the reference run
    made 3426 read calls that reached the disk as 1230 requests, and spent 7.746 s off CPU.
    A seek per read call said 23.0 s; the model's disk, with the burst refilled while the job
    computes (0.485 s: 73 requests), a service time for each of the throttle's requests and
    nothing for their bytes, says 7.61 s (with their bytes at 120 MB/s as well, 7.76)."""
    disk = DiskRule(seq=119.95e6, seek_s=1 / 150, burst_ios=15.0)
    point = {"read_calls": 3426, "bytes_read": 16_800_000, "user_s": 0.44, "sys_s": 0.045,
             "disk_reads": 1230, "disk_bytes_read": 16_863_232, "protocol": "posix"}  # fmt: skip
    assert sum(disk.parts(point, 0.485, 3426)) == pytest.approx((1230 - 15 - 0.485 * 150) / 150)
    assert sum(disk.parts(point, 0.485, 3426)) == pytest.approx(7.746, rel=0.02)
    # a site that cannot count its block reads (a real one): each read call is a request
    unseen = {**point, "disk_reads": float("nan"), "disk_bytes_read": None}
    assert sum(disk.parts(unseen, 0.485, 3426)) == pytest.approx((3426 - 15 - 0.485 * 150) / 150)
    # no throttle, no burst: every request pays its service time
    assert sum(DiskRule(seq=119.95e6, seek_s=1 / 150).parts(point, 0.485, 3426)) == pytest.approx(
        1230 / 150 + 16.863232 / 119.95
    )


def test_a_throttled_disks_points_give_back_the_protocols_server_time() -> None:
    """Points whose disk time follows the throttle (block reads, burst) fit the same server
    time per request as points on an unthrottled disk."""
    emulation = {**EMULATION, "disk": {**EMULATION["disk"], "read_iops": IOPS}}
    disk = DiskRule(seq=SEQ * 1e6, seek_s=1 / IOPS, burst_ios=IOPS * 0.1)
    points = []
    for r in synthetic()[:24]:
        ios = r["read_calls"] // 2 + 40
        cpu = r["user_s"] + r["sys_s"]
        cond = {**json.loads(r["conditions"]), "emulation": emulation}
        old = r["read_calls"] / IOPS
        # the throttle's requests (its bytes' time, none, hidden behind the link anyway)
        new = disk.parts({**r, "disk_reads": ios, "disk_bytes_read": r["bytes_read"]}, cpu,
                         reads_after_open(r))[0]  # fmt: skip
        points.append({**r, "disk_reads": ios, "disk_bytes_read": r["bytes_read"],
                       "wall_s": r["wall_s"] - old + new, "conditions": json.dumps(cond),
                       "user_s": cpu * 0.9, "sys_s": cpu * 0.1})  # fmt: skip
    prof = fit_profile("wan", CALIBRATION, points)
    assert prof.disk_burst_ios.value == IOPS * 0.1
    for name, ms in SERVER_MS.items():
        assert prof.protocols[name].request_ms.value == pytest.approx(ms, rel=1e-6), name
    assert prof.fit_quality and prof.fit_quality["within_10pct"] == 1.0


def test_a_few_bytes_more_or_less_do_not_make_a_cpu_per_mb() -> None:
    """Regression: the run of 4e51d03 fitted lan-hdd's client 1819 ms of CPU per MB from
    points of one group that read 13 bytes more or less of 15.4 MB (and CPU that varied by
    machine noise): its real jobs were then predicted 1.7 times their wall."""
    points = []
    for i, (calls, cpu) in enumerate(((8, 0.39), (8, 0.47), (9, 0.40), (9, 0.52), (30, 0.45))):
        r = record("protocols", "xrootd", calls, 15.363126 + 1.3e-5 * (i % 2), 0.4, "ordered")
        points.append({**r, "user_s": cpu * 0.9, "sys_s": cpu * 0.1})
    prof = fit_profile("lan-hdd", CALIBRATION, points)
    assert prof.client_cpu_mb_ms.value == 0.0
    assert "reads of bytes within 5% of each other" in prof.client_cpu_mb_ms.source
    assert prof.client_cpu_request_us.value is not None  # read calls did vary: fitted


def test_a_small_files_real_spread_of_bytes_is_fitted() -> None:
    """The spread is judged as a share of the group's reads, not in MB: points of a 1 MB file
    that read 0.3 MB more or less (30%) tell the CPU per MB, where a rule of 0.5 MB saw none."""
    points = []
    for mb, calls in ((1.0, 8), (1.3, 8), (1.0, 9), (1.3, 9), (1.15, 8)):
        r = record("protocols", "xrootd", calls, mb, 0.4, "ordered")
        points.append({**r, "user_s": 0.1 + 0.2 * mb, "sys_s": 0.0})
    prof = fit_profile("lan-hdd", CALIBRATION, points)
    assert prof.client_cpu_mb_ms.value == pytest.approx(200.0, rel=0.05)


def test_validation_sections_are_never_fitted() -> None:
    used = payload_records(synthetic())
    assert {r["section"] for r in used} == {"cache"}
    assert all(r["wall_s"] < 1000 for r in used)


def test_no_calibration_no_site_is_one_line() -> None:
    with pytest.raises(InstoreError, match="no calibration and no site description"):
        fit_profile("nowhere", None, [])


def test_profile_round_trips_through_its_file_and_schema(tmp_path: Path) -> None:
    prof = fit_profile("wan", CALIBRATION, synthetic())
    path = write_profile(tmp_path, prof)
    assert path == tmp_path / "wan" / "profile.json"
    back = site_profile(tmp_path, "wan")
    assert back.as_dict() == json.loads(json.dumps(prof.as_dict()))


HAND = {"site": "tier2", "kind": "hand-written",
        "parameters": {"rtt_ms": 12, "bandwidth_mbit": 10000, "disk_seq_mb_per_s": 800,
                       "disk_random_ms": 0.2},
        "protocols": {"xrootd": {"request_ms": 0.3}}}  # fmt: skip


def test_hand_written_profile_with_bare_numbers(tmp_path: Path) -> None:
    path = tmp_path / "tier2.json"
    path.write_text(json.dumps(HAND))
    prof = site_profile(tmp_path, str(path))
    assert prof.rtt_ms.value == 12 and prof.rtt_ms.source == "hand-written"
    assert prof.tcp_window_kb.value is None and prof.xcache is None


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"parameters": {"rtt_ms": 12}}, "field parameters: 'bandwidth_mbit' is a required"),
        ({"protocols": {"xrootd": {"request_ms": -1}}}, "field protocols.xrootd.request_ms"),
        ({"parameters": {**HAND["parameters"], "bandwidth_mbit": 0}},
         "field parameters.bandwidth_mbit"),
        ({"rtt": 3}, "field rtt"),
    ],
)  # fmt: skip
def test_bad_hand_written_profile_is_one_line(tmp_path: Path, change: dict, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**HAND, **change}))
    with pytest.raises(InstoreError, match=says.replace("(", r"\(")):
        read_profile(path)


def test_a_word_for_a_number_says_what_to_give_not_the_schema(tmp_path: Path) -> None:
    """A value that is neither of a oneOf's kinds: the fix names them in words (it printed the
    schema's JSON before)."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**HAND, "parameters": {**HAND["parameters"], "rtt_ms": "twelve"}}))
    with pytest.raises(InstoreError) as err:
        read_profile(path)
    assert "field parameters.rtt_ms" in str(err.value)
    assert err.value.fix == "give a number of at least 0; or an object with value"


def test_missing_profile_names_the_fit(tmp_path: Path) -> None:
    with pytest.raises(InstoreError) as err:
        site_profile(tmp_path, "lan-hdd")
    assert "instore predict --fit lan-hdd" in err.value.fix


def test_a_real_site_without_calibration_gets_defaults_that_say_so() -> None:
    rows = [{**r, "conditions": json.dumps({"workers": {"cores": 4}})} for r in synthetic()]
    prof = fit_profile("mysite", None, rows)
    assert prof.bandwidth_mbit.value == 1000.0 and "default" in prof.bandwidth_mbit.source
    assert any("no calibration" in n for n in prof.notes)
    assert prof.protocols["xrootd"].request_ms.fit is not None


def test_an_opens_handshake_cpu_is_not_counted_twice() -> None:
    """On the trial's GSI/TLS site each job's open spent CPU on its handshake, which its
    user_s and sys_s hold as well as its open_s: taken off twice, the server time per request
    came out 0. The open's CPU (``open_cpu_s``) is taken off once."""
    handshake_s = 0.3
    shaken = []
    for r in synthetic():
        cpu = r["user_s"] + r["sys_s"] + handshake_s
        shaken.append({**r, "wall_s": r["wall_s"] + handshake_s, "user_s": cpu * 0.9,
                       "sys_s": cpu * 0.1, "open_s": r["open_s"] + handshake_s,
                       "open_cpu_s": handshake_s})  # fmt: skip
    prof = fit_profile("wan", CALIBRATION, shaken)
    for name, ms in SERVER_MS.items():
        assert prof.protocols[name].request_ms.value == pytest.approx(ms, rel=1e-6), name
    opens = prof.protocols["xrootd"].open_round_trips
    assert opens is not None and opens.value == pytest.approx(OPEN_TRIPS)
    assert prof.fit_quality and prof.fit_quality["within_10pct"] == 1.0


def test_one_engines_own_wait_per_read_is_not_the_servers() -> None:
    """The reference run's lan-hdd (2026-11-28, f0e4aca): ROOT over https (XrdClHttp) waited
    about 30 ms off CPU per read call, uproot over the same server about 0; fitted over both,
    the site's https took 10.2 ms a request, and every replay over https on lan-hdd was
    predicted up to 16.5% long. The server's time is the least of the engines'; each
    engine's stays in the fit's evidence."""
    client_ms = 12.0
    rows = []
    for r in synthetic():
        rows.append(r)
        if r["section"] == "cache":  # the same points read by uproot, without the extra wait
            rows.append({**r, "engine": "uproot"})
            if r["protocol"] == "http":
                rows[-2] = {**r, "wall_s": r["wall_s"] + r["read_calls"] * client_ms / 1e3}
    prof = fit_profile("wan", CALIBRATION, rows)
    http = prof.protocols["http"].request_ms
    assert http.value == pytest.approx(SERVER_MS["http"], rel=1e-6)
    assert http.fit is not None
    assert http.fit["by_engine_ms"]["root"] == pytest.approx(
        SERVER_MS["http"] + client_ms, rel=1e-3
    )
    assert "the uproot engine's: the least of the engines'" in http.source
    assert prof.protocols["xrootd"].request_ms.value == pytest.approx(SERVER_MS["xrootd"], rel=1e-6)


def test_a_points_open_reads_are_paid_once_and_its_first_large_read_ramps_up_the_window() -> None:
    """A job at 100 ms that reads 1.6 MB in one vector read after an open of four small reads:
    the open's reads are in its open time (not paid again as round trips), and the large
    response ramps up from TCP's initial window (about 5 round trips, as measured on an
    emulated 100 ms link: docs/data/tcp-ramp). A record that does not say which reads its open
    made keeps the accounting from before: every read call a round trip, no ramp."""
    rtt, rate, nbytes, cpu, opened = 0.1, 12.5e6, 1_600_000, 0.12, 0.6
    base = {"protocol": "xrootd", "read_calls": 5, "bytes_read": nbytes, "open_s": opened,
            "user_s": cpu, "sys_s": 0.0, "cold": False}  # fmt: skip
    none = Param(None, "test")
    prof = Profile(site="far", kind="hand-written", rtt_ms=Param(rtt * 1e3, "test"),
                   bandwidth_mbit=Param(rate * 8 / 1e6, "test"), tcp_window_kb=none,
                   disk_seq_mb_per_s=none, disk_random_ms=none, client_cpu_request_us=none,
                   client_cpu_mb_ms=none, protocols={"xrootd": Protocol(Param(0.0, "test"))})  # fmt: skip
    ramp = Connection(rtt, rate).flow_time(nbytes, 0.0) - nbytes / rate
    assert 0.45 < ramp < 0.6
    told = payload_wall({**base, "open_read_calls": 4}, prof)
    assert told == pytest.approx(cpu + opened + rtt + nbytes / rate + ramp, rel=1e-9)
    untold = payload_wall(base, prof)
    assert untold == pytest.approx(cpu + opened + 5 * rtt + nbytes / rate, rel=1e-9)


def test_the_held_out_caching_points_at_100_ms_are_predicted_within_10pct_not_11pct_short() -> None:
    """The held-out check on the WAN of the fresh study of 9fa2734 (kept in docs/data): the
    caching section's ROOT points at 1, 30 and 100 ms, none fitted on. Counting the open's
    reads twice and no TCP ramp, the point at 100 ms with a tenth of the branches came out
    11.3% short on all three runs kept; each within 10% now."""
    from instore.predict.validate import check_held_out

    run = Path(__file__).parents[2] / "docs/data/trials/study-9fa2734"
    with lzma.open(run / "wan-records.jsonl.xz", "rt") as f:
        records = [json.loads(line) for line in f]
    calibration = json.loads((run / "profiles/wan-calibration.json").read_text())
    checks = check_held_out(fit_profile("wan", calibration, records), records)
    errors = {c.trace: c.predicted_wall_s / c.measured_wall_s - 1 for c in checks}
    assert len(errors) == 6 and any("RTT 100 ms" in k for k in errors), errors
    assert all(abs(e) <= 0.10 for e in errors.values()), errors


def test_the_burst_refills_between_the_reads_after_the_open_not_between_the_opens_reads() -> None:
    """A throttled disk (150 IOPS, a 15-request burst) and a point whose open made 4 small
    read calls, then 4 read calls of 30 block requests each, with 0.7 s of CPU: the burst can
    refill only in the 3 gaps between the 4 reads after the open, so 60 requests pass free and
    60 pay a service time each. Counting the open's calls as gaps let all 120 pass."""
    disk = DiskRule(seq=78.7e6, seek_s=1 / 150, burst_ios=15.0)
    point = {"read_calls": 8, "open_read_calls": 4, "bytes_read": 15_400_000, "disk_reads": 120,
             "disk_bytes_read": 15_700_000, "user_s": 0.65, "sys_s": 0.05, "protocol": "http"}  # fmt: skip
    assert disk.parts(point, 0.7, reads_after_open(point)) == pytest.approx((60 / 150, 0.0))


def test_lan_hdds_http_server_time_is_not_its_disks_time_per_read_call() -> None:
    """Regression: the fresh study of 83fec17 (kept in docs/data) fitted lan-hdd's XrdHttp
    57 ms per request (and uproot over XRootD 91 ms): its protocols points read a 15.4 MB file
    in 4 read calls after the open, 120 block requests through the 150-IOPS throttle, and the
    fit let the burst refill between the open's read calls too, so it charged the disk nothing
    and gave its 0.3-0.5 s to the server. The model then made the uproot analysis's 139 reads
    over HTTP 118% slow."""
    run = Path(__file__).parents[2] / "docs/data/trials/study-83fec17"
    with lzma.open(run / "lan-hdd-records.jsonl.xz", "rt") as f:
        records = [json.loads(line) for line in f]
    calibration = json.loads((run / "profiles/lan-hdd-calibration.json").read_text())
    prof = fit_profile("lan-hdd", calibration, records)
    for name in ("http", "xrootd"):
        fit = prof.protocols[name].request_ms.fit or {}
        assert all(ms < 5.0 for ms in fit["by_engine_ms"].values()), (name, fit)

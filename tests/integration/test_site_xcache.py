"""A WAN-like emulated site with a real XCache in front of its storage: a cold read moves the
file across the link, a warm one does not; a killed cache server is healed; RTT axis values
land on target; nothing is left after teardown. Needs root."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from instore.site import SiteConfig, load_site, open_site
from instore.site.config import Cache
from instore.site.emulated import EmulatedLive, clear_abandoned, existing, xcache
from instore.site.emulated.delay import measure_rtt_ms
from instore.site.emulated.names import SiteNames

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

SITE = "itest-xcache"  # our own name: a study running alongside uses lan-hdd, lan-ssd, wan
BLOB = "cached.bin"
BLOB_MB = 8
RATE_MBIT = 100
RTT_MS = 25
# The same tolerance the bring-up RTT test holds a profile's RTT to.
RTT_TOLERANCE = 0.20


def site_config() -> SiteConfig:
    """The wan profile under a test name: small disks, 100 Mbit/s, 25 ms, an XCache."""
    cfg = load_site("wan")
    return dataclasses.replace(
        cfg,
        name=SITE,
        protocols=("xrootd", "xcache"),
        disk=dataclasses.replace(cfg.disk, size_mb=128),
        network=dataclasses.replace(cfg.network, bandwidth_mbit=RATE_MBIT, rtt_ms=RTT_MS),
        cache=Cache(disk_mb=128, blocksize_kb=1024, prefetch=0, ram_mb=1024),
    )


def ours_left() -> list[str]:
    out = subprocess.run(["pgrep", "-a", "xrootd"], capture_output=True, text=True).stdout
    return existing(SiteNames(SITE)) + [line for line in out.splitlines() if SITE in line]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatedLive]:
    clear_abandoned(SiteNames(SITE))  # what a killed session left, as a bring-up would
    assert not ours_left(), "a previous run left the test site behind"
    blob = tmp_path_factory.mktemp("xcache") / BLOB
    blob.write_bytes(os.urandom(BLOB_MB << 20))
    try:
        with open_site(site_config(), files=[blob], results=blob.parent) as live:
            assert isinstance(live, EmulatedLive)
            yield live
    finally:
        left = ours_left()
        assert not left, f"left after teardown: {left}"


def timed_read(site: EmulatedLive, protocol: str = "xcache") -> tuple[float, int]:
    """Wall time and link bytes of one whole-file read (page cache dropped first)."""
    site.drop_caches()
    before, start = site.link_bytes(), time.perf_counter()
    subprocess.run(["xrdcp", "-f", "-s", site.url(protocol, BLOB), "/dev/null"], check=True)
    wall = time.perf_counter() - start
    return wall, site.link_bytes() - before


def test_cold_read_crosses_the_link_warm_read_does_not(site: EmulatedLive) -> None:
    size = BLOB_MB << 20
    site.prepare_cache("cold", [BLOB])
    assert xcache.cached_bytes(site.names) == 0
    cold_wall, cold_bytes = timed_read(site)
    warm_wall, warm_bytes = timed_read(site)
    link_s = size * 8 / (RATE_MBIT * 1e6)
    print(
        f"XCache cold: {cold_wall:.2f} s, {cold_bytes / 1e6:.2f} MB over the link; "
        f"warm: {warm_wall:.2f} s, {warm_bytes / 1e6:.3f} MB (the link needs {link_s:.2f} s)"
    )
    assert size <= cold_bytes <= 1.1 * size, "a cold read fetches the file once from the origin"
    assert warm_bytes < 0.01 * size, "a warm read is served from the cache's disk"
    assert cold_wall - warm_wall >= 0.8 * link_s, "the warm read saves the link's cost"
    assert xcache.cached_bytes(site.names) >= size


def test_warm_state_fills_a_purged_cache_off_the_clock(site: EmulatedLive) -> None:
    site.prepare_cache("cold", [BLOB])
    site.prepare_cache("warm", [BLOB])
    _, moved = timed_read(site)
    assert moved < 0.01 * (BLOB_MB << 20)


def test_a_killed_cache_server_is_healed(site: EmulatedLive) -> None:
    pid = site.state.pids()["xcache"]
    os.kill(pid, 9)
    time.sleep(0.3)
    repaired = site.heal()
    assert "the XCache had exited: restarted it" in repaired
    assert site.state.pids()["xcache"] != pid
    timed_read(site)  # it serves again
    assert site.heal() == []


@pytest.mark.parametrize("rtt", [10.0, 50.0])
def test_an_rtt_axis_value_lands_within_tolerance(site: EmulatedLive, rtt: float) -> None:
    got = site.set_conditions(rtt, None)
    measured = measure_rtt_ms(site.names.storage_ip, 1094, samples=60)
    print(f"RTT asked {rtt} ms: tuned {got['rtt_ms_measured']:.2f} ms, measured {measured:.2f}")
    assert abs(got["rtt_ms_measured"] - rtt) <= RTT_TOLERANCE * rtt
    assert abs(measured - rtt) <= RTT_TOLERANCE * rtt
    assert got["bandwidth_mbit_applied"] == RATE_MBIT


def test_bandwidth_axis_replaces_tbf_and_site_values_come_back(site: EmulatedLive) -> None:
    got = site.set_conditions(None, 50)
    assert got["bandwidth_mbit_applied"] == 50
    tbf = subprocess.run(["tc", "qdisc", "show", "dev", site.names.veth_worker],
                         capture_output=True, text=True).stdout  # fmt: skip
    assert "rate 50Mbit" in tbf
    back = site.set_conditions(None, None)
    assert back["bandwidth_mbit_applied"] == RATE_MBIT
    assert abs(back["rtt_ms_measured"] - RTT_MS) <= RTT_TOLERANCE * RTT_MS


def test_cache_state_survives_condition_changes(site: EmulatedLive, tmp_path: Path) -> None:
    """The cache still reads through the retuned link (its origin connection reconnects)."""
    site.prepare_cache("cold", [BLOB])
    _, moved = timed_read(site)
    assert moved >= BLOB_MB << 20


def test_calibration_measures_the_cache_read_and_its_disk(site: EmulatedLive) -> None:
    from instore.site.calibrate import cache_limits

    record: dict = {"protocols": {}}
    cache_limits(site, record, BLOB, BLOB_MB << 20)
    entry, fio = record["protocols"]["xcache"], record["xcache_fio"]
    print(f"XCache calibration: {entry}, disk {fio}")
    assert entry["cold_mb_per_s"] <= 1.1 * RATE_MBIT / 8, "a cold read is capped by the link"
    assert entry["mb_per_s"] > 1.5 * entry["cold_mb_per_s"], "a warm read is not"
    assert fio["directory"] == str(site.names.cache_mount) and fio["seq_read_mb_per_s"] > 0

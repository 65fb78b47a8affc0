"""Emulated sites with real servers: each profile comes up once per module, its emulated
limits are measured against the profile, every protocol reads the same file with both
payload engines, and nothing is left behind afterwards. Needs root."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from instore.errors import InstoreError
from instore.site import SiteConfig, load_site, open_site
from instore.site.calibrate import fio
from instore.site.emulated import EmulatedLive, blkio, clear_abandoned, existing, teardown
from instore.site.emulated.delay import measure_rtt_ms
from instore.site.emulated.names import SiteNames
from instore.site.emulated.system import in_netns, instance_log
from instore.site.live import FIO_QUEUE_DEPTH

from tests.cli import Cli
from tests.integration.emulated import torn_down_after

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="emulated sites need root"),
]

PROFILES = ["lan-hdd", "lan-ssd", "wan"]
TEST_PREFIX = "itest-"  # our own site names, so a study running alongside is not disturbed
BLOB = "blob.bin"
BLOB_MB = 24
HERE = Path(__file__).parent
CRASH_SITES = ["crash", "term", "abandoned", "held", "released"]  # sites of the processes we kill


def profile_config(profile: str) -> SiteConfig:
    """The shipped profile under a test name, with a small disk."""
    cfg = load_site(profile)
    return dataclasses.replace(
        cfg, name=TEST_PREFIX + profile, disk=dataclasses.replace(cfg.disk, size_mb=512)
    )


def ours_left() -> list[str]:
    """Resources of any test site still present."""
    left = []
    for profile in [*PROFILES, *CRASH_SITES]:
        left += existing(SiteNames(TEST_PREFIX + profile))
    out = subprocess.run(["pgrep", "-a", "xrootd"], capture_output=True, text=True).stdout
    left += [line for line in out.splitlines() if TEST_PREFIX in line]
    return left


@pytest.fixture(scope="module", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    """Set up first, finalised last: after every site fixture is gone, nothing of ours is. A
    site a killed session left (its owner gone) is removed first, as a bring-up would."""
    for profile in [*PROFILES, *CRASH_SITES]:
        clear_abandoned(SiteNames(TEST_PREFIX + profile))
    assert not ours_left(), "a previous run left test sites behind"
    yield
    assert not ours_left()


@pytest.fixture(scope="module")
def blob(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("blob") / BLOB
    path.write_bytes(os.urandom(BLOB_MB << 20))
    return path


@pytest.fixture(scope="module", params=PROFILES)
def site(request: pytest.FixtureRequest, blob: Path, small_files: dict[str, Path]) -> Iterator:
    files = [blob, small_files["ordered"], small_files["unordered"]]
    with open_site(profile_config(request.param), files=files) as live:
        yield live


# One Python sender and receiver on a shared 2-core VM reach 10 Gbit/s through a veth when the
# machine is quiet, and half that when it is not: only rates up to this are held to their floor.
HOST_PUSHES_MBIT = 1000
# Sub-millisecond RTTs through the user-space delayer move by about 0.1 ms with the host's load.
RTT_JITTER_MS = 0.15


def test_tbf_caps_throughput_at_the_profile_rate(site: EmulatedLive) -> None:
    names, rate = site.names, site.config.network.bandwidth_mbit
    seconds = 3.0
    sender = subprocess.Popen(
        in_netns(names.netns, [sys.executable, str(HERE / "site_blast.py"), "5201", "30"]),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sender.stdout.readline().strip() == "listening"
        with socket.create_connection((names.storage_ip, 5201)) as conn:
            received, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                received += len(conn.recv(1 << 20))
            mbit = received * 8 / (time.perf_counter() - start) / 1e6
    finally:
        sender.kill()
        sender.wait()
    print(f"{site.config.name}: tbf {rate} Mbit/s, measured {mbit:.0f} Mbit/s")
    assert mbit <= 1.15 * rate, "the shaper caps the link"
    if rate <= HOST_PUSHES_MBIT:  # above this, reaching the rate tests the host's CPU
        assert mbit >= 0.85 * rate, "the shaper lets the profile's rate through"


def test_rtt_within_20_percent_of_profile_or_host_jitter(site: EmulatedLive) -> None:
    target = site.config.network.rtt_ms
    rtt = measure_rtt_ms(site.names.storage_ip, 1094, samples=60)
    print(f"{site.config.name}: RTT target {target} ms, measured {rtt:.3f} ms")
    if target is None:  # no delayer: no packet goes through user space, the bare veth
        rules = subprocess.run(in_netns(site.names.netns, ["iptables", "-S"]),
                               capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert "NFQUEUE" not in rules
        # a bare veth answers a connect in 0.02-0.05 ms; the host's load once moved the
        # median of 60 to 0.202 ms (the CI of bf2993b), so the host's jitter is allowed twice
        assert rtt < 2 * RTT_JITTER_MS
    else:
        # the delayer runs in user space: a host busy with the background builds once held
        # every packet of 60 connects (median 2.448 ms against 0.5, the CI of 806c03b), so a
        # median off the target is measured again, up to twice, a second apart
        allowed = max(0.20 * target, RTT_JITTER_MS)
        tries = [rtt]
        while abs(tries[-1] - target) > allowed and len(tries) < 3:
            time.sleep(1)
            tries.append(measure_rtt_ms(site.names.storage_ip, 1094, samples=60))
        assert abs(tries[-1] - target) <= allowed, tries


def test_iops_limit_caps_random_reads_within_15_percent(site: EmulatedLive) -> None:
    result = fio(site.names.data_dir, "randread", "4k", 3, 128, site.names.cgroup)
    limit = site.config.disk.read_iops
    print(f"{site.config.name}: IOPS limit {limit}, measured {result['iops']:.0f}")
    if limit is None:
        assert_unthrottled(site, result["iops"], depth=1)
    else:
        assert_throttled(site, result["iops"], limit, depth=1)


def assert_throttled(site: EmulatedLive, iops: float, limit: int, depth: int) -> None:
    """The throttle caps the reads at the limit, and lets them reach it where the host disk
    can: the CI of b6e5e17 measured 100 a second against 150 while Apptainer was being built
    from source beside it (its writes on the same disk), so a rate under the limit is measured
    again, up to twice, and held to what the host serves outside the cgroup at that moment."""
    assert iops <= 1.15 * limit, "the throttle caps the reads"
    tries = [iops]
    while tries[-1] < 0.85 * limit and len(tries) < 3:
        time.sleep(1)
        tries.append(fio(site.names.data_dir, "randread", "4k", 3, 128, site.names.cgroup,
                         depth=depth)["iops"])  # fmt: skip
        assert tries[-1] <= 1.15 * limit, tries
    if tries[-1] < 0.85 * limit:
        host = fio(site.names.data_dir, "randread", "4k", 3, 128, depth=depth)["iops"]
        print(f"{site.config.name}: {tries}; outside the cgroup {host:.0f} at depth {depth}")
        assert tries[-1] >= 0.85 * min(limit, host), (tries, host)


def assert_unthrottled(site: EmulatedLive, iops: float, depth: int) -> None:
    """An SSD profile sets no limit: the kernel holds none for its cgroup, and the cgroup reads
    at the host disk's own rate. A fixed floor tested the host instead (the CI machine of
    217c00a served 342 direct 4 KiB reads a second at depth 1, in the cgroup or out of it), and
    one run on each side, one after the other, tested the host's noise (the CI of b5cad40,
    Apptainer built beside it: 3,170 in the cgroup, then 7,460 outside); so the two sides
    alternate, twice each, and the best of each is compared."""
    assert all(not v for v in blkio.limits(site.names.cgroup).values())
    inside, outside = [iops], []
    for _ in range(2):
        outside.append(fio(site.names.data_dir, "randread", "4k", 2, 128, depth=depth)["iops"])
        if len(inside) < 2:
            inside.append(fio(site.names.data_dir, "randread", "4k", 2, 128, site.names.cgroup,
                              depth=depth)["iops"])  # fmt: skip
    print(f"{site.config.name}: in the cgroup {inside}, outside {outside} at depth {depth}")
    assert max(inside) >= 0.5 * max(outside), (inside, outside)


def test_an_iops_limit_holds_with_many_reads_in_flight(site: EmulatedLive) -> None:
    """The calibration's deep-queue fio (the model's disk_parallel): a throttled disk serves
    no more reads side by side than one at a time; the host's own disk may serve more."""
    deep = fio(site.names.data_dir, "randread", "4k", 3, 128, site.names.cgroup,
               depth=FIO_QUEUE_DEPTH)  # fmt: skip
    limit = site.config.disk.read_iops
    print(f"{site.config.name}: IOPS limit {limit}, measured {deep['iops']:.0f} at depth 16")
    if limit is None:
        assert_unthrottled(site, deep["iops"], depth=FIO_QUEUE_DEPTH)
    else:
        assert_throttled(site, deep["iops"], limit, depth=FIO_QUEUE_DEPTH)


def test_every_protocol_serves_the_same_bytes(site: EmulatedLive, blob: Path, tmp_path) -> None:
    expected = blob.read_bytes()
    for proto in {"posix", "fuse"} & set(site.protocols):
        assert Path(site.url(proto, BLOB)).read_bytes() == expected, proto
    for proto in ("xrootd", "stage-in"):
        out = tmp_path / f"{proto}.bin"
        subprocess.run(["xrdcp", "-f", "-s", site.url(proto, BLOB), str(out)], check=True)
        assert out.read_bytes() == expected, proto
    request = urllib.request.Request(site.url("http", BLOB), headers={"Range": "bytes=100-199"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 206 and response.read() == expected[100:200]


def read(
    cli: Cli,
    site: EmulatedLive,
    proto: str,
    file: str,
    engine: str,
    cache_mb: int,
    scratch: Path,
    extra: tuple[str, ...] = (),
):
    """One payload job as the sweep runs it: a separate process with the site's job env."""
    args = ["read", site.url(proto, file), "--engine", engine, "--cache-mb", str(cache_mb)]
    args += extra
    if proto == "stage-in":
        args += ["--stage-in", "xrdcp", "--scratch", str(scratch)]
    env = {**os.environ, **site.job_env()}
    proc = cli(*args, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-500:] + proc.stderr[-1500:]
    return json.loads(proc.stdout)


@pytest.mark.parametrize("engine", ["root", "uproot"])
def test_payload_reads_through_every_protocol(
    site: EmulatedLive, small_files: dict[str, Path], engine: str, tmp_path: Path, cli: Cli
) -> None:
    name = small_files["ordered"].name
    # one job per protocol, all at once (only what each read is checked here, not how fast)
    with ThreadPoolExecutor(len(site.protocols)) as pool:
        records = dict(zip(site.protocols, pool.map(
            lambda proto: read(cli, site, proto, name, engine, 30, tmp_path), site.protocols
        ), strict=True))  # fmt: skip
    events = set()
    for proto, record in records.items():
        assert not record.get("error"), (proto, record.get("error"))
        assert record["bytes_read"] > 0, proto
        events.add(record["events"])
    assert len(events) == 1 and events.pop() > 0


@pytest.mark.parametrize("site", ["wan"], indirect=True)
@pytest.mark.parametrize("engine", ["root", "uproot"])
def test_a_jobs_open_pays_its_connection_to_the_server(
    site: EmulatedLive, small_files: dict[str, Path], engine: str, tmp_path: Path, cli: Cli
) -> None:
    """Over root:// a job's open waits at least a round trip for each of its own reads, one
    for the open and three for the connection a worker's job makes first (TCP, the XRootD
    handshake, the login). Choosing the object before the clock had left its connection open
    for the job's open to reuse: 6.3 round trips off CPU where a fresh job waits 9.4 (the WAN
    site, 2026-11-29)."""
    record = read(cli, site, "xrootd", small_files["ordered"].name, engine, 30, tmp_path)
    rtt_s = measure_rtt_ms(site.names.storage_ip, 1094, samples=20) / 1000
    off_cpu = record["open_s"] - record["open_cpu_s"]
    trips = record["open_read_calls"] + 1 + 3
    print(f"{engine}: open off CPU {off_cpu:.3f} s = {off_cpu / rtt_s:.1f} round trips")
    assert off_cpu >= 0.9 * trips * rtt_s, (off_cpu, trips, rtt_s)


@pytest.mark.parametrize("site", ["lan-hdd"], indirect=True)
def test_unordered_cache_off_at_least_5x_slower_on_lan_hdd(
    site: EmulatedLive, small_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    site.drop_caches()
    fast = read(cli, site, "posix", small_files["ordered"].name, "root", 30, tmp_path)
    site.drop_caches()
    slow = read(cli, site, "posix", small_files["unordered"].name, "root", 0, tmp_path)
    print(
        f"lan-hdd: ordered+cache {fast['wall_s']:.2f} s, unordered no cache {slow['wall_s']:.2f} s"
    )
    assert slow["wall_s"] >= 5 * fast["wall_s"]


def test_the_servers_logs_are_where_a_start_failure_looks(site: EmulatedLive) -> None:
    """xrootd -l FILE -n INSTANCE writes INSTANCE/FILE: a start failure quotes that log."""
    names = site.names
    assert instance_log(names.xrootd_dir / "xrootd.log", names.netns).is_file()
    if site.config.cache is not None:
        xcache = instance_log(names.xcache_dir / "xcache.log", f"{names.netns}-xcache")
        assert xcache.is_file()


def test_preflight_of_a_running_emulated_site_passes(site: EmulatedLive) -> None:
    assert site.preflight() == []


def test_readahead_and_conditions(site: EmulatedLive) -> None:
    site.set_block_readahead(1024)
    cond = site.conditions()
    json.dumps(cond)
    assert cond["emulation"]["disk"]["readahead_kb"] == 1024
    dev = site.state.data["loop"]
    out = subprocess.run(["blockdev", "--getra", dev], capture_output=True, text=True, check=True)
    assert int(out.stdout) == 2048
    assert cond["site"] == site.config.name and cond["kind"] == "emulated"
    site.set_block_readahead(site.config.disk.readahead_kb)


def disk_read_by(site: EmulatedLive, block_kb: int, job) -> tuple[int, object]:
    """Bytes the site's disk read while ``job()`` ran from a cold cache at a block readahead."""
    site.set_block_readahead(block_kb)
    site.drop_caches()
    before = site.disk_bytes_read()
    try:
        out = job()
    finally:
        site.set_block_readahead(site.config.disk.readahead_kb)
    return site.disk_bytes_read() - before, out


def read_head(path: str, kb: int = 256, chunk: int = 4096) -> None:
    """Read the first ``kb`` KiB in small sequential reads: the pattern readahead is for."""
    with open(path, "rb", buffering=0) as f:
        for _ in range(kb * 1024 // chunk):
            f.read(chunk)


@pytest.mark.parametrize("site", ["lan-hdd"], indirect=True)
def test_disk_counter_sees_block_readahead_on_sequential_reads(site: EmulatedLive) -> None:
    """The larger readahead is read twice, the larger count kept: the kernel may skip an
    asynchronous readahead (a CI run beside the background builds read 320 kB at 4 MiB once,
    where the same test alone reads 1.3 MB every time)."""
    path = site.url("posix", BLOB)
    small, _ = disk_read_by(site, 128, lambda: read_head(path))
    large = max(disk_read_by(site, 4096, lambda: read_head(path))[0] for _ in range(2))
    print(f"256 KiB read sequentially: the disk read {small} B at 128 KiB, {large} B at 4 MiB")
    assert 256 * 1024 <= small < 1024 * 1024
    assert large > 2 * small


@pytest.mark.parametrize("site", ["lan-hdd"], indirect=True)
def test_disk_reads_count_one_request_per_scattered_read(site: EmulatedLive) -> None:
    """The per-point count of disk requests, the quantity the IOPS limit caps."""
    path, scattered = site.url("posix", BLOB), 32
    step = (BLOB_MB << 20) // scattered

    def read_scattered() -> None:
        with open(path, "rb", buffering=0) as f:
            for i in range(scattered):
                f.seek(i * step)
                f.read(4096)

    site.set_block_readahead(4)
    site.drop_caches()
    before = site.disk_reads()
    try:
        read_scattered()
    finally:
        site.set_block_readahead(site.config.disk.readahead_kb)
    done = site.disk_reads() - before
    print(f"{scattered} scattered 4 KiB reads: {done} disk requests")
    assert scattered <= done <= scattered + 4


@pytest.mark.parametrize("site", ["lan-hdd"], indirect=True)
def test_disk_counts_at_least_what_a_sparse_job_needs(
    site: EmulatedLive, small_files: dict[str, Path], tmp_path: Path, cli: Cli
) -> None:
    """A sparse job (10% of branches, cache off): the disk serves what it needs plus file
    metadata, at the default and at a large block readahead (printed: the seeds' question)."""
    name, sparse = small_files["ordered"].name, ("--branches", "fraction:0.1")
    for block_kb in (128, 4096):
        disk_read, record = disk_read_by(
            site, block_kb, lambda: read(cli, site, "posix", name, "root", 0, tmp_path, sparse)
        )
        needed = record["bytes_needed"]
        print(
            f"sparse job, block readahead {block_kb} KiB: needed {needed} B, disk read {disk_read} B"
        )
        assert needed <= disk_read < 2 * needed


def crash_config(tmp_path: Path, suffix: str) -> Path:
    """A lan-ssd site file under a test name, for the processes we kill."""
    cfg = load_site("lan-ssd")
    text = cfg.path.read_text().replace("name: lan-ssd", f"name: {TEST_PREFIX}{suffix}")
    path = tmp_path / f"{suffix}.yaml"
    path.write_text(text.replace("size_mb: 1024", "size_mb: 256"))
    return path


OPEN_AND_WAIT = (
    "import sys, time\n"
    "from instore.site import open_site\n"
    "with open_site(sys.argv[1]):\n"
    "    print('ready', flush=True)\n"
    "    time.sleep(600)\n"
)


def start_holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", OPEN_AND_WAIT, str(path)],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_sigterm_tears_the_site_down(tmp_path: Path) -> None:
    proc = start_holder(crash_config(tmp_path, "term"))
    assert existing(SiteNames(TEST_PREFIX + "term"))
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert existing(SiteNames(TEST_PREFIX + "term")) == []


def killed_holder(path: Path) -> int:
    """A process that brought the site up, SIGKILLed: the site stays, its owner is gone."""
    proc = start_holder(path)
    proc.kill()
    proc.wait()
    return proc.pid


def test_down_cleans_up_after_a_killed_process(tmp_path: Path, cli: Cli) -> None:
    path = crash_config(tmp_path, "crash")
    names = SiteNames(TEST_PREFIX + "crash")
    try:
        killed_holder(path)
        assert existing(names), "SIGKILL leaves the site up"
        status = cli("site", "status", names.site)
        assert json.loads(status.stdout)[0]["abandoned"] is True
        down = cli("site", "down", names.site)
        assert down.returncode == 0
        assert existing(names) == []
    finally:
        teardown(names)  # idempotent


def test_bring_up_removes_a_site_whose_owner_was_killed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A study killed with SIGKILL resumes: the next bring-up removes the leftover itself."""
    path = crash_config(tmp_path, "abandoned")
    names = SiteNames(TEST_PREFIX + "abandoned")
    try:
        pid = killed_holder(path)
        assert existing(names)
        with open_site(path) as live:
            err = capsys.readouterr().err.strip()
            assert f"was left up by process {pid}, which is gone" in err and "\n" not in err
            assert live.preflight() == []
            assert live.state.data["owner_pid"] == os.getpid()
        assert existing(names) == []
    finally:
        teardown(names)


def test_a_site_a_killed_test_session_left_does_not_fail_the_next_session(tmp_path: Path) -> None:
    """Seen in CI: a session killed mid-test left its site up, and the next session's guard
    failed on it. The guard removes a site whose owner is gone, and still refuses a held one."""
    path = crash_config(tmp_path, "crash")
    names = SiteNames(TEST_PREFIX + "crash")
    try:
        killed_holder(path)
        with torn_down_after(names, "crash"):
            assert existing(names) == []
        holder = start_holder(path)
        try:
            with pytest.raises(InstoreError, match="already up"), torn_down_after(names, "held"):
                pass
            assert holder.poll() is None and existing(names)
        finally:
            holder.terminate()
            holder.wait(timeout=60)
    finally:
        teardown(names)
    assert existing(names) == []


def test_bring_up_refuses_a_site_whose_owner_still_runs(tmp_path: Path, cli: Cli) -> None:
    path = crash_config(tmp_path, "held")
    names = SiteNames(TEST_PREFIX + "held")
    holder = start_holder(path)
    try:
        again = cli("site", "up", str(path))
        assert again.returncode == 2 and "instore site down" in again.stderr
        assert holder.poll() is None and existing(names)
    finally:
        holder.terminate()  # SIGTERM: the holder tears its site down
        holder.wait(timeout=60)
        teardown(names)
    assert existing(names) == []


def test_site_up_leaves_a_site_no_bring_up_removes(tmp_path: Path, cli: Cli) -> None:
    """`instore site up` exits and leaves its site up on purpose: not a crash's leftover."""
    path = crash_config(tmp_path, "released")
    names = SiteNames(TEST_PREFIX + "released")
    try:
        up = cli("site", "up", str(path))
        assert up.returncode == 0, up.stderr
        again = cli("site", "up", str(path))
        assert again.returncode == 2 and "instore site down" in again.stderr
        assert existing(names)
    finally:
        teardown(names)
    assert existing(names) == []

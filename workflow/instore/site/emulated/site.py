"""Emulated sites: bring-up in a fixed order, each resource recorded in the state file the
moment it exists, and a teardown that works from that file or, failing it, from names.

A site left up by a process that died (SIGKILL, a lost session) is removed by the next
bring-up; one whose owner still runs, or that `instore site up` left, is refused.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from instore.errors import InstoreError
from instore.site.config import SiteConfig, load_site
from instore.site.emulated import blkio, delay, disk, fuse, netns, shaping, xcache, xrootd
from instore.site.emulated.names import HTTP_PORT, PREFIX, WORK_ROOT, XROOTD_PORT, SiteNames
from instore.site.emulated.state import SiteState, recorded_sites
from instore.site.emulated.system import reap, require_root, run, running, stop_pid
from instore.site.live import DEFAULT_RESULTS, FIO_MAX_MB, FioTarget, LiveSite
from instore.site.usage import Counters, read_counters
from instore.site.usage import qdisc_drops as shaping_drops

# Bring-up refuses a site whose RTT is far off; the integration tests hold it to 20% (or 0.15 ms
# of host jitter for sub-millisecond RTTs). The achieved RTT is recorded in the conditions.
RTT_TOLERANCE = 0.5
CALIBRATION_FILE = "instore-calibration.bin"


class EmulatedLive(LiveSite):
    """A running emulated site, described by its state file."""

    def __init__(
        self, config: SiteConfig, state: SiteState, results: Path = DEFAULT_RESULTS
    ) -> None:
        super().__init__(config, results)
        self.state = state
        self.names = state.names

    def _url(self, protocol: str, file: str) -> str:
        n = self.names
        if protocol == "stage-in":
            protocol = self.config.stage_in_source
        return {
            "posix": str(n.data_dir / file),
            "fuse": str(n.fuse_mount / file),
            "xrootd": f"root://{n.storage_ip}:{XROOTD_PORT}//{n.data_dir.name}/{file}",
            "http": f"http://{n.storage_ip}:{HTTP_PORT}/{n.data_dir.name}/{file}",
            "xcache": f"root://127.0.0.1:{n.xcache_port}//{n.data_dir.name}/{file}",
        }[protocol]

    def drop_caches(self) -> None:
        """Flush and drop the page cache (the server's cache is the host's page cache)."""
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")

    @property
    def can_read_cold(self) -> bool:
        return True

    def set_block_readahead(self, kb: int | None) -> None:
        if kb is None:
            assert self.config.disk
            kb = self.config.disk.readahead_kb
        disk.set_readahead(self.state.data["loop"], kb)
        self.state.record("readahead_kb", kb)

    def set_io_scheduler(self, name: str | None) -> None:
        """The loop device's scheduler (none, mq-deadline, bfq, kyber); None: the site's."""
        assert self.config.disk
        name = name or self.config.disk.io_scheduler
        disk.set_scheduler(self.state.data["loop"], name)
        self.state.record("io_scheduler", name)

    def disk_bytes_read(self) -> int | None:
        return disk.bytes_read(self.state.data["loop"])

    def disk_reads(self) -> int | None:
        return disk.reads_done(self.state.data["loop"])

    def counters(self) -> Counters:
        """The host's CPU, the site's own processes' (server, cache, link delayer, FUSE), its
        disk's counters and its link's bytes and qdisc drops (both ends)."""
        drops = [shaping_drops(self.names.veth_worker),
                 shaping_drops(self.names.veth_storage, self.names.netns)]  # fmt: skip
        link = (self.link_bytes(), None if None in drops else sum(drops))  # type: ignore[arg-type]
        return read_counters(self.state.pids(), self.state.data["loop"], link)

    def bandwidth_mbit(self) -> float | None:
        if self.config.network is None:
            return None
        return float(self.state.data.get("bandwidth_mbit", self.config.network.bandwidth_mbit))

    def link_bytes(self) -> int | None:
        """Bytes the worker side received over the link (IP packets, headers included)."""
        path = Path(f"/sys/class/net/{self.names.veth_worker}/statistics/rx_bytes")
        return int(path.read_text())

    def set_conditions(self, rtt_ms: float | None, bandwidth_mbit: float | None) -> dict[str, Any]:
        """Retune the link only where the point's conditions differ from the link's now."""
        net, data = self.config.network, self.state.data
        assert net
        bandwidth = net.bandwidth_mbit if bandwidth_mbit is None else bandwidth_mbit
        rtt = net.rtt_ms if rtt_ms is None else rtt_ms
        if bandwidth != data.get("bandwidth_mbit", net.bandwidth_mbit):
            _shape(self.names, bandwidth, self.state)
        if rtt != data.get("rtt_ms_target", net.rtt_ms):
            _retune(self.config.name, self.names, self.state, rtt)
        return {
            "rtt_ms_measured": data.get("rtt_ms_measured", data.get("rtt_ms_bare")),
            "bandwidth_mbit_applied": data.get("bandwidth_mbit", net.bandwidth_mbit),
        }

    def prepare_cache(self, cache_state: str | None, files: list[str]) -> None:
        """cold: restart the XCache with its disk emptied (memory goes with the process);
        warm: read each file whole through it, so it holds them all."""
        if cache_state == "cold":
            stop_pid(self.state.pids().get("xcache", 0), xcache.CONFIG)
            xcache.purge(self.names)
            _start_cache(self.config, self.names, self.state)
        elif cache_state == "warm":
            for file in files:
                run(["xrdcp", "--force", "--silent", self.url("xcache", file), "/dev/null"],
                    timeout=600)  # fmt: skip
        elif cache_state is not None:
            raise InstoreError(f"unknown cache state {cache_state!r}", "use cold or warm")

    def cache_fio_target(self) -> FioTarget | None:
        """The XCache's own disk, for calibration (None: the site has no cache)."""
        if self.config.cache is None:
            return None
        return FioTarget(self.names.cache_mount, min(FIO_MAX_MB, self.config.cache.disk_mb // 4))

    def calibration_file(self) -> tuple[str, int]:
        """Random bytes of the profile's calibration.file_mb, written on the site's disk once."""
        path, size = self.names.data_dir / CALIBRATION_FILE, self.config.calibration.file_mb << 20
        if not path.exists() or path.stat().st_size != size:
            with path.open("wb") as out:
                for _ in range(self.config.calibration.file_mb):
                    out.write(os.urandom(1 << 20))
            path.chmod(0o644)
            os.sync()
        return CALIBRATION_FILE, path.stat().st_size

    def fio_target(self) -> FioTarget:
        """The exported directory, a quarter of the disk at most, reads throttled as jobs' are."""
        disk_mb = self.config.disk.size_mb if self.config.disk else 1024
        return FioTarget(self.names.data_dir, min(FIO_MAX_MB, disk_mb // 4), self.names.cgroup)

    def job_env(self) -> dict[str, str]:
        return {"INSTORE_BLKIO_CGROUP": str(self.names.cgroup)}

    def heal(self) -> list[str]:
        """Between points: bring a downed worker link back up and restart a storage server or
        latency delayer that exited, so one fault costs one point, not the rest of the sweep."""
        names, repaired = self.names, []
        if not netns.link_is_up(names.veth_worker):
            netns.set_link(names.veth_worker, up=True)
            repaired.append(f"link {names.veth_worker} was down: brought it up")
        pids = self.state.pids()
        if not running(pids.get("xrootd", 0), "xrootd"):
            reap(pids.get("xrootd", 0))
            _start_server(names, self.state)
            repaired.append("xrootd had exited: restarted it")
        if "delay" in pids and not running(pids["delay"], delay.MODULE):
            reap(pids["delay"])
            self.state.record_pid("delay", delay.start(names, self.state.data["delay_hold_ms"]).pid)
            repaired.append("the latency delayer had exited: restarted it")
        if self.config.cache and not running(pids.get("xcache", 0), xcache.CONFIG):
            reap(pids.get("xcache", 0))
            _start_cache(self.config, names, self.state)
            repaired.append("the XCache had exited: restarted it")
        return repaired

    def _emulation(self) -> dict[str, Any]:
        cfg, data = self.config, self.state.data
        assert cfg.network and cfg.disk
        cache = cfg.cache.__dict__ if cfg.cache else None
        return {
            **({"cache": cache} if cache else {}),
            "network": {
                "bandwidth_mbit": cfg.network.bandwidth_mbit,
                "rtt_ms_target": cfg.network.rtt_ms,
                "rtt_ms_bare": data.get("rtt_ms_bare"),
                "rtt_ms_measured": data.get("rtt_ms_measured"),
                "delay_hold_ms": data.get("delay_hold_ms"),
            },
            "disk": {
                "size_mb": cfg.disk.size_mb,
                "filesystem": data.get("filesystem", cfg.disk.filesystem),  # as mounted
                "readahead_kb": data.get("readahead_kb", cfg.disk.readahead_kb),
                "read_iops": cfg.disk.read_iops,
                "read_mbps": cfg.disk.read_mbps,
            },
        }


def existing(names: SiteNames) -> list[str]:
    """What of this site exists now: state file, namespace, link, mounts, cgroup."""
    found = [f"state file {names.state_file}"] if names.state_file.exists() else []
    return found + _resources(names)


def _resources(names: SiteNames) -> list[str]:
    """The system resources of a site (everything but its state file)."""
    found = []
    if names.netns in netns.namespaces():
        found.append(f"namespace {names.netns}")
    found += [f"link {link}" for link in netns.links() if link == names.veth_worker]
    found += [f"mount {m}" for m in disk.our_mounts() if m.startswith(str(names.workdir))]
    found += [f"cgroup {names.cgroup}"] if names.cgroup.exists() else []
    found += [f"XCache process {pid}" for pid in xcache.pids(names)]
    return found


def bring_up(
    cfg: SiteConfig, files: Iterable[Path] = (), results: Path = DEFAULT_RESULTS
) -> EmulatedLive:
    """Start everything; on any failure, undo what was done and re-raise. The calling process
    owns the site: it must tear it down (``open_site`` does), or release it."""
    require_root(f"bringing up emulated site {cfg.name}")
    names = SiteNames(cfg.name)
    _clear_abandoned(names)
    state = SiteState(names)
    state.start()
    state.record("config", str(cfg.path))
    try:
        _build(cfg, names, state, list(files))
    except BaseException:
        teardown(names)
        raise
    return EmulatedLive(cfg, state, results)


def _clear_abandoned(names: SiteNames) -> None:
    """Remove a leftover site whose owner died, saying so in one line; refuse any other
    leftover (its owner still runs, `instore site up` left it, or its state file is lost)."""
    found = existing(names)
    if not found:
        return
    state = SiteState.load(names)
    if state is None or not state.owner_gone():
        raise InstoreError(
            f"site {names.site} is already up or left over from a crash ({', '.join(found)})",
            f"run `instore site down {names.site}` (or `instore site down --all`) first",
        )
    print(
        f"instore: site {names.site} was left up by process {state.data['owner_pid']}, "
        "which is gone: removing it before bringing it up",
        file=sys.stderr,
    )
    left = teardown(names)
    if left:
        raise InstoreError(
            f"site {names.site}: could not remove what a crashed run left ({', '.join(left)})",
            f"run `instore site down {names.site}` as root and see what it reports",
        )


def _build(cfg: SiteConfig, names: SiteNames, state: SiteState, files: list[Path]) -> None:
    assert cfg.network and cfg.disk
    names.workdir.mkdir(parents=True, exist_ok=True)
    netns.create(names)
    state.record("netns", names.netns)
    _shape(names, cfg.network.bandwidth_mbit, state)
    loop = disk.create(names, cfg.disk)
    state.record("loop", loop)
    disk.format_and_mount(names, cfg.disk, loop)
    state.record("filesystem", disk.mounted_type(names.disk_mount))
    state.record("readahead_kb", cfg.disk.readahead_kb)
    blkio.create(names.cgroup, disk.major_minor(loop), cfg.disk.read_iops, cfg.disk.read_mbps)
    state.record("files", disk.put_files(names, files))
    _start_server(names, state)
    _add_latency(cfg.name, cfg.network.rtt_ms, names, state)
    if "fuse" in cfg.protocols:
        state.record_pid("xrootdfs", fuse.mount(names).pid)
    if cfg.cache:
        _build_cache(cfg, names, state)


def _shape(names: SiteNames, bandwidth_mbit: float, state: SiteState) -> None:
    """tbf on both ends of the link (replacing any there)."""
    shaping.limit(names.veth_storage, bandwidth_mbit, names.netns)
    shaping.limit(names.veth_worker, bandwidth_mbit)
    state.record("bandwidth_mbit", bandwidth_mbit)


def _build_cache(cfg: SiteConfig, names: SiteNames, state: SiteState) -> None:
    """The XCache's disk (recorded before it is formatted) and its server."""
    assert cfg.cache
    loop = xcache.create_disk(names, cfg.cache)
    state.record("cache_loop", loop)
    xcache.mount_disk(names, loop)
    _start_cache(cfg, names, state)


def _start_cache(cfg: SiteConfig, names: SiteNames, state: SiteState) -> None:
    assert cfg.cache
    server = xcache.start(names, cfg.cache)
    state.record_pid("xcache", server.pid)
    xcache.wait_ready(names, server)


def _start_server(names: SiteNames, state: SiteState) -> None:
    server = xrootd.start(names)
    state.record_pid("xrootd", server.pid)
    xrootd.wait_ready(names, server)


def _add_latency(site: str, target: float | None, names: SiteNames, state: SiteState) -> None:
    """Tune the delayer to the target RTT and refuse a link that cannot reach it."""
    state.data.update(rtt_ms_target=target)
    if target is None:
        state.data.pop("rtt_ms_measured", None)
        state.record("rtt_ms_bare", delay.measure_rtt_ms(names.storage_ip, XROOTD_PORT))
        return
    proc, bare, hold, achieved = delay.tune(names, target, XROOTD_PORT)
    if proc:
        state.record_pid("delay", proc.pid)
    state.data.update(rtt_ms_bare=bare, delay_hold_ms=hold)
    state.record("rtt_ms_measured", achieved)
    if abs(achieved - target) > RTT_TOLERANCE * target:
        raise InstoreError(
            f"site {site}: measured RTT {achieved:.3f} ms, wanted {target:g} ms "
            f"(bare link {bare:.3f} ms)",
            "lower the machine's load or ask for an RTT above the bare link's",
        )


def _retune(site: str, names: SiteNames, state: SiteState, target: float | None) -> None:
    """A new RTT between points: stop the delayer and its queue rule (else traffic would
    stall), measure the bare link again and tune a new delayer to the target."""
    pids = state.pids()
    if "delay" in pids:
        delay.stop(pids["delay"])
        state.data["pids"].pop("delay")
        state.data.pop("delay_hold_ms", None)
    delay.remove_rule(names)
    _add_latency(site, target, names, state)


def teardown(names: SiteNames) -> list[str]:
    """Remove everything of one site, from its state file and by name. Returns what is left
    (empty when clean). Safe to call repeatedly and on a half-built site."""
    state = SiteState.load(names)
    pids = state.pids() if state else {}
    fuse.unmount(names, pids.get("xrootdfs"))
    for role, expect in (("delay", delay.MODULE), ("xrootd", "xrootd"), ("xcache", xcache.CONFIG)):
        if role in pids:
            stop_pid(pids[role], expect)
    for pid in xcache.pids(names):  # the cache runs outside the namespace: found by name
        xcache.stop(pid)
    for pid in netns.pids_in(names.netns):
        stop_pid(pid, "")  # everything in our namespace is ours
    netns.delete(names.netns, names.veth_worker)
    with contextlib.suppress(OSError):
        blkio.remove(names.cgroup)
    for mountpoint in disk.our_mounts():
        if mountpoint.startswith(str(names.workdir)):
            disk.unmount(mountpoint)
    loops = {state.data["loop"]} if state and "loop" in state.data else set()
    for dev in loops | set(disk.our_loops()):
        if dev in loops or str(names.workdir) in _backing(dev):
            disk.detach(dev)
    disk.remove_workdirs(names)
    left = _resources(names)
    if not left:
        names.state_file.unlink(missing_ok=True)
    return left


def _backing(dev: str) -> str:
    try:
        return Path(f"/sys/block/{Path(dev).name}/loop/backing_file").read_text().strip()
    except OSError:
        return ""


def known_sites() -> set[str]:
    """Every site name that left a trace: state files, namespaces, work dirs, cgroups."""
    names = set(recorded_sites())
    names |= {ns.removeprefix(PREFIX) for ns in netns.namespaces()}
    names |= {p.name.removeprefix(PREFIX) for p in WORK_ROOT.glob(f"{PREFIX}*")}
    names |= {p.name.removeprefix(PREFIX) for p in blkio.ours()}
    return names


def teardown_all() -> list[str]:
    """Remove every trace of every emulated site, including ones whose state file is lost.
    Returns what could not be removed (empty when clean)."""
    require_root("tearing down emulated sites")
    for site in sorted(known_sites()):
        teardown(SiteNames(site))
    for pid in xcache.pids():
        xcache.stop(pid)
    for link in netns.links():
        netns.delete("", link)
    for mountpoint in disk.our_mounts():
        disk.unmount(mountpoint)
    for dev in disk.our_loops():
        disk.detach(dev)
    for cgroup in blkio.ours():
        with contextlib.suppress(OSError):
            blkio.remove(cgroup)
    disk.remove_workdirs()
    return leftovers()


def leftovers() -> list[str]:
    """Anything of ours on this host: the check that teardown was complete."""
    found = [f"namespace {n}" for n in netns.namespaces()]
    found += [f"link {link}" for link in netns.links()]
    found += [f"mount {m}" for m in disk.our_mounts()]
    found += [f"loop device {d}" for d in disk.our_loops()]
    found += [f"cgroup {c}" for c in blkio.ours()]
    found += [f"XCache process {pid}" for pid in xcache.pids()]
    found += [f"state file for {s}" for s in recorded_sites()]
    found += [f"directory {p}" for p in WORK_ROOT.glob(f"{PREFIX}*")]
    return found


def attach(name: str, results: Path = DEFAULT_RESULTS) -> EmulatedLive:
    """The running site ``name`` brought up earlier (e.g. by `instore site up`)."""
    names = SiteNames(name)
    state = SiteState.load(names)
    if state is None or names.netns not in netns.namespaces():
        raise InstoreError(f"emulated site {name} is not up", f"run `instore site up {name}`")
    return EmulatedLive(load_site(state.data["config"]), state, results)


def is_held(name: str) -> bool:
    """True while the site is up and someone holds it: its owner runs, or no process owns it
    (`instore site up`). A site whose owner died is a leftover, not held."""
    state = SiteState.load(SiteNames(name))
    return state is not None and not state.owner_gone()

"""Building an emulated site, step by step, each resource recorded in the state file the moment
it exists: its link (shaped, delayed to its RTT), its disk, its server, its FUSE mount and its
XCache. A running site's link is retuned and its servers restarted with the same steps."""

from __future__ import annotations

from pathlib import Path

from instore import access
from instore.errors import InstoreError
from instore.site import roles
from instore.site.config import SiteConfig
from instore.site.emulated import blkio, delay, disk, fuse, netns, shaping, xcache, xrootd
from instore.site.emulated.names import XROOTD_PORT, SiteNames
from instore.site.emulated.state import SiteState

# Bring-up refuses a site whose RTT is far off; the integration tests hold it to 20% (or 0.15 ms
# of host jitter for sub-millisecond RTTs). The achieved RTT is recorded in the conditions.
RTT_TOLERANCE = 0.5


def build(cfg: SiteConfig, names: SiteNames, state: SiteState, files: list[Path]) -> None:
    assert cfg.network and cfg.disk
    names.workdir.mkdir(parents=True, exist_ok=True)
    netns.create(names)
    state.record("netns", names.netns)
    shape(names, cfg.network.bandwidth_mbit, state)
    loop = disk.create(names, cfg.disk)
    state.record("loop", loop)
    disk.format_and_mount(names, cfg.disk, loop)
    state.record("filesystem", disk.mounted_type(names.disk_mount))
    state.record("readahead_kb", cfg.disk.readahead_kb)
    blkio.create(names.cgroup, disk.major_minor(loop), cfg.disk.read_iops, cfg.disk.read_mbps)
    state.record("files", disk.put_files(names, files))
    start_server(names, state)
    add_latency(cfg.name, cfg.network.rtt_ms, names, state)
    if access.FUSE in cfg.protocols:
        state.record_pid(roles.FUSE_CLIENT, fuse.mount(names).pid)
    if cfg.cache:
        build_cache(cfg, names, state)


def shape(names: SiteNames, bandwidth_mbit: float, state: SiteState) -> None:
    """tbf on both ends of the link (replacing any there)."""
    shaping.limit(names.veth_storage, bandwidth_mbit, names.netns)
    shaping.limit(names.veth_worker, bandwidth_mbit)
    state.record("bandwidth_mbit", bandwidth_mbit)


def build_cache(cfg: SiteConfig, names: SiteNames, state: SiteState) -> None:
    """The XCache's disk (recorded before it is formatted) and its server."""
    assert cfg.cache
    loop = xcache.create_disk(names, cfg.cache)
    state.record("cache_loop", loop)
    xcache.mount_disk(names, loop)
    start_cache(cfg, names, state)


def start_cache(cfg: SiteConfig, names: SiteNames, state: SiteState) -> None:
    assert cfg.cache
    server = xcache.start(names, cfg.cache)
    state.record_pid(roles.CACHE, server.pid)
    xcache.wait_ready(names, server)


def start_server(names: SiteNames, state: SiteState) -> None:
    server = xrootd.start(names)
    state.record_pid(roles.SERVER, server.pid)
    xrootd.wait_ready(names, server)


def add_latency(site: str, target: float | None, names: SiteNames, state: SiteState) -> None:
    """Tune the delayer to the target RTT and refuse a link that cannot reach it."""
    state.data.update(rtt_ms_target=target)
    if target is None:
        state.data.pop("rtt_ms_measured", None)
        state.record("rtt_ms_bare", delay.measure_rtt_ms(names.storage_ip, XROOTD_PORT))
        return
    proc, bare, hold, achieved = delay.tune(names, target, XROOTD_PORT)
    if proc:
        state.record_pid(roles.DELAYER, proc.pid)
    state.data.update(rtt_ms_bare=bare, delay_hold_ms=hold)
    state.record("rtt_ms_measured", achieved)
    if abs(achieved - target) > RTT_TOLERANCE * target:
        raise InstoreError(
            f"site {site}: measured RTT {achieved:.3f} ms, wanted {target:g} ms "
            f"(bare link {bare:.3f} ms)",
            "lower the machine's load or ask for an RTT above the bare link's",
        )


def retune(site: str, names: SiteNames, state: SiteState, target: float | None) -> None:
    """A new RTT between points: stop the delayer and its queue rule (else traffic would
    stall), measure the bare link again and tune a new delayer to the target."""
    pids = state.pids()
    if roles.DELAYER in pids:
        delay.stop(pids[roles.DELAYER])
        state.data["pids"].pop(roles.DELAYER)
        state.data.pop("delay_hold_ms", None)
    delay.remove_rule(names)
    add_latency(site, target, names, state)

"""Building an emulated site, step by step, each resource recorded in the state file the moment
it exists: its link (shaped, delayed to its RTT), its disk, its server, its FUSE mount and its
XCache. A running site's link is retuned and its servers restarted with the same steps."""

from __future__ import annotations

import logging
import subprocess
import time
from collections.abc import Callable
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
# A server that exits at start is started once more: seen twice in full studies (XCache for wan,
# xrootd for lan-hdd), neither reproduced alone; the first failure's words are logged.
START_ATTEMPTS = 2
# A link whose delayer cannot reach the RTT is tuned again after a pause before the site is
# refused: seen once, 2026-11-28, lan-hdd's 0.5 ms measured at 1.208 ms with the delayer's hold
# at its minimum, right after a 2-thread job ended (a moment's load, not the link).
TUNE_ATTEMPTS = 3
TUNE_PAUSE_S = 2.0
log = logging.getLogger(__name__)


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
    cache = cfg.cache
    _start(lambda: xcache.start(names, cache), lambda p: xcache.wait_ready(names, p),
           roles.CACHE, state)  # fmt: skip


def start_server(names: SiteNames, state: SiteState) -> None:
    _start(lambda: xrootd.start(names), lambda p: xrootd.wait_ready(names, p), roles.SERVER, state)


def _start(
    start: Callable[[], subprocess.Popen[bytes]],
    wait_ready: Callable[[subprocess.Popen[bytes]], None],
    role: str,
    state: SiteState,
) -> None:
    """Start a server and wait until it answers; one that exits at start is started again, up
    to START_ATTEMPTS times (one that hangs is not: the error says so)."""
    for attempt in range(1, START_ATTEMPTS + 1):
        server = start()
        state.record_pid(role, server.pid)
        try:
            wait_ready(server)
            return
        except InstoreError as err:
            if server.poll() is None or attempt == START_ATTEMPTS:
                raise
            log.warning("%s; starting it again (attempt %d of %d)", err, attempt + 1,
                        START_ATTEMPTS)  # fmt: skip


def add_latency(site: str, target: float | None, names: SiteNames, state: SiteState) -> None:
    """Tune the delayer to the target RTT and refuse a link that cannot reach it, after
    ``TUNE_ATTEMPTS`` tunings ``TUNE_PAUSE_S`` apart."""
    state.data.update(rtt_ms_target=target)
    if target is None:
        state.data.pop("rtt_ms_measured", None)
        state.record("rtt_ms_bare", delay.measure_rtt_ms(names.storage_ip, XROOTD_PORT))
        return
    for attempt in range(1, TUNE_ATTEMPTS + 1):
        proc, bare, hold, achieved = delay.tune(names, target, XROOTD_PORT)
        if proc:
            state.record_pid(roles.DELAYER, proc.pid)
        state.data.update(rtt_ms_bare=bare, delay_hold_ms=hold)
        state.record("rtt_ms_measured", achieved)
        if abs(achieved - target) <= RTT_TOLERANCE * target:
            return
        said = (f"site {site}: measured RTT {achieved:.3f} ms, wanted {target:g} ms "
                f"(bare link {bare:.3f} ms)")  # fmt: skip
        if attempt == TUNE_ATTEMPTS:
            raise InstoreError(
                f"{said} in {TUNE_ATTEMPTS} tunings {TUNE_PAUSE_S:g} s apart",
                "lower the machine's load or ask for an RTT above the bare link's",
            )
        log.warning("%s; tuning it again in %g s (attempt %d of %d)", said, TUNE_PAUSE_S,
                    attempt + 1, TUNE_ATTEMPTS)  # fmt: skip
        if proc:  # as a retune: no delayer and no queue rule (it would stall the bare link)
            delay.stop(proc.pid)
            state.data["pids"].pop(roles.DELAYER, None)
        delay.remove_rule(names)
        time.sleep(TUNE_PAUSE_S)


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

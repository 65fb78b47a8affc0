"""A running emulated site as the sweep sees it (``EmulatedLive``): its URLs, caches, counters,
conditions (RTT and rate, set between points), its XCache's state and its healing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from instore import access, pagecache
from instore.errors import InstoreError
from instore.site import roles
from instore.site.config import SiteConfig
from instore.site.emulated import delay, disk, netns, xcache
from instore.site.emulated.build import retune, shape, start_cache, start_server
from instore.site.emulated.names import HTTP_PORT, XROOTD_PORT
from instore.site.emulated.state import SiteState
from instore.site.emulated.system import reap, running, stop_pid
from instore.site.live import DEFAULT_RESULTS, FIO_MAX_MB, FioTarget, LiveSite
from instore.site.usage import Counters, read_counters
from instore.site.usage import qdisc_drops as shaping_drops
from instore.storage import fetch
from instore.urls import HTTP, XROOTD, url_for

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
        if protocol == access.STAGE_IN:
            protocol = self.config.stage_in_source
        path = f"/{n.data_dir.name}/{file}"
        return {
            access.POSIX: str(n.data_dir / file),
            access.FUSE: str(n.fuse_mount / file),
            access.XROOTD: url_for(XROOTD, n.storage_ip, XROOTD_PORT, path),
            access.HTTP: url_for(HTTP, n.storage_ip, HTTP_PORT, path),
            access.XCACHE: url_for(XROOTD, "127.0.0.1", n.xcache_port, path),
        }[protocol]

    def drop_caches(self) -> None:
        """Flush, then drop from the page cache (the servers' cache: the host's) every file
        on the site's disks, its data disk and its XCache's, and those disks' block buffers.
        Only the site's: the worker's software stays cached, as on a node that runs job
        after job. Dropping the whole page cache (as this did before) also dropped the
        payload image's pages, so each forked job read its lazily loaded libraries again:
        0.2 s of kernel time a job in Apptainer (its SIF's squashfs decompressed again),
        disk reads in podman."""
        os.sync()
        mounts = [self.names.disk_mount]
        loops = [self.state.data["loop"]]
        if self.config.cache is not None:
            mounts.append(self.names.cache_mount)
            loops.append(self.state.data.get("cache_loop"))
        for mount in mounts:
            pagecache.drop_tree(mount)
        for loop in loops:
            if loop:
                disk.flush_buffers(loop)

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
            shape(self.names, bandwidth, self.state)
        if rtt != data.get("rtt_ms_target", net.rtt_ms):
            retune(self.config.name, self.names, self.state, rtt)
        return {
            "rtt_ms_measured": data.get("rtt_ms_measured", data.get("rtt_ms_bare")),
            "bandwidth_mbit_applied": data.get("bandwidth_mbit", net.bandwidth_mbit),
        }

    def prepare_cache(self, cache_state: str | None, files: list[str]) -> None:
        """cold: restart the XCache with its disk emptied (memory goes with the process);
        warm: read each file whole through it, so it holds them all."""
        if cache_state == "cold":
            stop_pid(self.state.pids().get(roles.CACHE, 0), xcache.CONFIG)
            xcache.purge(self.names)
            start_cache(self.config, self.names, self.state)
        elif cache_state == "warm":
            for file in files:
                fetch(self.url(access.XCACHE, file), Path(os.devnull), timeout=600)
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
        if not running(pids.get(roles.SERVER, 0), roles.XROOTD_PROGRAM):
            reap(pids.get(roles.SERVER, 0))
            start_server(names, self.state)
            repaired.append("xrootd had exited: restarted it")
        if roles.DELAYER in pids and not running(pids[roles.DELAYER], delay.MODULE):
            reap(pids[roles.DELAYER])
            restarted = delay.start(names, self.state.data["delay_hold_ms"])
            self.state.record_pid(roles.DELAYER, restarted.pid)
            repaired.append("the latency delayer had exited: restarted it")
        if self.config.cache and not running(pids.get(roles.CACHE, 0), xcache.CONFIG):
            reap(pids.get(roles.CACHE, 0))
            start_cache(self.config, names, self.state)
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

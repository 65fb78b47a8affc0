"""The profile's parameters that the site's calibration and configuration give directly, with
no fit: the link and the TCP window a whole-file copy shows, the disk fio measured (or the
emulated disk's limits), an IOPS throttle's burst, the XCache's block size and local rate."""

from __future__ import annotations

from typing import Any

from instore.access import XCACHE
from instore.calibration import read_rate
from instore.predict.profile import Param, XCache

FAST_DISK = {"seq": 2000.0, "random_ms": 0.05}  # where nothing measured the disk: an SSD's
XCACHE_LOCAL_RTT_MS = 0.05
DEFAULT_LINK_MBIT = 1000.0  # a worker to a cache on its own LAN: not measured


def copy_rates(calib: dict[str, Any]) -> dict[str, float]:
    """MB/s of each protocol's whole-file copy (or read of the open file) in the calibration,
    the XCache's apart: what shows whether one flow fills the link."""
    return {p: rate for p, e in (calib.get("protocols") or {}).items()
            if p != XCACHE and isinstance(e, dict) and (rate := read_rate(e))}  # fmt: skip


def link(calib: dict[str, Any], emulation: dict[str, Any], rtt_ms: float) -> tuple[Param, Param]:
    """The link's bandwidth and, where a copy shows it binding, the TCP window."""
    copies = copy_rates(calib)
    best = max(copies.values()) if copies else None
    configured = (emulation.get("network") or {}).get("bandwidth_mbit")
    if configured:
        bw = Param(float(configured), "site configuration: the emulated link")
    elif best:
        which = max(copies, key=lambda p: copies[p])
        entry = calib["protocols"][which]
        how = ("read of the open file" if entry.get("read_mb_per_s") == best
               else "copy")  # fmt: skip
        bw = Param(best * 8.0, f"calibration: whole-file {which} {how} ({best:.1f} MB/s)")
    else:
        bw = Param(DEFAULT_LINK_MBIT, "default: no whole-file copy calibrated and no link "
                   "configured, a 1 Gbit/s LAN's (calibrate the site, or edit the profile)")  # fmt: skip
    window = Param(None, "does not bind: the fastest whole-file copy filled the link")
    if best and bw.value and best * 8.0 < 0.8 * bw.value and rtt_ms > 1.0:
        kb = best * 1e6 * rtt_ms / 1000.0 / 1024.0
        window = Param(kb, f"calibration: the fastest copy ({best:.1f} MB/s) x RTT",
                       {"points": 1, "copy_mb_per_s": best})  # fmt: skip
    elif not best:
        window = Param(None, "unknown: no whole-file copy in the calibration; assumed not binding")
    return bw, window


def disk(calib: dict[str, Any], emulation: dict[str, Any]) -> tuple[Param, Param]:
    fio = calib.get("fio") or {}
    disk = emulation.get("disk") or {}
    if fio.get("seq_read_mb_per_s"):
        seq = Param(float(fio["seq_read_mb_per_s"]), "calibration: fio 1 MiB sequential reads")
    elif disk.get("read_mbps"):
        seq = Param(float(disk["read_mbps"]), "site configuration: the disk's limit")
    else:
        seq = Param(FAST_DISK["seq"], "default: no fio and no limit, an SSD's rate")
    if fio.get("rand_read_iops"):
        iops = float(fio["rand_read_iops"])
        rand = Param(1000.0 / iops, f"calibration: fio 4 KiB random reads ({iops:.0f} IOPS)")
    elif disk.get("read_iops"):
        rand = Param(1000.0 / float(disk["read_iops"]), "site configuration: the disk's IOPS limit")
    else:
        rand = Param(FAST_DISK["random_ms"], "default: no fio and no limit, an SSD's")
    return seq, rand


def parallel(calib: dict[str, Any]) -> Param:
    """How many random reads the disk serves side by side: fio's IOPS with many reads in
    flight over its IOPS one at a time (at least 1: a throttled or spinning disk's)."""
    fio = calib.get("fio") or {}
    one, deep = fio.get("rand_read_iops"), fio.get("rand_read_iops_deep")
    if not one or not deep:
        return Param(1.0, "default: no fio with many reads in flight, one at a time")
    depth = fio.get("rand_read_queue_depth", "many")
    return Param(max(1.0, float(deep) / float(one)),
                 f"calibration: fio 4 KiB random reads, {float(deep):.0f} IOPS at queue depth "
                 f"{depth} over {float(one):.0f} at 1")  # fmt: skip


THROTTLE_SLICE_S = 0.1  # the kernel's blk-throttle slice (throtl_slice: HZ / 10)


def burst(emulation: dict[str, Any]) -> Param:
    iops = (emulation.get("disk") or {}).get("read_iops")
    if not iops:
        return Param(0.0, "default: no IOPS throttle in the site's configuration, no burst")
    return Param(float(iops) * THROTTLE_SLICE_S,
                 f"site configuration: the emulated disk's throttle ({iops} IOPS) lets a "
                 f"{THROTTLE_SLICE_S * 1000:.0f} ms slice's requests through after it idles")  # fmt: skip


def xcache(calib: dict[str, Any], emulation: dict[str, Any]) -> XCache | None:
    cache = emulation.get("cache")
    through = (calib.get("protocols") or {}).get(XCACHE)
    if not cache and not through:
        return None
    block = (cache or {}).get("blocksize_kb") or 1024
    block_p = Param(float(block), "site configuration: the XCache's block size"
                    if cache else "default: XCache's 1 MiB block")  # fmt: skip
    if isinstance(through, dict) and through.get("mb_per_s"):
        rate = Param(float(through["mb_per_s"]), "calibration: a warm whole-file read through it")
    else:
        rate = Param(500.0, "default: no warm read through the cache in the calibration")
    return XCache(block_p, rate, Param(XCACHE_LOCAL_RTT_MS, "default: a cache on the worker's LAN"))

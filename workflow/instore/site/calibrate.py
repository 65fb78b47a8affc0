"""Calibration: the physical limits of a site, measured, so every result can be shown as a
fraction of what the storage could deliver. Stored as ``<results>/<site>/calibration.json``
(``instore.calibration``), in the results directory the caller names."""

from __future__ import annotations

import contextlib
import json
import platform
import socket
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from instore import access
from instore.calibration import write_calibration
from instore.errors import InstoreError
from instore.site.emulated import blkio
from instore.site.emulated.delay import measure_rtt_ms
from instore.site.live import FIO_QUEUE_DEPTH, FioTarget, LiveSite
from instore.storage import StorageError, diagnosis, storage_for
from instore.storage.base import CHUNK
from instore.urls import default_port


def fio(directory: Path, rw: str, block: str, seconds: float, size_mb: int,
        cgroup: Path | None = None,
        fix: str = "check the directory is writable and has space",
        depth: int = 1) -> dict[str, float]:  # fmt: skip
    """One fio job with O_DIRECT (the page cache must not answer), ``depth`` reads in flight
    (1: one at a time, psync; more: libaio); returns MB/s and IOPS."""
    target = directory / "instore-fio.dat"
    engine = ["--ioengine=psync"] if depth <= 1 else ["--ioengine=libaio", f"--iodepth={depth}"]
    cmd = ["fio", "--name=calibrate", f"--filename={target}", f"--size={size_mb}M",
           f"--rw={rw}", f"--bs={block}", "--direct=1", *engine,
           f"--runtime={seconds:g}", "--time_based", "--output-format=json"]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=seconds + 120,
            preexec_fn=(lambda: blkio.join(cgroup)) if cgroup else None,
        )  # fmt: skip
    finally:
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # fio made no file
            target.unlink()
    if proc.returncode != 0:
        raise InstoreError(f"fio on {directory} failed: {proc.stderr.strip()[:300]}", fix)
    read = json.loads(proc.stdout)["jobs"][0]["read"]
    return {"mb_per_s": read["bw_bytes"] / 1e6, "iops": read["iops"]}


def disk_limits(target: FioTarget, seconds: float) -> dict:
    """Sequential 1 MiB and random 4 KiB direct reads, the random ones one at a time and
    FIO_QUEUE_DEPTH at once (how many requests the disk serves side by side: an SSD several, a
    spinning or throttled disk one)."""

    def run(rw: str, block: str, depth: int = 1) -> dict[str, float]:
        return fio(target.directory, rw, block, seconds, target.size_mb, target.cgroup,
                   target.fix, depth)  # fmt: skip

    seq, rand, deep = (
        run("read", "1M"),
        run("randread", "4k"),
        run("randread", "4k", FIO_QUEUE_DEPTH),
    )
    return {
        "directory": str(target.directory),
        "seconds": seconds,
        "seq_read_mb_per_s": seq["mb_per_s"],
        "rand_read_iops": rand["iops"],
        "rand_read_mb_per_s": rand["mb_per_s"],
        "rand_read_queue_depth": FIO_QUEUE_DEPTH,
        "rand_read_iops_deep": deep["iops"],
    }


def whole_file_seconds(url: str) -> float:
    """A whole-file read as a copy tool makes it (xrdcp for XRootD, a GET for HTTP), with the
    grid credentials jobs get; one line, naming the credential's fix, if it is refused."""
    store = storage_for(url)
    start = time.perf_counter()
    try:
        store.drain(url)
    except StorageError as err:
        raise diagnosis.diagnosed(err) from err
    return time.perf_counter() - start


def open_file_read(url: str, rtt_ms: float | None) -> dict[str, float]:
    """The rate the bytes of an open file flow at: the whole file read through the protocol's
    own reader in ``CHUNK`` requests, one after another, after the open, less one round trip
    per request. A copy tool's rate also holds its start, connection, authentication and open
    (0.4 s of a 7.8 MB copy over GSI on loopback, 2026-11-28: 19 MB/s), which no read of a
    job's pays again; this is what the model's link and the reports' limits take. Where the
    round trips leave under a tenth of the time, no rate is given (a larger
    ``calibration.file`` would show one)."""
    try:
        reader = storage_for(url).open(url, 60.0)
        try:
            reader.read_ranges([(0, min(reader.size, 1))])  # a first request, as a job's open
            size, requests = reader.size, 0
            start = time.perf_counter()
            for offset in range(0, size, CHUNK):
                reader.read_ranges([(offset, min(offset + CHUNK, size))])
                requests += 1
            seconds = time.perf_counter() - start
        finally:
            reader.close()
    except StorageError as err:
        raise diagnosis.diagnosed(err) from err
    except OSError as err:
        raise diagnosis.diagnosed(
            StorageError(url, f"reading the open file failed ({err})")
        ) from err
    flowing = seconds - requests * (rtt_ms or 0.0) / 1000.0
    entry = {"read_bytes": size, "read_requests": requests, "read_s": seconds}
    if flowing >= 0.1 * seconds:
        entry["read_mb_per_s"] = size / flowing / 1e6
    return entry


def whole_file(
    live: LiveSite, file: str, size: int, rtt_ms: float | None = None
) -> dict[str, dict[str, float]]:
    """Whole-file copies through root:// and HTTP: cold (caches dropped, where the site can)
    and warm (second read: the network and server path alone); then the open file's read
    rate (``open_file_read``)."""
    out = {}
    for proto in access.DIRECT:
        if proto not in live.protocols:
            continue
        url = live.url(proto, file)
        entry: dict[str, float] = {"bytes": size}
        if live.can_read_cold:
            live.drop_caches()
            entry["cold_mb_per_s"] = size / whole_file_seconds(url) / 1e6
        entry["mb_per_s"] = size / whole_file_seconds(url) / 1e6
        entry.update(open_file_read(url, rtt_ms))
        out[proto] = entry
    return out


def _rtt(live: LiveSite) -> float | None:
    for proto in access.DIRECT:
        if proto in live.protocols:
            url = live.url(proto, "x")
            parts = urlsplit(url)
            return measure_rtt_ms(parts.hostname or "", parts.port or default_port(url) or 80)
    return None


def through_cache(live: LiveSite, file: str, size: int) -> dict[str, float]:
    """A whole file through the site's XCache: cold (emptied first, where it is ours: the
    origin across the link) and warm (read again: the cache's own disk and server)."""
    url = live.url(access.XCACHE, file)
    entry: dict[str, float] = {"bytes": size}
    if live.cache_fio_target() is not None:
        live.prepare_cache("cold", [file])
        live.drop_caches()
        entry["cold_mb_per_s"] = size / whole_file_seconds(url) / 1e6
    else:
        whole_file_seconds(url)  # a real site's cache: make sure it holds the file
    live.drop_caches()
    entry["mb_per_s"] = size / whole_file_seconds(url) / 1e6
    return entry


def cache_limits(live: LiveSite, record: dict[str, Any], file: str, size: int) -> None:
    """The site cache's own limits, where it has one: a warm read through it (its protocol's
    throughput, as for any protocol) and fio on its disk."""
    if access.XCACHE not in live.protocols:
        return
    if size:
        record["protocols"][access.XCACHE] = through_cache(live, file, size)
    target = live.cache_fio_target()
    if target is not None:
        record["xcache_fio"] = disk_limits(target, live.config.calibration.fio_seconds)


def calibrate(live: LiveSite, results: Path) -> dict[str, Any]:
    """Measure disk, whole-file protocol throughput and RTT; write the JSON under ``results``
    and return it."""
    cfg = live.config
    file, size = live.calibration_file()
    record: dict[str, Any] = {
        "site": cfg.name,
        "kind": cfg.kind,
        "profile": cfg.profile,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "rtt_ms": _rtt(live),
    }
    record["protocols"] = whole_file(live, file, size, record["rtt_ms"]) if size else {}
    target = live.fio_target()
    if target is not None:
        record["fio"] = disk_limits(target, cfg.calibration.fio_seconds)
    cache_limits(live, record, file, size)
    record["conditions"] = live.describe()
    path = write_calibration(results, cfg.name, record)
    record["path"] = str(path)
    return record

"""Calibration: the physical limits of a site, measured, so every result can be shown as a
fraction of what the storage could deliver. Stored as ``results/<site>/calibration.json``."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from instore.errors import InstoreError
from instore.site import blkio
from instore.site.delay import measure_rtt_ms
from instore.site.emulated import EmulatedLive
from instore.site.live import LiveSite, calibration_path
from instore.site.system import run

CALIBRATION_FILE = "instore-calibration.bin"
FIO_MAX_MB = 256


def fio(directory: Path, rw: str, block: str, seconds: float, size_mb: int,
        cgroup: Path | None = None) -> dict[str, float]:  # fmt: skip
    """One fio job with O_DIRECT (the page cache must not answer); returns MB/s and IOPS."""
    target = directory / "instore-fio.dat"
    cmd = ["fio", "--name=calibrate", f"--filename={target}", f"--size={size_mb}M",
           f"--rw={rw}", f"--bs={block}", "--direct=1", "--ioengine=psync",
           f"--runtime={seconds:g}", "--time_based", "--output-format=json"]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, timeout=seconds + 120,
            preexec_fn=(lambda: blkio.join(cgroup)) if cgroup else None,
        )  # fmt: skip
    finally:
        target.unlink(missing_ok=True)
    if proc.returncode != 0:
        raise InstoreError(f"fio on {directory} failed: {proc.stderr.strip()[:300]}",
                           "check the directory is writable and has space")  # fmt: skip
    read = json.loads(proc.stdout)["jobs"][0]["read"]
    return {"mb_per_s": read["bw_bytes"] / 1e6, "iops": read["iops"]}


def disk_limits(directory: Path, seconds: float, size_mb: int, cgroup: Path | None) -> dict:
    """Sequential 1 MiB and random 4 KiB direct reads."""
    seq = fio(directory, "read", "1M", seconds, size_mb, cgroup)
    rand = fio(directory, "randread", "4k", seconds, size_mb, cgroup)
    return {
        "directory": str(directory),
        "seconds": seconds,
        "seq_read_mb_per_s": seq["mb_per_s"],
        "rand_read_iops": rand["iops"],
        "rand_read_mb_per_s": rand["mb_per_s"],
    }


def xrdcp_seconds(url: str) -> float:
    start = time.perf_counter()
    run(["xrdcp", "--force", "--silent", url, "/dev/null"], timeout=600)
    return time.perf_counter() - start


def http_seconds(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        while response.read(1 << 20):
            pass
    return time.perf_counter() - start


def whole_file(live: LiveSite, file: str, size: int) -> dict[str, dict[str, float]]:
    """Whole-file copies through root:// and HTTP: cold (caches dropped, emulated sites)
    and warm (second read: the network and server path alone)."""
    readers = {"xrootd": xrdcp_seconds, "http": http_seconds}
    out = {}
    for proto, reader in readers.items():
        if proto not in live.protocols:
            continue
        url = live.url(proto, file)
        entry: dict[str, float] = {"bytes": size}
        if isinstance(live, EmulatedLive):
            live.drop_caches()
            entry["cold_mb_per_s"] = size / reader(url) / 1e6
        entry["mb_per_s"] = size / reader(url) / 1e6
        out[proto] = entry
    return out


def _rtt(live: LiveSite) -> float | None:
    for proto in ("xrootd", "http"):
        if proto in live.protocols:
            parts = urlsplit(live.url(proto, "x"))
            default = 1094 if parts.scheme.startswith(("root", "xroot")) else 80
            return measure_rtt_ms(parts.hostname or "", parts.port or default)
    return None


def _prepare_file(live: LiveSite) -> tuple[str, int]:
    """The file read whole: written on an emulated disk, or named by a real site's file."""
    cfg = live.config
    if isinstance(live, EmulatedLive):
        path = live.names.data_dir / CALIBRATION_FILE
        if not path.exists() or path.stat().st_size != cfg.calibration.file_mb << 20:
            with path.open("wb") as out:
                for _ in range(cfg.calibration.file_mb):
                    out.write(os.urandom(1 << 20))
            path.chmod(0o644)
            os.sync()
        return CALIBRATION_FILE, path.stat().st_size
    if not cfg.calibration.file:
        raise InstoreError(f"{cfg.path}: field calibration.file is missing",
                           "name a file that exists behind every endpoint")  # fmt: skip
    posix = cfg.endpoints.get("posix")
    size = Path(posix.format(file=cfg.calibration.file)).stat().st_size if posix else 0
    return cfg.calibration.file, size


def calibrate(live: LiveSite, results: Path | None = None) -> dict[str, Any]:
    """Measure disk, whole-file protocol throughput and RTT; write and return the JSON."""
    cfg = live.config
    file, size = _prepare_file(live)
    record: dict[str, Any] = {
        "site": cfg.name,
        "kind": cfg.kind,
        "profile": cfg.profile,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "rtt_ms": _rtt(live),
        "protocols": whole_file(live, file, size) if size else {},
    }
    if isinstance(live, EmulatedLive):
        disk = live.config.disk
        size_mb = min(FIO_MAX_MB, (disk.size_mb if disk else 1024) // 4)
        record["fio"] = disk_limits(live.names.data_dir, cfg.calibration.fio_seconds, size_mb,
                                    live.names.cgroup)  # fmt: skip
    elif cfg.calibration.posix_dir:
        record["fio"] = disk_limits(Path(cfg.calibration.posix_dir),
                                    cfg.calibration.fio_seconds, FIO_MAX_MB, None)  # fmt: skip
    record["conditions"] = {k: v for k, v in live.conditions().items() if k != "calibration"}
    path = (
        calibration_path(cfg.name) if results is None else results / cfg.name / "calibration.json"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    record["path"] = str(path)
    return record

"""The blkio throttle (cgroup v1): IOPS and bandwidth limits of the emulated disk, shared by
the server and by every job that reads the disk directly (posix, stage-in with cp)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from instore.errors import InstoreError
from instore.site.emulated.names import BLKIO_ROOT, PREFIX


def create(path: Path, majmin: str, read_iops: int | None, read_mbps: float | None) -> None:
    """Make the cgroup and set its read limits on the loop device (none = unthrottled)."""
    if not BLKIO_ROOT.is_dir():
        raise InstoreError(
            f"{BLKIO_ROOT} is missing: the cgroup-v1 blkio controller is not mounted",
            "mount it (mount -t cgroup -o blkio none /sys/fs/cgroup/blkio) or drop disk limits",
        )
    path.mkdir(exist_ok=True)
    if read_iops:
        (path / "blkio.throttle.read_iops_device").write_text(f"{majmin} {read_iops}\n")
    if read_mbps:
        bps = int(read_mbps * 1e6)
        (path / "blkio.throttle.read_bps_device").write_text(f"{majmin} {bps}\n")


def limits(path: Path) -> dict[str, str]:
    """The throttle settings as the kernel reports them."""
    return {
        name: (path / f"blkio.throttle.{name}").read_text().strip()
        for name in ("read_iops_device", "read_bps_device")
    }


def join(path: Path, pid: int | None = None) -> None:
    """Move a process (default: this one) into the cgroup."""
    (path / "cgroup.procs").write_text(f"{pid or os.getpid()}\n")


def members(path: Path) -> list[int]:
    try:
        return [int(p) for p in (path / "cgroup.procs").read_text().split()]
    except OSError:
        return []


def remove(path: Path) -> None:
    """Move any remaining processes back to the root cgroup, then delete the cgroup."""
    if not path.is_dir():
        return
    for pid in members(path):
        with contextlib.suppress(OSError):
            (BLKIO_ROOT / "cgroup.procs").write_text(f"{pid}\n")
    path.rmdir()


def ours() -> list[Path]:
    return sorted(BLKIO_ROOT.glob(f"{PREFIX}*")) if BLKIO_ROOT.is_dir() else []

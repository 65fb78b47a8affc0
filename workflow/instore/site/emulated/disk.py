"""The emulated disk: a sparse file on a direct-I/O loop device, with a real file system
and the block-device readahead a site would tune."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from instore.errors import InstoreError
from instore.site.config import Disk
from instore.site.emulated.names import PREFIX, WORK_ROOT, SiteNames
from instore.site.emulated.system import run

BLKFLSBUF = 0x1261  # linux/fs.h: _IO(0x12, 97), flush a block device's buffer cache

MKFS: dict[str, list[str]] = {
    # Initialise inode tables and journal now: lazy init would write in the background
    # while we measure.
    "ext4": ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
    "xfs": ["mkfs.xfs", "-q", "-f"],
}


def create(names: SiteNames, disk: Disk) -> str:
    """Make, format and mount the disk; return the loop device (e.g. /dev/loop3)."""
    names.workdir.mkdir(parents=True, exist_ok=True)
    with names.disk_image.open("wb") as img:
        img.truncate(disk.size_mb * 1024 * 1024)
    # Direct I/O on the backing file: the host page cache must not hide the emulated disk.
    loop = run(["losetup", "--find", "--show", "--direct-io=on", str(names.disk_image)])
    dev = loop.stdout.strip()
    _allow_large_requests(dev)
    return dev


def _allow_large_requests(dev: str, kb: int = 1024) -> None:
    """Let one request carry up to 1 MiB: the IOPS throttle counts requests, so with the
    default 128-512 KiB cap a large sequential read would hit the IOPS limit long before
    the bandwidth limit, unlike a spindle."""
    queue = Path(f"/sys/block/{Path(dev).name}/queue")
    hw_max = int((queue / "max_hw_sectors_kb").read_text())
    (queue / "max_sectors_kb").write_text(f"{min(kb, hw_max)}\n")


MIN_SIZE_MB = {"xfs": 300}  # mkfs.xfs refuses smaller file systems


def format_and_mount(names: SiteNames, disk: Disk, dev: str) -> None:
    """File system, mount point readable by the unprivileged xrootd user, readahead."""
    least = MIN_SIZE_MB.get(disk.filesystem, 0)
    if disk.size_mb < least:
        raise InstoreError(
            f"site {names.site}: an {disk.filesystem} disk needs at least {least} MB, its "
            f"disk.size_mb is {disk.size_mb}",
            f"raise disk.size_mb in config/sites/{names.site}.yaml to {least} or more",
        )
    run([*MKFS[disk.filesystem], dev])
    names.disk_mount.mkdir(parents=True, exist_ok=True)
    run(["mount", "-o", "noatime", dev, str(names.disk_mount)])
    names.disk_mount.chmod(0o755)
    set_readahead(dev, disk.readahead_kb)


def _mounts() -> list[tuple[str, str]]:
    """(mount point, file system type) of every mount, as the kernel lists them."""
    return [(f[1], f[2]) for f in map(str.split, Path("/proc/mounts").read_text().splitlines())]


def mounted_type(mountpoint: Path) -> str | None:
    """The file system the kernel has mounted there (what the records say was measured)."""
    return next((kind for point, kind in _mounts() if point == str(mountpoint)), None)


def set_readahead(dev: str, kb: int) -> None:
    """Block-device readahead, in KiB (blockdev counts 512-byte sectors)."""
    run(["blockdev", "--setra", str(kb * 2), dev])


def set_scheduler(dev: str, name: str) -> None:
    """The device's I/O scheduler (the loop devices here offer none, mq-deadline, kyber and
    bfq); a name the kernel does not offer is one line naming those it does."""
    path = Path(f"/sys/block/{Path(dev).name}/queue/scheduler")
    offered = path.read_text().replace("[", "").replace("]", "").split()
    if name not in offered:
        raise InstoreError(f"{dev} offers no I/O scheduler {name!r}",
                           f"choose one of {', '.join(offered)}")  # fmt: skip
    path.write_text(name)


def scheduler(dev: str) -> str:
    text = Path(f"/sys/block/{Path(dev).name}/queue/scheduler").read_text()
    return text[text.index("[") + 1 : text.index("]")]


def readahead_kb(dev: str) -> int:
    return int(run(["blockdev", "--getra", dev]).stdout.strip()) // 2


def _block_stat(dev: str) -> list[int]:
    """The device's I/O counters since it was attached (Documentation/block/stat.rst)."""
    return [int(f) for f in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]


def bytes_read(dev: str) -> int:
    """Bytes read from the device: what the disk served, including block readahead that no
    client asked for (the counter is in 512-byte sectors)."""
    return _block_stat(dev)[2] * 512


def reads_done(dev: str) -> int:
    """Read requests the device has completed, after the block layer merged neighbours: what
    the blkio IOPS limit counts."""
    return _block_stat(dev)[0]


def flush_buffers(dev: str) -> None:
    """Write out and drop the block device's own buffer cache (BLKFLSBUF): the file system's
    metadata blocks read through it."""
    fd = os.open(dev, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, BLKFLSBUF)
    finally:
        os.close(fd)


def major_minor(dev: str) -> str:
    """The "MAJ:MIN" the blkio throttle files take."""
    rdev = os.stat(dev).st_rdev
    return f"{os.major(rdev)}:{os.minor(rdev)}"


def put_files(names: SiteNames, files: Iterable[Path]) -> list[str]:
    """Copy files onto the disk and flush them, so reads later come from the device."""
    files = list(files)
    check_room(names, files)
    placed = []
    names.data_dir.mkdir(mode=0o755, exist_ok=True)
    for src in files:
        dest = names.data_dir / Path(src).name
        shutil.copyfile(src, dest)
        dest.chmod(0o644)
        placed.append(dest.name)
    os.sync()
    return placed


def check_room(names: SiteNames, files: Sequence[Path]) -> None:
    """Refuse before copying when the files cannot fit: a full disk half-way through a copy
    would say less, later."""
    need = sum(Path(f).stat().st_size for f in files)
    fs = os.statvfs(names.disk_mount)
    free = fs.f_bavail * fs.f_frsize
    if need > free:
        site = names.site
        raise InstoreError(
            f"site {site}: the files to measure need {need / 2**20:.0f} MiB, its emulated disk "
            f"has {free / 2**20:.0f} MiB free",
            f"raise disk.size_mb in config/sites/{site}.yaml to at least "
            f"{(need * 1.1 + (fs.f_blocks * fs.f_frsize - free)) / 2**20:.0f}",
        )


def unmount(mountpoint: str) -> None:
    """Unmount; fall back to a lazy unmount if something still holds it open."""
    if run(["umount", mountpoint], check=False).returncode != 0:
        run(["umount", "-l", mountpoint], check=False)


def detach(dev: str) -> None:
    run(["losetup", "-d", dev], check=False)


def our_mounts() -> list[str]:
    """Mount points under our work directories (disk and FUSE), deepest first."""
    root = f"{WORK_ROOT}/{PREFIX}"
    found = [point for point, _ in _mounts() if point.startswith(root)]
    return sorted(found, key=len, reverse=True)


def our_loops() -> list[str]:
    """Loop devices backed by a file in one of our work directories."""
    out = run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"]).stdout
    root = f"{WORK_ROOT}/{PREFIX}"
    return [line.split()[0] for line in out.splitlines() if root in line]


def remove_workdirs(names: SiteNames | None = None) -> None:
    """Delete the work directory of one site, or all of ours; mounts must be gone first."""
    dirs = [names.workdir] if names else sorted(WORK_ROOT.glob(f"{PREFIX}*"))
    for path in dirs:
        if path.is_dir() and not any(m.startswith(str(path)) for m in our_mounts()):
            shutil.rmtree(path, ignore_errors=True)

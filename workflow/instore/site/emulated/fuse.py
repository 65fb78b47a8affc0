"""The FUSE protocol: an xrootdfs mount of the site's export on the worker side."""

from __future__ import annotations

import subprocess
from pathlib import Path

from instore.errors import InstoreError
from instore.site.emulated.names import XROOTD_PORT, SiteNames
from instore.site.emulated.system import cmdline, run, stop_pid, wait_for
from instore.site.roles import XROOTDFS_PROGRAM
from instore.urls import XROOTD, url_for


def _mounted(path: Path) -> bool:
    return any(
        line.split()[1] == str(path) for line in Path("/proc/mounts").read_text().splitlines()
    )


def mount(names: SiteNames) -> subprocess.Popen[bytes]:
    """Mount root://storage//; xrootdfs stays in the foreground so we own its PID."""
    names.fuse_mount.mkdir(parents=True, exist_ok=True)
    rdr = "rdr=" + url_for(XROOTD, names.storage_ip, XROOTD_PORT, f"/{names.data_dir.name}/")
    with (names.workdir / "xrootdfs.log").open("ab") as log:
        proc = subprocess.Popen(
            [XROOTDFS_PROGRAM, str(names.fuse_mount), "-f", "-o", rdr],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip

    def ready() -> bool:
        return proc.poll() is not None or _mounted(names.fuse_mount)

    wait_for(ready, 20, f"xrootdfs mount at {names.fuse_mount}", "see xrootdfs.log there")
    if proc.poll() is not None:
        raise InstoreError(
            f"xrootdfs for {names.site} exited (status {proc.returncode})",
            f"see {names.workdir / 'xrootdfs.log'}; is /dev/fuse present?",
        )
    return proc


def unmount(names: SiteNames, pid: int | None) -> None:
    """Unmount (the daemon then exits), and stop the daemon by PID if it lingers."""
    unmounted = run(["fusermount3", "-u", str(names.fuse_mount)], check=False).returncode == 0
    if _mounted(names.fuse_mount) and not unmounted:
        run(["umount", "-l", str(names.fuse_mount)], check=False)
    for candidate in [pid, *_daemons_for(names.fuse_mount)]:
        if candidate:
            stop_pid(candidate, XROOTDFS_PROGRAM)


def _daemons_for(mountpoint: Path) -> list[int]:
    """xrootdfs processes serving our mount point (found after a crash lost their PIDs)."""
    found = []
    for proc_dir in Path("/proc").iterdir():
        if proc_dir.name.isdigit():
            line = cmdline(int(proc_dir.name))
            if line.startswith(XROOTDFS_PROGRAM) and str(mountpoint) in line:
                found.append(int(proc_dir.name))
    return found

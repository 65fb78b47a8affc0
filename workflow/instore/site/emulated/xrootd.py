"""The storage server: Debian's xrootd serving root:// and HTTP (XrdHttp) from the emulated
disk, inside the storage namespace, as the unprivileged ``xrootd`` user."""

from __future__ import annotations

import ctypes
import os
import pwd
import socket
import subprocess

from instore.site import roles
from instore.site.emulated import blkio
from instore.site.emulated.names import HTTP_PORT, XROOTD_PORT, SiteNames
from instore.site.emulated.system import (
    STDERR,
    exited_at_start,
    in_netns,
    instance_log,
    stop_pid,
    wait_for,
)

CLONE_NEWUTS = 0x04000000


def config_text(names: SiteNames) -> str:
    """A read-only export of the disk; admin and pid paths in our work directory."""
    adm = names.xrootd_dir
    return "\n".join([
        f"all.export /{names.data_dir.name} r/o",
        f"oss.localroot {names.disk_mount}",
        f"xrd.port {XROOTD_PORT}",
        f"xrd.protocol XrdHttp:{HTTP_PORT} libXrdHttp.so",
        f"all.adminpath {adm / 'admin'}",
        f"all.pidpath {adm / 'run'}",
        "",
    ])  # fmt: skip


def _prepare_dirs(names: SiteNames) -> None:
    """xrootd drops to its own user before it writes its admin files and log."""
    user = pwd.getpwnam(roles.XROOTD_USER)
    for path in (names.xrootd_dir, names.xrootd_dir / "admin", names.xrootd_dir / "run"):
        path.mkdir(parents=True, exist_ok=True)
        # chown, not chmod 777: only the server user may write there.
        os.chown(path, user.pw_uid, user.pw_gid)


def _child_setup(names: SiteNames) -> None:
    """Runs in the child before exec: join the blkio cgroup (every disk read the server makes
    is throttled like the emulated device), and take a private hostname equal to the storage
    address. xrootd 5.5 names itself after the host; with the host's name it would answer
    locate requests (xrootdfs makes them) with 127.0.0.1, which is the worker's loopback."""
    blkio.join(names.cgroup)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWUTS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUTS)")
    socket.sethostname(names.storage_ip)


def start(names: SiteNames) -> subprocess.Popen[bytes]:
    """Start xrootd in the storage namespace, exporting the disk's data directory."""
    _prepare_dirs(names)
    names.data_dir.mkdir(mode=0o755, exist_ok=True)
    cfg = names.xrootd_dir / "xrootd.cfg"
    cfg.write_text(config_text(names))
    log = names.xrootd_dir / "xrootd.log"
    cmd = [roles.XROOTD_PROGRAM, "-R", roles.XROOTD_USER, "-c", str(cfg), "-l", str(log),
           "-n", names.netns]  # fmt: skip
    with open(names.xrootd_dir / STDERR, "wb") as stderr:  # what it says before its log opens
        return subprocess.Popen(
            in_netns(names.netns, cmd),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            cwd=names.xrootd_dir,  # its home directory (<cwd>/<-n name>) is made there
            preexec_fn=lambda: _child_setup(names),
        )


def _listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def wait_ready(names: SiteNames, proc: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """Both ports answer from the worker side (which also proves they are reachable)."""

    def ready() -> bool:
        if proc.poll() is not None:
            return True  # reported below
        return all(_listening(names.storage_ip, p) for p in (XROOTD_PORT, HTTP_PORT))

    log = instance_log(names.xrootd_dir / "xrootd.log", names.netns)
    wait_for(ready, timeout_s, f"xrootd for {names.site} listening", f"see {log}")
    if proc.poll() is not None:
        raise exited_at_start(
            f"xrootd for {names.site}", log, proc.returncode, names.xrootd_dir / STDERR
        )


def stop(pid: int) -> None:
    stop_pid(pid, roles.XROOTD_PROGRAM)

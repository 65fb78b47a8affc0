"""The storage server: Debian's xrootd serving root:// and HTTP (XrdHttp) from the emulated
disk, inside the storage namespace, as the unprivileged ``xrootd`` user."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess

from instore.errors import InstoreError
from instore.site import blkio
from instore.site.names import HTTP_PORT, XROOTD_PORT, SiteNames
from instore.site.system import in_netns, stop_pid, wait_for

USER = "xrootd"


def config_text(names: SiteNames) -> str:
    """A read-only export of the disk; admin and pid paths in our work directory."""
    adm = names.xrootd_dir
    return "\n".join([
        "all.export / r/o",
        f"oss.localroot {names.disk_mount}",
        f"xrd.port {XROOTD_PORT}",
        f"xrd.protocol XrdHttp:{HTTP_PORT} libXrdHttp.so",
        f"all.adminpath {adm / 'admin'}",
        f"all.pidpath {adm / 'run'}",
        "",
    ])  # fmt: skip


def _prepare_dirs(names: SiteNames) -> None:
    """xrootd drops to its own user before it writes its admin files and log."""
    user = pwd.getpwnam(USER)
    for path in (names.xrootd_dir, names.xrootd_dir / "admin", names.xrootd_dir / "run"):
        path.mkdir(parents=True, exist_ok=True)
        # chown, not chmod 777: only the server user may write there.
        os.chown(path, user.pw_uid, user.pw_gid)


def start(names: SiteNames) -> subprocess.Popen[bytes]:
    """Start xrootd in the namespace; it joins the site's blkio cgroup before exec, so every
    disk read it makes is throttled like the emulated device."""
    _prepare_dirs(names)
    cfg = names.xrootd_dir / "xrootd.cfg"
    cfg.write_text(config_text(names))
    cmd = ["xrootd", "-R", USER, "-c", str(cfg), "-l", str(names.xrootd_dir / "xrootd.log"),
           "-n", names.netns]  # fmt: skip
    return subprocess.Popen(
        in_netns(names.netns, cmd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=lambda: blkio.join(names.cgroup),
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

    log = names.xrootd_dir / "xrootd.log"
    wait_for(ready, timeout_s, f"xrootd for {names.site} listening", f"see {log}")
    if proc.poll() is not None:
        raise InstoreError(f"xrootd for {names.site} exited at start", f"see {log}")


def stop(pid: int) -> None:
    stop_pid(pid, "xrootd")

"""The site cache: a real XRootD proxy file cache (XCache: libXrdPss + libXrdPfc) on the worker
side of the link, fetching from the site's storage across the shaped and delayed veth.

It runs in the host namespace (where the jobs are), as the unprivileged ``xrootd`` user, on a
port derived from the site's name, and accepts connections from this host only. Its files live
on a loop-device disk of its own, so what it serves from disk is a disk read, not page cache.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
from pathlib import Path

from instore.site import roles
from instore.site.config import Cache
from instore.site.emulated.names import PREFIX, WORK_ROOT, XROOTD_PORT, SiteNames
from instore.site.emulated.system import (
    STDERR,
    exited_at_start,
    instance_log,
    run,
    stop_pid,
    wait_for,
)

CONFIG = "xcache.cfg"


def store_dir(names: SiteNames) -> Path:
    """Where the cache keeps its files (``oss.localroot``), on the cache disk."""
    return names.cache_mount / "store"


def config_text(names: SiteNames, cache: Cache) -> str:
    """Proxy to the storage server, cache on our disk; only this host may connect."""
    adm = names.xcache_dir
    return "\n".join([
        "all.export /",
        "xrd.allow host localhost",
        f"xrd.port {names.xcache_port}",
        "ofs.osslib libXrdPss.so",
        "pss.cachelib libXrdPfc.so",
        f"pss.origin {names.storage_ip}:{XROOTD_PORT}",
        f"oss.localroot {store_dir(names)}",
        f"pfc.blocksize {cache.blocksize_kb}k",
        f"pfc.prefetch {cache.prefetch}",
        f"pfc.ram {cache.ram_mb}m",
        f"all.adminpath {adm / 'admin'}",
        f"all.pidpath {adm / 'run'}",
        "",
    ])  # fmt: skip


def create_disk(names: SiteNames, cache: Cache) -> str:
    """Make, format and mount the cache's own disk; return its loop device."""
    names.workdir.mkdir(parents=True, exist_ok=True)
    with names.cache_image.open("wb") as img:
        img.truncate(cache.disk_mb << 20)
    dev = run(["losetup", "--find", "--show", "--direct-io=on", str(names.cache_image)])
    return dev.stdout.strip()


def mount_disk(names: SiteNames, dev: str) -> None:
    """ext4 on the loop device, mounted under the site's work directory (so teardown by name
    finds it), with the store directory owned by the server's user."""
    run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev])
    names.cache_mount.mkdir(parents=True, exist_ok=True)
    run(["mount", "-o", "noatime", dev, str(names.cache_mount)])
    _own(store_dir(names))


def _own(path: Path) -> None:
    user = pwd.getpwnam(roles.XROOTD_USER)
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, user.pw_uid, user.pw_gid)


def start(names: SiteNames, cache: Cache) -> subprocess.Popen[bytes]:
    """Start the cache server on the host (worker) side."""
    for path in (names.xcache_dir, names.xcache_dir / "admin", names.xcache_dir / "run"):
        _own(path)
    cfg = names.xcache_dir / CONFIG
    cfg.write_text(config_text(names, cache))
    log = names.xcache_dir / "xcache.log"
    cmd = [roles.XROOTD_PROGRAM, "-R", roles.XROOTD_USER, "-c", str(cfg), "-l", str(log),
           "-n", f"{names.netns}-xcache"]  # fmt: skip
    with open(names.xcache_dir / STDERR, "wb") as stderr:  # what it says before its log opens
        return subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            cwd=names.xcache_dir,  # its home directory (<cwd>/<-n name>) is made there
        )


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def wait_ready(names: SiteNames, proc: subprocess.Popen[bytes], timeout_s: float = 20) -> None:
    """The cache port answers, or the server's start failed (e.g. pfc.ram under 1g)."""
    log = instance_log(names.xcache_dir / "xcache.log", f"{names.netns}-xcache")
    wait_for(lambda: proc.poll() is not None or _listening(names.xcache_port), timeout_s,
             f"XCache for {names.site} listening", f"see {log}")  # fmt: skip
    if proc.poll() is not None:
        raise exited_at_start(
            f"XCache for {names.site}", log, proc.returncode, names.xcache_dir / STDERR
        )


def purge(names: SiteNames) -> None:
    """Delete every cached file and its .cinfo (the server must be stopped: it holds them)."""
    store = store_dir(names)
    for entry in store.iterdir() if store.is_dir() else []:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def pids(names: SiteNames | None = None) -> list[int]:
    """Cache servers of one site (or of any site of ours), found by their config path: the
    teardown's fallback when the state file is lost."""
    marker = str(names.xcache_dir / CONFIG) if names else f"{WORK_ROOT}/{PREFIX}"
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in argv]
        if (
            text
            and Path(text[0]).name == roles.XROOTD_PROGRAM
            and any(a.startswith(marker) and a.endswith(CONFIG) for a in text)
        ):
            found.append(int(proc.name))
    return found


def stop(pid: int) -> None:
    stop_pid(pid, CONFIG)


def cached_bytes(names: SiteNames) -> int:
    """Bytes of file data the cache holds on its disk (the .cinfo files not counted)."""
    store = store_dir(names)
    if not store.is_dir():
        return 0
    files = (p for p in store.rglob("*") if p.is_file() and p.suffix != ".cinfo")
    return sum(p.stat().st_blocks * 512 for p in files)

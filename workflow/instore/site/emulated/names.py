"""The naming convention: every namespace, link, cgroup, mount and directory an emulated site
creates is derived from its name and starts with ``instore-``, so leftovers can be found."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from instore import access
from instore.site import roles

PREFIX = "instore-"
STATE_DIR = Path("/run/instore/sites")
WORK_ROOT = Path("/var/tmp")
BLKIO_ROOT = Path("/sys/fs/cgroup/blkio")
SUBNET = "10.213"
XROOTD_PORT = 1094
HTTP_PORT = 8000
# The XCache listens on the worker side (the host), so each site's takes its own port.
XCACHE_PORT_BASE = 21000


@dataclass(frozen=True)
class SiteNames:
    """All names for one emulated site."""

    site: str

    @property
    def tag(self) -> str:
        # Interface names are limited to 15 characters, so links carry a short hash.
        return hashlib.sha1(self.site.encode()).hexdigest()[:6]

    @property
    def netns(self) -> str:
        return f"{PREFIX}{self.site}"

    @property
    def veth_worker(self) -> str:
        return f"{PREFIX}{self.tag}w"

    @property
    def veth_storage(self) -> str:
        return f"{PREFIX}{self.tag}s"

    @property
    def _octet(self) -> int:
        return int(self.tag, 16) % 250 + 1

    @property
    def worker_ip(self) -> str:
        return f"{SUBNET}.{self._octet}.1"

    @property
    def storage_ip(self) -> str:
        return f"{SUBNET}.{self._octet}.2"

    @property
    def workdir(self) -> Path:
        return WORK_ROOT / f"{PREFIX}{self.site}"

    @property
    def disk_image(self) -> Path:
        return self.workdir / "disk.img"

    @property
    def disk_mount(self) -> Path:
        return self.workdir / "disk"

    @property
    def data_dir(self) -> Path:
        """The exported directory on the disk, where the test files go."""
        return self.disk_mount / "data"

    @property
    def fuse_mount(self) -> Path:
        return self.workdir / access.FUSE  # where protocol fuse reads

    @property
    def xrootd_dir(self) -> Path:
        return self.workdir / roles.SERVER

    @property
    def cache_image(self) -> Path:
        return self.workdir / "cache.img"

    @property
    def cache_mount(self) -> Path:
        """The XCache's own disk; its files live in ``store`` below (the xrootd user's)."""
        return self.workdir / "cache"

    @property
    def xcache_dir(self) -> Path:
        """The cache server's config, log, admin and pid files (on the host, not its disk)."""
        return self.workdir / roles.CACHE

    @property
    def xcache_port(self) -> int:
        return XCACHE_PORT_BASE + self._octet

    @property
    def cgroup(self) -> Path:
        return BLKIO_ROOT / f"{PREFIX}{self.site}"

    @property
    def state_file(self) -> Path:
        return STATE_DIR / f"{self.site}.json"

"""Dropping files from the page cache, no root needed: ``posix_fadvise(DONTNEED)`` on each.

A cold read needs the data it reads out of the page cache, and only that: a worker node that
runs job after job keeps its software cached (a container image's files, the libraries a job
loads lazily), and a storage server in production keeps its inode and directory caches.
"""

from __future__ import annotations

import os
from pathlib import Path


def drop_open(fd: int) -> None:
    """Evict the cached pages of a file already open (a reader that times its own reads)."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def drop(path: str | Path) -> bool:
    """Evict one file's cached pages (False: it could not be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        drop_open(fd)
        return True
    finally:
        os.close(fd)


def drop_tree(root: str | Path) -> int:
    """Evict the cached pages of every regular file under ``root`` (symbolic links not
    followed); how many files were dropped."""
    count = 0
    for top, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(top, name)
            if not os.path.islink(path) and drop(path):
                count += 1
    return count

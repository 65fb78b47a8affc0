"""Paths (and file:// URLs): the file system of this node, a POSIX or FUSE endpoint."""

from __future__ import annotations

import shutil
from pathlib import Path

from instore.storage import base
from instore.storage.base import Checksum, Storage
from instore.urls import FILE, local_path


class FileStorage(Storage):
    protocol = FILE

    def stat(self, url: str) -> int | None:
        path = Path(local_path(url))
        return path.stat().st_size if path.is_file() else None

    def reported_adler32(self, url: str) -> str | None:
        return None  # a file system keeps no checksum

    def checksum(self, url: str, timeout: float = 300.0) -> Checksum:
        """Read here: for a path that is what the endpoint is, so nothing to say about it."""
        return Checksum(base.adler32(Path(local_path(url))), "read here")

    def put(self, local: Path, url: str) -> None:
        target = Path(local_path(url))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, target)

    def probe(self, url: str, timeout: float) -> str | None:
        try:
            with open(local_path(url), "rb"):
                return None
        except OSError as err:
            return f"{err.strerror or err}"

    def drain(self, url: str) -> None:
        for _ in base.file_blocks(Path(local_path(url))):
            pass

    def listdir(self, url: str, timeout: float) -> list[str]:
        path = Path(local_path(url))
        if not path.is_dir():
            raise base.StorageError(url, "no such directory here", "check the directory")
        return [p.name for p in path.iterdir() if p.is_file()]

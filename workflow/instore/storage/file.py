"""Paths (and file:// URLs): the file system of this node, a POSIX or FUSE endpoint. Range reads
are one ``os.pread`` per range, so counts equal what the kernel served."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from instore.errors import InstoreError
from instore.storage import base
from instore.storage.base import Checksum, Storage, StorageError
from instore.urls import FILE, is_local, local_path


class FileReader:
    def __init__(self, url: str, timeout: float) -> None:
        self._fd = os.open(local_path(url), os.O_RDONLY)
        self.size = os.fstat(self._fd).st_size

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        out = []
        for start, stop in ranges:
            data = os.pread(self._fd, stop - start, start)
            if len(data) != stop - start:
                raise OSError(
                    f"short read at offset {start}: got {len(data)} of {stop - start} bytes (file truncated?)"
                )
            out.append(data)
        return out

    def close(self) -> None:
        os.close(self._fd)


class FileStorage(Storage):
    protocol = FILE
    copy_tool = "cp"

    def open(self, url: str, timeout: float) -> FileReader:
        return FileReader(url, timeout)

    def get(self, url: str, local: Path, timeout: float | None = None) -> None:
        if not is_local(url):
            raise InstoreError(
                f"cp cannot stage in {url}", "use --stage-in xrdcp for root:// and http:// sources"
            )
        shutil.copyfile(local_path(url), local)

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
            raise StorageError(url, "no such directory here", "check the directory")
        return [p.name for p in path.iterdir() if p.is_file()]

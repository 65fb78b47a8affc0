"""Local files: one ``os.pread`` per range, so counts equal what the kernel served."""

from __future__ import annotations

import os

from instore.urls import local_path


class FileBackend:
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

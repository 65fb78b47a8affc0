"""root:// through the XRootD client: coalesced ranges go out as one vector read."""

from __future__ import annotations

from XRootD import client

# XRootD vector reads take at most 1024 elements of at most ~2 MB each (kXR_readv limits).
MAX_VECTOR_ELEMENTS = 1024
MAX_VECTOR_ELEMENT = 2 * 1024 * 1024 - 64


def _check(status: object, what: str, url: str) -> None:
    if not status.ok:  # type: ignore[attr-defined]
        raise OSError(f"xrootd {what} failed for {url}: {status.message}")  # type: ignore[attr-defined]


class XRootDBackend:
    def __init__(self, url: str, timeout: float) -> None:
        self._url = url
        self._timeout = int(max(1, timeout))
        self._file = client.File()
        _check(self._file.open(url, timeout=self._timeout)[0], "open", url)
        status, info = self._file.stat(timeout=self._timeout)
        _check(status, "stat", url)
        self.size = int(info.size)

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        # The XRootD binding takes Python ints only; uproot hands on NumPy ones where it reads
        # a basket's key (byte-sized steps: instore.uproot_xrootd says more)
        ranges = [(int(a), int(b)) for a, b in ranges]
        small = [(a, b - a) for a, b in ranges if b - a <= MAX_VECTOR_ELEMENT]
        if len(small) == len(ranges) and 1 < len(ranges) <= MAX_VECTOR_ELEMENTS:
            status, info = self._file.vector_read(chunks=small, timeout=self._timeout)
            _check(status, "vector read", self._url)
            return [bytes(c.buffer) for c in info.chunks]
        out = []
        for a, b in ranges:
            status, data = self._file.read(a, b - a, timeout=self._timeout)
            _check(status, "read", self._url)
            out.append(bytes(data))
        return out

    def close(self) -> None:
        self._file.close(timeout=self._timeout)

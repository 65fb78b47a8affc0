"""The uproot ``Source`` that counts physical reads, whatever the protocol."""

from __future__ import annotations

import queue
from typing import Any, ClassVar, Protocol

import uproot.source.chunk
import uproot.source.futures
from uproot.source.coalesce import CoalesceConfig, coalesce_requests

from instore.urls import HTTP, XROOTD, http_url, protocol_of


class Backend(Protocol):
    """Reads byte ranges from one file; one ``read_ranges`` call is one request to storage."""

    size: int

    def read_ranges(self, ranges: list[tuple[int, int]]) -> list[bytes]: ...

    def close(self) -> None: ...


def open_backend(url: str, timeout: float, via_root: bool = False) -> Backend:
    """The backend for the URL's protocol (``instore.urls``); ``via_root``: XRootD through
    ROOT's TFile, for the root engine's jobs (ROOT's XRootD client and the Python one crash
    one process together). dav(s):// goes out as http(s)://."""
    protocol = protocol_of(url)
    if protocol == XROOTD and via_root:
        from instore.payload.source.rootfile import RootFileBackend

        return RootFileBackend(url, timeout)
    if protocol == XROOTD:
        from instore.payload.source.xrootd import XRootDBackend

        return XRootDBackend(url, timeout)
    if protocol == HTTP:
        from instore.payload.source.http import HTTPBackend

        return HTTPBackend(http_url(url), timeout)
    from instore.payload.source.file import FileBackend

    return FileBackend(url, timeout)


class InstrumentedSource(uproot.source.chunk.Source):
    """Coalesces like uproot's fsspec source, then reads through a counting backend."""

    coalesce: ClassVar[CoalesceConfig] = CoalesceConfig()
    timeout: ClassVar[float] = 60.0
    via_root: ClassVar[bool] = False
    instances: ClassVar[list[InstrumentedSource]] = []

    def __init__(self, file_path: str, **options: Any) -> None:
        super().__init__()
        self._file_path = file_path
        self._backend = open_backend(file_path, self.timeout, self.via_root)
        self._num_bytes = self._backend.size
        self.reads: list[tuple[int, int]] = []  # (offset, length) of every physical read
        self.requests = 0  # calls to the backend: one vector read / multi-range GET / pread batch
        self.instances.append(self)

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.requests += 1
        self.reads.extend((start, stop - start) for start, stop in ranges)
        return self._backend.read_ranges(ranges)

    def chunk(self, start: int, stop: int) -> uproot.source.chunk.Chunk:
        self._num_requests += 1
        self._num_requested_chunks += 1
        self._num_requested_bytes += stop - start
        data = self._read([(start, stop)])[0]
        return uproot.source.chunk.Chunk(
            self, start, stop, uproot.source.futures.TrivialFuture(data)
        )

    def chunks(
        self, ranges: list[tuple[int, int]], notifications: queue.Queue
    ) -> list[uproot.source.chunk.Chunk]:
        self._num_requests += 1
        self._num_requested_chunks += len(ranges)
        self._num_requested_bytes += sum(stop - start for start, stop in ranges)

        def submit(request: list[tuple[int, int]]) -> uproot.source.futures.TrivialFuture:
            return uproot.source.futures.TrivialFuture(self._read(request))

        return coalesce_requests(ranges, submit, self, notifications, self.coalesce)

    @property
    def closed(self) -> bool:
        return self._backend is None

    def __enter__(self) -> InstrumentedSource:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None  # type: ignore[assignment]


def source_class(
    coalesce: CoalesceConfig, timeout: float, via_root: bool = False
) -> type[InstrumentedSource]:
    """A fresh subclass per job, so its settings and read log belong to that job only."""
    return type(
        "JobSource",
        (InstrumentedSource,),
        {"coalesce": coalesce, "timeout": timeout, "via_root": via_root, "instances": []},
    )

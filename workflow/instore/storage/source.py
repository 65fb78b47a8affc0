"""Instrumented uproot sources: every physical read is counted and logged.

uproot's own sources count logical requests; a storage study needs the physical ones (after
coalescing), with their sizes. One :class:`InstrumentedSource` applies uproot's coalescing
(``CoalesceConfig``) and hands each coalesced request to the URL's protocol reader
(``instore.storage.open_reader``); ``via_root``: root:// through ROOT's TFile, for the root
engine's jobs (ROOT's XRootD client and the Python one crash one process together).
"""

from __future__ import annotations

import queue
from typing import Any, ClassVar

import uproot.source.chunk
import uproot.source.futures
from uproot.source.coalesce import CoalesceConfig, coalesce_requests

from instore.storage import open_reader


class InstrumentedSource(uproot.source.chunk.Source):
    """Coalesces like uproot's fsspec source, then reads through the protocol's reader."""

    coalesce: ClassVar[CoalesceConfig] = CoalesceConfig()
    timeout: ClassVar[float] = 60.0
    via_root: ClassVar[bool] = False
    instances: ClassVar[list[InstrumentedSource]] = []

    def __init__(self, file_path: str, **options: Any) -> None:
        super().__init__()
        self._file_path = file_path
        self._reader = open_reader(file_path, self.timeout, self.via_root)
        self._num_bytes = self._reader.size
        self.reads: list[tuple[int, int]] = []  # (offset, length) of every physical read
        self.requests = 0  # calls to the reader: one vector read / multi-range GET / pread batch
        self.instances.append(self)

    def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self.requests += 1
        self.reads.extend((start, stop - start) for start, stop in ranges)
        return self._reader.read_ranges(ranges)

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
        return self._reader is None

    def __enter__(self) -> InstrumentedSource:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None  # type: ignore[assignment]


def source_class(
    coalesce: CoalesceConfig, timeout: float, via_root: bool = False
) -> type[InstrumentedSource]:
    """A fresh subclass per job, so its settings and read log belong to that job only."""
    return type(
        "JobSource",
        (InstrumentedSource,),
        {"coalesce": coalesce, "timeout": timeout, "via_root": via_root, "instances": []},
    )

"""What an engine reports about one read of one file."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class OpenClock:
    """When a job's open began, on the wall clock and on the process's CPU clock: an open's
    time is partly CPU (a TLS or GSI handshake, ROOT's streamer info, uproot's metadata) which
    the job's CPU already counts, and partly a wait on the storage, which a model fits apart."""

    wall: float
    cpu: float

    @classmethod
    def start(cls) -> OpenClock:
        return cls(time.perf_counter(), time.process_time())

    def since(self) -> tuple[float, float]:
        """Wall and CPU seconds since the start."""
        return time.perf_counter() - self.wall, time.process_time() - self.cpu


@dataclass
class EngineResult:
    tree: str = ""  # the TTree's path in the file ("" for an RNTuple)
    format: str = ""  # "ttree" or "rntuple"
    object_name: str = ""  # path in the file of the object read, TTree or RNTuple
    file_size: int = 0
    entries: int = 0
    # A TTree's top-level branches, an RNTuple's top-level fields (both engines count alike: a
    # sub-branch or sub-field is read with its top-level one and is not counted apart).
    branches_total: int = 0
    branches_read: int = 0  # those read (selected, counters added, none skipped)
    # Selected ones the engine could not read (no dictionary for a class in them) and why.
    fields_skipped: int = 0
    fields_skipped_reason: str | None = None
    events: int = 0
    open_s: float = 0.0
    open_cpu_s: float = 0.0  # the process's CPU during the open (part of open_s)
    bytes_read: int = 0
    read_calls: int = 0
    # of read_calls, those the open made (header, streamers, the tree's metadata: inside
    # open_s); None where the engine cannot tell
    open_read_calls: int | None = None
    vector_reads: int = 0
    bytes_needed: int = 0
    cache_bytes: int = 0  # effective TTreeCache size (root engine)
    reads: list[tuple[int, int]] = field(default_factory=list)  # (offset, length) per physical read
    counters: dict[str, float] = field(default_factory=dict)  # engine-specific extras
    threads_used: int = 1  # threads that read (a cluster-split job: at most one per cluster)
    threads_note: str | None = None  # why fewer threads read than the job has

    def plus(self, other: EngineResult) -> EngineResult:
        """Two passes over the same file as one result (the HEPiX fixed-time method)."""
        summed = (
            "events",
            "open_s",
            "open_cpu_s",
            "bytes_read",
            "read_calls",
            "vector_reads",
            "bytes_needed",
        )
        merged = replace(self, **{k: getattr(self, k) + getattr(other, k) for k in summed})
        if self.open_read_calls is not None and other.open_read_calls is not None:
            merged.open_read_calls = self.open_read_calls + other.open_read_calls
        else:
            merged.open_read_calls = None
        merged.reads = self.reads + other.reads
        merged.counters = {k: v + other.counters.get(k, 0) for k, v in self.counters.items()}
        return merged

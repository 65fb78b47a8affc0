"""The replay's run record: a job's figures (wall, bytes, read calls, vector reads, read-size
histogram, latencies) under the same names as ``instore read`` prints them, plus what the
recording said, the recorded job's predicted CPU efficiency on the storage replayed and, when
the trace knows the job's events, the events the replay stands for (HEPiX's figure of merit)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

REPLAY_RECORD_VERSION = 1


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (None for no values): a value that was measured, not a blend."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]


@dataclass
class ReplayRecord:
    """One closed-loop replay; a replay stopped part-way keeps what it measured and ``error``."""

    trace: str
    command: list[str] | None  # the recorded job's command, credentials stripped
    site: str | None
    protocol: str | None
    urls: list[str]
    start_time: str
    # lead-in, requests, think times and tail: the job's wall time there (in fixed-time mode:
    # the time all passes ran)
    wall_s: float
    open_s: float
    read_time_s: float  # time inside read requests
    bytes_read: int
    read_calls: int  # Read, PgRead and VectorRead requests issued
    vector_reads: int
    chunks_read: int
    read_size_hist: dict[str, int]
    read_latency_p50_s: float | None
    read_latency_p95_s: float | None
    read_latency_p99_s: float | None
    think_s: float  # recorded think time replayed (lead-in, between requests, tail)
    think_lead_s: float
    think_tail_s: float
    sleep_overshoot_s: float  # how much longer the replay slept than the think time, in total
    stats_from_open: int  # Stats answered from the open's stat (the sources stat once at open)
    requests_total: int
    requests_done: int
    overlapping_requests: int  # recorded while another was in flight
    skipped_recorded: dict[str, int]  # recorded but not replayed (writes, failed requests)
    recorded: dict[str, Any]  # the recording's own figures (Trace.summary)
    predicted_wall_s: float | None  # the replay's wall per pass, when it completed
    # The recorded job's CPU over the span replayed / (wall x its cores), at most 1
    # (instore.replay.efficiency)
    predicted_cpu_efficiency: float | None
    recorded_cpu_efficiency: float | None  # recorded CPU / (recorded wall x its cores)
    error: str | None = None
    stopped_at: int | None = None  # index of the request that failed
    xrdreplay: dict[str, Any] | None = None
    # The replayer's own CPU over the replay (its XRootD client's threads included): what one
    # replay client costs the machine it runs on
    client_cpu_s: float | None = None
    ready_at: float | None = None  # Unix time the replay was ready to start (sources loaded)
    start_lateness_s: float | None = None  # how late it reached --start-at
    # HEPiX fixed-time mode (> 0): the trace replayed again and again until this much wall
    fixed_time_s: float = 0.0
    # Passes through the trace: whole ones plus the share of a pass's data bytes the last,
    # cut pass had read (1.0 for one complete replay)
    passes: float | None = None
    # Each whole pass's wall (its lead-in to its tail), in order: what the model predicts of a
    # pass, without the fixed time's step between whole passes and a cut one
    pass_walls_s: list[float] = field(default_factory=list)
    events: float | None = None  # the recorded job's events x passes; None: the trace has none
    events_per_s: float | None = None  # events / wall
    pass_urls: list[str] = field(default_factory=list)  # fixed-time: later passes' files
    # Streams (instore.replay.streams): how many were replayed side by side (1: every request
    # after the previous one), how many the trace holds, and of its overlapping requests those
    # replayed beside the ones in flight and those replayed after them, with why
    streams: int = 1
    streams_in_trace: int = 1
    overlapping_side_by_side: int = 0
    overlapping_serialised: int = 0
    serialise_reason: str | None = None
    overlapping_replayed: int | None = None  # measured: sent while another was in flight
    # The recorded job's CPU the replay stands for (whole passes, and a cut pass by the share
    # of its think time replayed), the cores the job kept busy (its CPU over its wall, rounded
    # up), and whether the replay's wall was shorter than that CPU needs on them: the job
    # would be CPU-bound here, its efficiency 1 per core and its wall longer than the replay's
    predicted_cpu_s: float | None = None
    job_cores: int = 1
    cpu_bound: bool | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    record_version: int = REPLAY_RECORD_VERSION
    kind: str = "replay"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

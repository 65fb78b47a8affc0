"""The model's disk: the server's page cache in front of it (``page_in``, which the model asks
for each request), and the same rule summed over a payload point for the profile's fit
(``fit.py``), so that the fit explains the payload points with the disk the model predicts
with."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from instore.predict.profile import Profile


@dataclass(frozen=True)
class DiskRule:
    """The model's disk (``model.predict``) summed over a payload point: a request's service
    time (``seek_s``) for each block-device read and its bytes at the sequential rate, the
    requests an idle IOPS throttle lets through at once (``burst_ios``, refilled while the job
    computes between its read calls) paid nothing. A point carries the block device's own
    counts where the site could read them (``disk_reads``, ``disk_bytes_read``: the page
    cache's readahead and merging are in them); elsewhere each read call is one request."""

    seq: float  # bytes per second
    seek_s: float
    burst_ios: float = 0.0

    def parts(self, r: dict[str, Any], cpu_s: float) -> tuple[float, float]:
        """The requests' service time, and the bytes' streaming time (which a transfer over
        the link hides, as in the model); ``cpu_s``: the job's CPU, while which the throttle's
        burst refills."""
        ios, nbytes = _measured(r, "disk_reads"), _measured(r, "disk_bytes_read")
        if ios is None or nbytes is None:
            ios, nbytes = float(r["read_calls"]), float(r["bytes_read"])
        paid = ios - self.free_ios(ios, float(r["read_calls"]), cpu_s)
        return paid * self.seek_s, nbytes / self.seq

    def free_ios(self, ios: float, calls: float, cpu_s: float) -> float:
        """The requests the throttle's burst passes: a burst at the start and, refilled at its
        rate while the job computes, up to a burst again before each later read call."""
        if not self.burst_ios or not self.seek_s:
            return 0.0
        refill = min(cpu_s / self.seek_s, max(0.0, calls - 1.0) * self.burst_ios)
        return min(ios, self.burst_ios + refill)


def _measured(r: dict[str, Any], key: str) -> float | None:
    value = r.get(key)
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def disk_rule(profile: Profile) -> DiskRule:
    return DiskRule(seq=(profile.disk_seq_mb_per_s.value or 1.0) * 1e6,
                    seek_s=(profile.disk_random_ms.value or 0.0) / 1e3,
                    burst_ios=float(profile.disk_burst_ios.value or 0.0))  # fmt: skip


class Disk:
    """The model's disk: a FIFO queue to its ``servers`` (the first free one takes a request),
    a request's service time (``seek_s``) for each block-device read and its bytes at the
    sequential rate; an idle IOPS throttle lets a slice's requests (``burst_ios``) through at
    once, refilled at its rate while the disk idles."""

    __slots__ = ("burst", "free", "seek", "seq", "tokens")

    def __init__(self, servers: int, seek_s: float, seq: float, burst_ios: float) -> None:
        self.free = [0.0] * servers  # when each server is next free (a heap)
        self.seek, self.seq, self.burst = seek_s, seq, burst_ios
        self.tokens = [burst_ios, 0.0]  # the burst left, and when it was last counted

    def serve(self, arrive: float, ios: int, nbytes: float) -> tuple[float, float, float]:
        """A request of ``ios`` reads and ``nbytes`` reaching the disk at ``arrive``: when it
        starts, its service time (the reads the burst does not pass) and when it ends."""
        free, tokens, seek = self.free, self.tokens, self.seek
        start = arrive if arrive > free[0] or not ios else free[0]
        paid = ios
        if self.burst and ios:
            left = min(self.burst, tokens[0] + (start - tokens[1]) / seek) if seek else self.burst
            passed = min(ios, int(left))
            paid = ios - passed
            tokens[0] = left - passed
        service = paid * seek
        end = start + service + nbytes / self.seq
        if ios:
            heapq.heapreplace(free, end)
            tokens[1] = end
        return start, service, end


def page_in(cached: tuple[list[int], list[int]], runs: tuple[tuple[int, int], ...],
            readahead: float) -> tuple[int, int]:  # fmt: skip
    """The disk requests, and their bytes, that reading ``runs`` of one file costs: none for a
    run the page cache holds (``cached``: its ranges, updated), else one that reads the run
    and the readahead after it."""
    starts, ends = cached
    ios = nbytes = 0
    for off, length in runs:
        i = bisect_right(starts, off) - 1
        if i >= 0 and ends[i] >= off + length:
            continue
        i = bisect_right(starts, off - 1) - 1
        sequential = i >= 0 and starts[i] <= off <= ends[i]
        span = max(length, int(readahead)) if sequential else length
        ios += 1
        nbytes += span
        lo, hi = off, off + span
        j = bisect_left(starts, lo)
        if j > 0 and ends[j - 1] >= lo:
            j -= 1
            lo = starts[j]
        while j < len(starts) and starts[j] <= hi:
            hi = max(hi, ends[j])
            del starts[j], ends[j]
        starts.insert(j, lo)
        ends.insert(j, hi)
    return ios, nbytes

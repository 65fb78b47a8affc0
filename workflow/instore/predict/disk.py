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


def throttled_requests(ios: float, nbytes: float, seq: float, seek_s: float) -> float:
    """The requests an IOPS throttle counts for ``ios`` disk reads of ``nbytes``: the block
    layer sends a read as requests of at most its largest (the loop device's 512 kB), and the
    throttle charges each one service time, whatever its bytes. That largest is the rate fio's
    1 MiB sequential reads came at times the service time (lan-hdd: 78.8 MB/s at 150 IOPS,
    525 kB), so a read of up to that costs one service time and a longer one one per piece; its
    bytes add nothing (charged as bytes as well, a 128 kB read cost 25% more than it does)."""
    block = seq * seek_s
    return max(ios, math.ceil(nbytes / block - 1e-9)) if block > 0 and ios else ios


@dataclass(frozen=True)
class DiskRule:
    """The model's disk (``model.predict``) summed over a payload point: a request's service
    time (``seek_s``) for each block-device read and its bytes at the sequential rate (behind
    an IOPS throttle, ``burst_ios`` above 0: the throttle's requests, ``throttled_requests``,
    and no bytes' time), the requests an idle throttle lets through at once (``burst_ios``,
    refilled while the job computes between its read calls) paid nothing. A point carries the
    block device's own counts where the site could read them (``disk_reads``,
    ``disk_bytes_read``: the page cache's readahead and merging, and the block layer's split,
    are in them); elsewhere each read call is one read."""

    seq: float  # bytes per second
    seek_s: float
    burst_ios: float = 0.0

    def parts(self, r: dict[str, Any], cpu_s: float, calls: float) -> tuple[float, float]:
        """The requests' service time, and the bytes' streaming time (which a transfer over
        the link hides, as in the model); ``cpu_s``: the job's CPU, while which the throttle's
        burst refills; ``calls``: the read calls between which the job computes (those after
        its open: the open's come before the loop's CPU and refill nothing)."""
        ios, nbytes = _measured(r, "disk_reads"), _measured(r, "disk_bytes_read")
        counted = ios is not None and nbytes is not None  # the block layer's own requests
        if ios is None or nbytes is None:
            ios, nbytes = float(r["read_calls"]), float(r["bytes_read"])
        if self.burst_ios and not counted:
            ios = throttled_requests(ios, nbytes, self.seq, self.seek_s)
        paid = ios - self.free_ios(ios, calls, cpu_s)
        return paid * self.seek_s, 0.0 if self.burst_ios else nbytes / self.seq

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
    sequential rate; behind an IOPS throttle (``burst_ios`` above 0) a service time for each
    request the throttle counts (``throttled_requests``) instead, and a slice's requests
    (``burst_ios``) through at once after it idles, refilled at its rate while the disk idles."""

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
        if self.burst and ios:  # the throttle's requests, at a service time each
            ios = throttled_requests(ios, nbytes, self.seq, seek)
            nbytes = 0.0
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


def in_pieces(runs: tuple[tuple[int, int], ...], piece: int) -> tuple[tuple[int, int], ...]:
    """``runs`` as a server that reads at most ``piece`` bytes at once reads them, each piece a
    run of its own for ``page_in`` (split once per plan, ``Plan.in_pieces``; 0: runs whole)."""
    if not piece:
        return runs
    return tuple((off + k, min(piece, length - k))
                 for off, length in runs for k in range(0, length, piece))  # fmt: skip


def page_in(cached: tuple[list[int], list[int]], runs: tuple[tuple[int, int], ...],
            readahead: float) -> tuple[int, int]:  # fmt: skip
    """The disk requests, and their bytes, that reading ``runs`` of one file costs: none for a
    run the page cache holds (``cached``: its ranges, updated), else one that reads the run
    and the readahead after it. A server that reads at most a piece at once (XrdHttp's 128 kB)
    is given its runs in those pieces (``in_pieces``), each a run of its own."""
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

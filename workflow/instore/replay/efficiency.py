"""The recorded job's CPU efficiency as a replay predicts it, over the span the replay reproduces.

A replay reproduces the recorded job's timeline pass after pass: its lead-in (start-up before
the first request), its think times between requests, its tail (after the last response), with
this storage's requests in place of the recorded ones. The job's CPU is spent in that timeline
away from storage, so the CPU a replay stands for is the recorded CPU of each whole pass plus,
of a pass cut by the fixed time, the share of a pass's think time it replayed. The share of its
data bytes (what ``passes`` counts, for the events) is not the share of its CPU: a trace that
reads early and computes late had its cut pass credited with all of its CPU while only part of
its time had passed (agc-load, about 12 passes of 0.8 s in 10 s on lan-ssd: up to 8% too much,
where 109% was predicted at 1, 4 and 16 clients alike).

A job cannot spend more CPU than its cores over its wall. The cores are those the recorded job
kept busy: its CPU over its wall, rounded up (1 for a single-threaded job, whose client
library's threads may add a few percent). Where a replay's wall is shorter than the CPU it
stands for needs on those cores, the job would be CPU-bound on that storage: its efficiency
is 1 per core, and the record says ``cpu_bound`` (the replay's wall understates the job's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# CPU over wall a single-threaded job shows beyond 1 from its client library's threads (the
# recorder counts every thread of the job): up to this much more still counts as one core.
# Single-threaded uproot and coffea analyses over XRootD were recorded at 1.03 to 1.09 (the runs
# of a5fca5f and 43b4bd1); at 0.05 the agc-load trace of a5fca5f (1.09) counted as 2 cores and
# halved every predicted efficiency of its load tables. Two busy threads show 1.3 and more.
CORE_TOLERANCE = 0.15


def job_cores(cpu_s: float | None, wall_s: float | None) -> int:
    """The cores the recorded job kept busy: its CPU over its wall, rounded up (at least 1)."""
    if not cpu_s or not wall_s or wall_s <= 0:
        return 1
    return max(1, math.ceil(cpu_s / wall_s - CORE_TOLERANCE))


def passes_of_cpu(whole: int, think_in_cut_pass: float, think_per_pass: float,
                  bytes_share: float) -> float:  # fmt: skip
    """The passes' worth of the job's CPU a replay stands for: its whole passes and, of a pass
    the fixed time cut, the share of a pass's think time it replayed (its share of data bytes
    when the trace has no think time)."""
    if think_per_pass > 0:
        return whole + min(1.0, think_in_cut_pass / think_per_pass)
    return whole + bytes_share


@dataclass(frozen=True)
class Predicted:
    """The CPU a replay stands for and the efficiency it predicts, per core."""

    cpu_s: float  # the recorded job's CPU over the span replayed
    cores: int  # the cores the recorded job kept busy
    efficiency: float  # CPU over (wall x cores), at most 1
    cpu_bound: bool  # the replay's wall was shorter than that CPU needs on those cores


def predict(cpu_s: float, cores: int, cpu_passes: float, wall_s: float) -> Predicted:
    """The efficiency predicted for ``cpu_passes`` passes' CPU replayed in ``wall_s``."""
    span_cpu = cpu_s * cpu_passes
    per_core = span_cpu / (wall_s * cores)
    return Predicted(span_cpu, cores, min(1.0, per_core), per_core > 1.0)


def recorded(cpu_s: float | None, wall_s: float | None) -> float | None:
    """The recorded job's own efficiency per core (None without its times)."""
    if cpu_s is None or not wall_s:
        return None
    return cpu_s / (wall_s * job_cores(cpu_s, wall_s))

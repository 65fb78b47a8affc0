"""Threads in the payload: how a job of n threads uses them, and which entries each thread reads.

Grid slots are multi-core and analyses run multi-threaded, so a job may use n threads. The root
engine has two modes: ``cluster`` (the entries split by cluster over the threads, each with its
own file, tree and cache, as ``ROOT::TTreeProcessorMT`` and RDataFrame do) and ``implicit``
(``ROOT::EnableImplicitMT(n)`` under ``TTree::GetEntry``: the branches of one entry unzipped in
parallel, a task per branch). The uproot engine has one: its decompression and interpretation
executors with n threads. A batch system accounts a job of n threads as n cores for its wall
time, so its CPU efficiency is CPU over (wall x threads).
"""

from __future__ import annotations

import itertools
import os

# The modes (each engine's spec, instore.payload.specs, says which are its own)
CLUSTER, IMPLICIT, EXECUTORS = "cluster", "implicit", "executors"


def worker_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a batch slot or cgroup sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def too_many_threads(threads: int, cores: int | None = None) -> str | None:
    """Why a job of ``threads`` threads cannot run here (None: it can): more than the cores."""
    cores = worker_cores() if cores is None else cores
    if threads > cores:
        return f"{threads} threads per job, the worker has {cores} core(s)"
    return None


def split_clusters(
    bounds: list[int], first: int, stop: int, stride: int, threads: int
) -> list[tuple[int, int]]:
    """Entry ranges [a, b) for up to ``threads`` threads: whole clusters each (``bounds`` are the
    clusters' first entries and the last one's end), contiguous, as even in processed entries as
    the clusters allow. Each range starts at an entry the job processes (first + k * stride), so
    the threads together process exactly the entries one thread would. Fewer ranges than
    threads when there are fewer clusters."""
    cuts = sorted({min(max(b, first), stop) for b in bounds} | {first, stop})
    clusters = [(a, b) for a, b in itertools.pairwise(cuts) if b > a]
    total = _processed(first, stop, first, stride)
    if not clusters or total == 0:
        return [(first, stop)] if stop > first else []
    ranges: list[tuple[int, int]] = []
    start = clusters[0][0]
    for k, (_, b) in enumerate(clusters):
        last = k == len(clusters) - 1
        share = total * (len(ranges) + 1) / threads  # where this range should end
        if last or _processed(first, b, first, stride) >= share:
            ranges.append((start, b))
            start = b
    hits = [(_first_hit(a, first, stride), b) for a, b in ranges]
    return [(a, b) for a, b in hits if a < b]


def _first_hit(a: int, first: int, stride: int) -> int:
    """The first entry at or after ``a`` the job processes."""
    return first + -(-(a - first) // stride) * stride


def _processed(a: int, b: int, first: int, stride: int) -> int:
    """Entries in [a, b) the job processes."""
    hit = _first_hit(a, first, stride)
    return 0 if hit >= b else (b - 1 - hit) // stride + 1


def cpu_efficiency(cpu_s: float, wall_s: float, threads: int) -> float | None:
    """CPU over (wall x threads): a job of n threads holds n cores for its wall time."""
    return cpu_s / (wall_s * max(1, threads)) if wall_s > 0 else None


def over_cores(efficiency: float | None, threads: int) -> str | None:
    """Why an efficiency is above 1 per core (None when it is not): the process's CPU counts
    every thread, its client library's too, and a job holds only its ``threads`` cores."""
    if efficiency is None or efficiency <= 1.0:
        return None
    return (f"CPU over wall x {max(1, threads)} core(s) is {efficiency:.0%}: the job's own and its "
            "client library's threads ran beside each other; read it as 100% (CPU-bound)")  # fmt: skip


def threads_note(threads: int, used: int, clusters: int) -> str | None:
    """Why a cluster-split job read with fewer threads than it has (None: it used them all)."""
    if used >= threads:
        return None
    return (f"{used} of {threads} threads read: the entries it reads span {clusters} "
            "cluster(s), and a thread reads whole clusters")  # fmt: skip

"""The closed-loop replayer: each recorded request is issued when the previous one of its
stream has completed plus the recorded think time, through the payload's own sources
(``os.pread`` for paths, the XRootD client's read and vector read for root://, multi-range GETs
for http), so the replay's wall time is the recorded job's wall time on that storage.

A multi-threaded job's streams (``streams``: told apart by the recorder's file objects and
their timestamps) are replayed side by side, so what overlapped in the job overlaps in the
replay (``passes``); ``serialise`` issues every request after the previous one instead, as the
replay did before it knew streams. Requests in flight together on one file object are issued
one after another (the record counts them and says why). A Stat is answered from the open's
stat: every source stats a file once when it opens it, as XrdCl's cached
``Stat(force=false)`` in the recording does.

HEPiX's fixed-time mode replays the trace again and again, each pass opening the files anew as
the job did, until the time is up, then stops where it is: the record counts the passes, the
last one by the share of a pass's data bytes it has read (never by elapsed think time), and
the events they stand for.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import multiprocessing
import os
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict

from instore.errors import InstoreError
from instore.payload.runner import CGROUP_ENV, join_site_cgroup, wait_until
from instore.record import Provenance, size_histogram, utc_now
from instore.replay import efficiency
from instore.replay.passes import Replay
from instore.replay.result import ReplayRecord, percentile
from instore.replay.streams import plan
from instore.replay.targets import Targets
from instore.replay.trace import ThinkTimes, Trace
from instore.storage import open_reader, preload

MISSING_FIX = "put the files there (`instore site upload SITE`), or fix --url-map"


def _probe(urls: list[str], timeout: float) -> list[tuple[int | None, str | None]]:
    """Size of each URL or why it cannot be opened, through the jobs' readers."""
    out: list[tuple[int | None, str | None]] = []
    for url in urls:
        try:
            reader = open_reader(url, timeout)
        except ValueError as err:  # a scheme no storage reads
            out.append((None, f"unsupported: {err}"))
            continue
        except Exception as err:  # the readers raise OSError, urllib3 and XRootD errors
            out.append((None, str(err) or type(err).__name__))
            continue
        out.append((reader.size, None))
        reader.close()
    return out


def check_targets(trace: Trace, targets: Targets, timeout: float) -> None:
    """Every trace file is at its target and holds the bytes the trace reads, checked before
    the clock in a child process, so the replay's own first open connects as the job's did."""
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:
        probed = pool.submit(_probe, [*targets.urls, *targets.pass_urls], timeout).result()
    urls = [*targets.urls, *targets.pass_urls]
    missing = [(url, err) for url, (_, err) in zip(urls, probed, strict=True) if err]
    if missing:
        url, err = missing[0]
        unsupported = err.startswith("unsupported")
        raise InstoreError(
            f"{len(missing)} of {len(urls)} trace file(s) (pass targets included) cannot be read "
            f"at the target: {url}: {err}",
            "replay over posix, root:// or http(s) (--protocol)" if unsupported else MISSING_FIX,
        )
    needed = [0] * len(trace.files)
    for r in trace.requests:
        for offset, size in r.chunks:
            needed[r.file] = max(needed[r.file], offset + min(size, r.nbytes or size))
    for url, (size, _), need in zip(
        urls, probed, needed * (1 + len(targets.pass_urls)), strict=True
    ):
        if size is not None and size < need:
            raise InstoreError(
                f"{url} holds {size} bytes but the trace reads up to byte {need}: another file "
                "under the recorded name",
                MISSING_FIX,
            )


def _join_site_cgroup(targets: Targets) -> None:
    """An emulated site's disk limits apply to the replay's reads too, as to its jobs': the
    site's blkio cgroup comes in its job environment (``--site``) or, in a sweep's job, in
    this process's."""
    cgroup = targets.env.get(CGROUP_ENV) or os.environ.get(CGROUP_ENV)
    if cgroup:
        join_site_cgroup(cgroup)


def _load_sources(urls: tuple[str, ...]) -> None:
    """Import the readers before the clock: the XRootD client takes about 0.4 s to import
    here, which the first Open would otherwise count (seen: a replay 19% too long). The XRootD
    client only for root:// targets: it must not join a process holding ROOT's."""
    preload(urls)


# glibc's mallopt parameters (malloc.h): requests above the mmap threshold get pages of their
# own, and a heap top above the trim threshold is given back to the kernel.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_freed_buffers() -> bool:
    """Reuse freed read buffers instead of mapping fresh pages for each: glibc maps a buffer
    above 128 KiB (its default threshold) anew and unmaps it when freed, so every 1 MiB read
    faulted in 256 fresh pages. Measured here (bench/replay_clients.py): 0.22 s of CPU per
    100 MB read over root:// by default, 0.034 s with the thresholds raised. False where the C
    library is not glibc (the defaults stay)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, 64 << 20)) and bool(
            libc.mallopt(_M_TRIM_THRESHOLD, 256 << 20)
        )
    except (OSError, AttributeError):
        return False


def freeze_long_lived() -> None:
    """Collect once, then leave everything that exists now (the modules, the trace, its think
    times) out of the cyclic collector's walks: they live as long as the replay, and each
    collection the reads' small objects set off walked them all again. Measured with perf
    on a paced replay: about a quarter of its CPU was the collector."""
    gc.collect()
    gc.freeze()


def _own_cpu() -> float:
    """This process's user+system CPU seconds, its client library's threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _passes(state: Replay, think: ThinkTimes, deadline: float | None) -> None:
    """One pass; in fixed-time mode (a deadline) pass after pass until the deadline."""
    while state.one_pass(think, deadline):
        if deadline is None or time.perf_counter() >= deadline:
            return


def replay(
    trace: Trace,
    targets: Targets,
    timeout: float = 60.0,
    start_at: float | None = None,
    check: bool = True,
    fixed_time_s: float = 0.0,
    serialise: bool = False,
) -> ReplayRecord:
    """Replay ``trace`` closed-loop against ``targets``; the record says what it measured,
    and, when a request failed, which one and why. ``start_at`` (Unix time): start the clock
    then, with the other replays of a point, once this one is ready. ``fixed_time_s`` > 0:
    HEPiX's method, replay it again and again for that long. ``serialise``: one request after
    another, its streams not side by side."""
    if fixed_time_s < 0:
        raise InstoreError(
            "fixed time is negative", "give --fixed-time 0 (replay once) or more seconds"
        )
    if check:
        check_targets(trace, targets, timeout)  # forks: before this process loads a client
    _join_site_cgroup(targets)
    keep_freed_buffers()
    # XRootD looks at its requests' time-outs every XRD_TIMEOUTRESOLUTION s (15 by default):
    # a replay's request time-out (a third of its job's in a sweep) must end it when it says,
    # with its record naming the request, before the job's own time-out kills it without one
    os.environ.setdefault("XRD_TIMEOUTRESOLUTION", "1")
    _load_sources(targets.urls)
    ready_at = time.time()
    lateness = wait_until(start_at)
    think = trace.think()
    found = plan(trace.requests, think)
    how = plan(trace.requests, think, serialise=True) if serialise else found
    state = Replay(trace, targets, timeout, how)
    freeze_long_lived()
    error: str | None = None
    start_time = utc_now()
    cpu0 = _own_cpu()
    t0 = time.perf_counter()
    try:
        _passes(state, think, t0 + fixed_time_s if fixed_time_s > 0 else None)
    except KeyboardInterrupt:
        error = f"interrupted at request {state.at} of {len(trace.requests)}"
    except Exception as err:  # any source's failure ends the replay; the record keeps why
        r = trace.requests[state.at]
        where = f" in pass {state.passes + 1}" if fixed_time_s > 0 else ""
        error = (f"{r.op} (request {state.at} of {len(trace.requests)}{where}) on "
                 f"{state.url(r.file)} failed: {err}")  # fmt: skip
    finally:
        state.close_all()
    wall = time.perf_counter() - t0
    client_cpu = _own_cpu() - cpu0
    recorded = trace.summary()
    cpu = recorded.get("cpu_s")
    complete = error is None
    passes = state.passes + state.partial
    ran = complete and passes > 0 and wall > 0
    events = None if recorded["events"] is None else recorded["events"] * passes
    cores = efficiency.job_cores(cpu, recorded.get("wall_s"))
    cpu_passes = efficiency.passes_of_cpu(
        state.passes,
        state.think_in_pass(),
        think.lead_s + sum(how.before) + think.tail_s,
        state.partial,
    )
    predicted = efficiency.predict(cpu, cores, cpu_passes, wall) if ran and cpu else None
    return ReplayRecord(
        trace=str(trace.path),
        command=trace.meta.get("command"),
        site=targets.site,
        protocol=targets.protocol,
        urls=list(targets.urls),
        pass_urls=list(targets.pass_urls),
        start_time=start_time,
        wall_s=wall,
        open_s=state.open_s,
        read_time_s=sum(state.latencies),
        bytes_read=state.bytes_read,
        read_calls=len(state.latencies),
        vector_reads=state.vector_reads,
        chunks_read=len(state.sizes),
        read_size_hist=size_histogram(state.sizes),
        read_latency_p50_s=percentile(state.latencies, 50),
        read_latency_p95_s=percentile(state.latencies, 95),
        read_latency_p99_s=percentile(state.latencies, 99),
        think_s=state.think_s,
        think_lead_s=think.lead_s,
        think_tail_s=think.tail_s if complete else 0.0,
        sleep_overshoot_s=state.overshoot,
        stats_from_open=state.stats,
        requests_total=len(trace.requests),
        requests_done=state.done,
        overlapping_requests=think.overlapping,
        streams=len(how.streams),
        streams_in_trace=len(found.streams),
        overlapping_side_by_side=how.side_by_side,
        overlapping_serialised=how.serialised,
        serialise_reason=how.serialise_reason,
        overlapping_replayed=state.overlapping_replayed(),
        skipped_recorded=dict(trace.skipped),
        recorded=recorded,
        predicted_wall_s=wall / passes if ran else None,
        predicted_cpu_efficiency=predicted.efficiency if predicted else None,
        recorded_cpu_efficiency=efficiency.recorded(cpu, recorded.get("wall_s")),
        predicted_cpu_s=predicted.cpu_s if predicted else None,
        job_cores=cores,
        cpu_bound=predicted.cpu_bound if predicted else None,
        error=error,
        stopped_at=state.at if error else None,
        client_cpu_s=client_cpu,
        ready_at=ready_at,
        start_lateness_s=lateness,
        fixed_time_s=fixed_time_s,
        passes=passes,
        pass_walls_s=list(state.pass_walls),
        events=events,
        events_per_s=events / wall if events is not None and wall > 0 else None,
        provenance=asdict(Provenance.collect()),
    )

"""The ``root`` engine on an RNTuple: RNTupleReader in C++ (through cling), metrics enabled.

Bytes read and read calls are RNTuple's own page-source counters: the reader opens the file a
second time through its own raw-file layer, so the TFile's counters never see the page reads.
A field holding a class with no dictionary in this process (an experiment's classes, at a site)
is read through its structure as stored: a record's members, a collection's offsets and then its
items (see ``NtupleJob::prepare`` in ``cpp/payload_rntuple.cxx``); a field with nothing ROOT can
walk is skipped: the result counts the skipped fields and names the first class that made one
unreadable, and the bytes needed are those of the fields read. The page map leaves out "page
zero" pages (ROOT's stand-ins for a late-added field's first entries: nothing on storage).

``--cache-mb`` switches the cluster cache: 0 off (each page is one read as the views ask for
it), anything else on (the pages of the selected columns of a cluster are read together, in
one vector read, and the next cluster is prefetched); the size itself has no RNTuple meaning.

Threads (``instore.payload.threads``): in the ``cluster`` mode each thread has its own reader
(its own page source and cluster cache) over a contiguous range of whole clusters, as RDataFrame
reads an RNTuple; counters are summed over the readers. ROOT 6.40 gives a reader no entry range
(``RPageSource::SetEntryRange``, which RDataFrame's RNTupleDS uses, is internal), so a thread's
cluster cache may read ahead one cluster past its range: bytes read grow by up to a cluster per
thread, the bytes needed do not. In the ``implicit`` mode the reader, opened with ROOT's
implicit multi-threading on, unzips pages on the pool's threads.
"""

from __future__ import annotations

import functools
import os
import tempfile
from typing import Any

import pandas as pd

from instore.errors import InstoreError
from instore.payload.engine import ClientOptions
from instore.payload.maps import basket_frame
from instore.payload.objects import DataObject, check_format, root_class_name
from instore.payload.pattern import Pattern, bytes_needed, entry_selection, select_branches
from instore.payload.result import EngineResult, OpenClock
from instore.payload.threads import CLUSTER, split_clusters, threads_note
from instore.rootenv import declare, root, xrdclhttp_available
from instore.urls import is_local_scheme

# Page-source counters recorded as they are (RNTupleReader.RPageSourceFile.<name>).
COUNTERS = ("nReadV", "nRead", "szReadPayload", "szReadOverhead", "szUnzip", "nClusterLoaded",
            "nPageRead", "nPageUnsealed", "timeWallRead", "timeWallUnzip")  # fmt: skip


def _first_line(text: Any) -> str:
    """ROOT's message without its "(unchecked RResult access!)" and stack trace lines."""
    line = (str(text).strip().splitlines() or [""])[0]
    return line.replace(" (unchecked RResult access!)", "")


def _cluster_cache(cache_bytes: int | None) -> int:
    """1 on, 0 off, -1 RNTuple's default, from the ``--cache-mb`` knob."""
    return -1 if cache_bytes is None else int(cache_bytes > 0)


NO_HTTP = "the root engine cannot read an RNTuple over http in this ROOT build (no Davix)"
NO_HTTP_FIX = "use the uproot engine or xrootd"


def _raw_file_problem(f: Any) -> str | None:
    """Why RNTuple's own raw-file layer would not read what ``f`` reads (None: it would).

    RNTupleReader opens its pages anew: a plain TFile's by the URL's *path* as a local file,
    Davix/curl/NetXNG files by the URL, any other class through the TFile itself. A remote file
    whose class is exactly TFile (our XrdClHttp TFile) would be read as a local path: refused,
    never silently read from this host's disk."""
    remote = not is_local_scheme(str(f.GetEndpointUrl().GetProtocol()))
    return NO_HTTP if remote and f.IsA().GetName() == "TFile" else None


def _job(f: Any, url: str, obj: DataObject, cluster_cache: int) -> Any:
    problem = _raw_file_problem(f)
    if problem:
        raise InstoreError(f"{url}: {problem}", NO_HTTP_FIX)
    job = declare("payload_rntuple").NtupleJob(f, obj.path, cluster_cache)
    if job.error or not job.reader:
        if found := f.Get(obj.path):  # the failure's own cause: an object of another kind?
            check_format(url, obj, root_class_name(found))
        raise InstoreError(
            f"{url}: cannot read the RNTuple {obj.path!r} ({_first_line(job.error)})",
            "the file may be truncated or corrupt; regenerate or re-copy it",
        )
    return job


def page_map(job: Any, names: list[str]) -> pd.DataFrame:
    """The pages of ``names`` from ROOT's descriptor, as a basket map (see instore.payload.maps)."""
    rows = job.page_rows(root().std.vector("std::string")(names))
    return basket_frame(names, rows.field, rows.page, rows.entry_start, rows.entry_stop,
                        rows.offset, rows.bytes)  # fmt: skip


def _largest_cluster(pages: pd.DataFrame, chosen: list[str]) -> int:
    """Bytes of the largest cluster of the selected fields: what one cluster-cache load reads."""
    sel = pages[pages["branch"].isin(chosen)]
    return int(sel.groupby("entry_start")["compressed_bytes"].sum().max()) if len(sel) else 0


def run(
    f: Any, url: str, obj: DataObject, pattern: Pattern, client: ClientOptions, t0: OpenClock
) -> EngineResult:
    cluster_cache = _cluster_cache(client.cache_bytes)
    job = _job(f, url, obj, cluster_cache)
    open_s, open_cpu_s = t0.since()
    names = [str(n) for n in job.fields()]
    chosen = select_branches(names, {}, pattern.branches)
    entries = int(job.entries())
    first, stop, stride = entry_selection(entries, pattern)
    ranges = [(first, stop)]
    if client.threads > 1 and client.mt_mode == CLUSTER:
        bounds = [int(b) for b in job.cluster_bounds()]
        ranges = split_clusters(bounds, first, stop, stride, client.threads) or ranges
    t1 = OpenClock.start()
    jobs = [job, *(_job(f, url, obj, cluster_cache) for _ in ranges[1:])]
    more_s, more_cpu_s = t1.since()  # each thread's reader opens the file anew
    open_s, open_cpu_s = open_s + more_s, open_cpu_s + more_cpu_s
    chosen_vec = root().std.vector("std::string")(chosen)
    readable = [str(n) for n in job.prepare(chosen_vec)]
    for other in jobs[1:]:
        other.prepare(chosen_vec)
    events = _loop(jobs, ranges, stride, pattern.cpu_us)
    error = next((str(j.error) for j in jobs if j.error), "")
    if error:
        raise InstoreError(
            f"{url}: cannot read the RNTuple {obj.path!r}: {_first_line(error)}",
            "the file may be truncated or corrupt (or the storage failed); re-copy or regenerate it",
        )
    counters = {name: _summed(jobs, name) for name in COUNTERS}
    pages = page_map(job, names)
    on = bool(job.cluster_cache_on(cluster_cache))
    return EngineResult(
        format=obj.format,
        object_name=obj.path,
        file_size=int(f.GetSize()),
        entries=entries,
        branches_total=len(names),
        branches_read=len(readable),
        fields_skipped=len(chosen) - len(readable),
        fields_skipped_reason=str(job.skip_reason) or None,
        events=events,
        open_s=open_s,
        open_cpu_s=open_cpu_s,
        bytes_read=counters["szReadPayload"] + max(0, counters["szReadOverhead"]),
        read_calls=counters["nRead"],
        vector_reads=counters["nReadV"],
        bytes_needed=bytes_needed(pages, readable, first, stop, stride),
        cache_bytes=_largest_cluster(pages, readable) if on else 0,
        counters={**counters, "cluster_cache": int(on)},
        threads_used=len(jobs),
        threads_note=threads_note(client.threads, len(jobs), len(job.cluster_bounds()) - 1)
        if client.mt_mode == CLUSTER
        else None,
    )


def _summed(jobs: list[Any], name: str) -> int:
    """A page-source counter summed over the threads' readers (-1: ROOT has no such counter)."""
    values = [int(j.counter(name)) for j in jobs]
    return -1 if min(values) < 0 else sum(values)


def _loop(jobs: list[Any], ranges: list[tuple[int, int]], stride: int, cpu_us: float) -> int:
    """One reader's loop on this thread, or each reader's on a thread of its own."""
    if len(jobs) == 1:
        ((first, stop),) = ranges
        return int(jobs[0].loop(first, stop, stride, cpu_us))
    vec = root().std.vector
    events = declare("payload_rntuple").parallel_ntuple_loop(
        vec("instore::NtupleJob*")(jobs), vec("Long64_t")([a for a, _ in ranges]),
        vec("Long64_t")([b for _, b in ranges]), stride, cpu_us,
    )  # fmt: skip
    return sum(int(e) for e in events)


@functools.cache
def warm_up() -> None:
    """Run the RNTuple path once on a tiny file, before any clock starts (cling compiles each
    function at its first call)."""
    ROOT, cpp = root(), declare("payload_rntuple")
    fd, path = tempfile.mkstemp(suffix=".root", prefix="instore-warmup-")
    os.close(fd)
    try:
        cpp.write_warm_up_ntuple(path)
        f = ROOT.TFile.Open(path, "READ")
        try:
            for cache in (0, 1):
                job = cpp.NtupleJob(f, "warmup", cache)
                names = [str(n) for n in job.fields()]
                job.prepare(ROOT.std.vector("std::string")(names))
                job.loop(0, job.entries(), 1, 0.0)
                _loop([job, job], [(0, 0), (0, 0)], 1, 0.0)  # the threads' loop, compiled
                job.cluster_bounds()
                page_map(job, names)
                [job.counter(n) for n in COUNTERS]
                del job
        finally:
            f.Close()
    finally:
        os.unlink(path)


def http_problem() -> str | None:
    """Why the root engine cannot read an RNTuple over http here (None: it can): it reads http
    through XrdClHttp where installed, a plain TFile to RNTuple (see ``_raw_file_problem``)."""
    return NO_HTTP if xrdclhttp_available() else None

"""The ``root`` engine: ROOT's own event loop in C++ (through cling), TTreePerfStats attached.

A job of several threads (``instore.payload.threads``) runs as multi-threaded analyses do: in the
``cluster`` mode the entries are split by cluster, each thread reading its range through its own
TFile, TTree, TTreeCache and TTreePerfStats, as ROOT::TTreeProcessorMT does (TTreeProcessorMT
itself runs its tasks on a TBB pool that would outlive the read in a warm payload's process and
hides the per-task files whose counters the record sums); in the ``implicit`` mode ROOT's implicit
multi-threading unzips the branches of each ``TTree::GetEntry`` in parallel."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Any

import pandas as pd

from instore import credentials
from instore.errors import InstoreError
from instore.payload import engine_rntuple
from instore.payload.engine import ClientOptions
from instore.payload.maps import basket_frame
from instore.payload.objects import RNTUPLE, DataObject, check_format, root_class_name
from instore.payload.pattern import Pattern, bytes_needed, entry_selection, select_branches
from instore.payload.result import EngineResult, OpenClock
from instore.payload.threads import CLUSTER, IMPLICIT, split_clusters, threads_note
from instore.rootenv import declare, root, xrdclhttp, xrdclhttp_available
from instore.urls import http_url, is_http, is_local, local_path

TWEBFILE_NO_AUTH = ("the root engine's HTTP client (TWebFile) cannot authenticate: "
                    "use the uproot engine or xrootd for this site")  # fmt: skip


def _open_http(url: str) -> Any:
    """http(s) through XrdClHttp where it is installed, else TWebFile; a TWebFile that cannot
    open a URL while the job holds a grid credential says it could not have sent it."""
    if xrdclhttp_available():
        f = xrdclhttp().XrdClHttpFile(http_url(url))  # davs:// is https:// to XrdClHttp
        if f.IsZombie():
            reason = str(f.open_error)
            raise InstoreError(f"{url}: XrdClHttp could not open it ({reason})",
                               "check the URL, the file and the X.509 proxy")  # fmt: skip
        return f
    try:
        f = root().TFile.Open(url, "READ")
    except OSError:
        f = None
    if (not f or f.IsZombie()) and credentials.discover().kind is not None:
        raise InstoreError(f"{url}: {TWEBFILE_NO_AUTH}")
    return f


def _open(url: str) -> Any:
    if is_local(url) and not os.path.exists(local_path(url)):
        raise InstoreError(f"{url}: no such file", "check the path")
    if is_http(url):
        f = _open_http(url)
    else:
        try:
            f = root().TFile.Open(url, "READ")
        except OSError:  # PyROOT raises for a failed open
            f = None
    if not f or f.IsZombie():
        raise InstoreError(
            f"{url}: ROOT could not open it (not a ROOT file, truncated, or refused by the endpoint)",
            "check the URL and that the file is complete; regenerate or re-copy it",
        )
    return f


def _get_tree(f: Any, url: str, obj: DataObject) -> Any:
    tree = f.Get(obj.path)
    if tree and not (hasattr(tree, "InheritsFrom") and tree.InheritsFrom("TTree")):
        check_format(url, obj, root_class_name(tree))
    if not tree:
        raise InstoreError(
            f"{url}: ROOT finds no TTree at {obj.path!r}",
            "the file may be truncated or corrupt; regenerate or re-copy it",
        )
    return tree


def _branches(tree: Any) -> tuple[list[str], dict[str, str]]:
    """Top-level branch names in file order, and each jagged branch's counter branch."""
    names, counters = [], {}
    for b in tree.GetListOfBranches():
        names.append(b.GetName())
        for leaf in b.GetListOfLeaves():
            count = leaf.GetLeafCount()
            if count:
                counters[b.GetName()] = count.GetBranch().GetName()
    return names, counters


def basket_map(tree: Any, names: list[str]) -> pd.DataFrame:
    """The same basket map as ``instore inspect``, from ROOT's view of the metadata: baskets
    embedded in the TTree's record included (see ``instore.payload.maps``)."""
    rows = declare("payload").basket_rows(tree, root().std.vector("std::string")(names))
    return basket_frame(names, rows.branch, rows.basket, rows.entry_start, rows.entry_stop,
                        rows.offset, rows.bytes, rows.embedded)  # fmt: skip


@functools.cache
def warm_up() -> None:
    """Run the whole engine path once on a tiny in-memory tree, before any clock starts.

    cling compiles each function at its first call; without this, a fresh job process would
    count about a second of compilation as its own wall time.
    """
    ROOT, cpp = root(), declare("payload")
    if xrdclhttp_available():  # cling compiles XrdCl's headers: seconds, not the read's
        xrdclhttp()
    f = ROOT.TMemFile("instore-warmup.root", "RECREATE")
    try:
        tree = cpp.warm_up_tree(f)
        names, _ = _branches(tree)
        log = cpp.ReadLog("instore_warmup", tree)
        vec = ROOT.std.vector("std::string")(names)
        cpp.loop(tree, vec, 0, tree.GetEntries(), 1, 0.0, -1)
        basket_map(tree, names)
        # the multi-threaded loop too, on one thread: threads started here would not survive
        # the warm payload's fork, and ROOT's thread safety stays off for one-thread jobs
        bounds = list(cpp.cluster_bounds(tree))
        _parallel([tree], [log], vec, [(0, bounds[-1])], 1, 0.0, -1)
        del log
    finally:
        f.Close()


def prepare(fmt: str | None, url: str | None = None) -> None:
    """The TTree loop, the RNTuple one when an RNTuple is about to be read, and the lookups
    ROOT makes at the first open of a remote URL."""
    warm_up()
    if fmt == RNTUPLE:
        engine_rntuple.warm_up()
    if url is not None and not is_local(url):
        warm_scheme(url.split(":", 1)[0])


@functools.cache
def warm_scheme(scheme: str) -> None:
    """What ROOT's first TFile::Open of a ``scheme`` URL does before it connects, done before
    the clock (0.1 s of CPU here: its TSystem and TArchiveFile plug-in macros read and
    compiled, the TFile plug-in's library and class loaded), none of it the storage's time."""
    ROOT = root()
    url = f"{scheme}://localhost//instore-warm-up.root"
    ROOT.gSystem.IsPathLocal(url)
    ROOT.gPluginMgr.FindHandler("TArchiveFile", url)
    handler = ROOT.gPluginMgr.FindHandler("TFile", url)
    if handler and handler.LoadPlugin() == 0:
        ROOT.TClass.GetClass(handler.GetClass())


def set_threads(threads: int, mode: str | None) -> None:
    """Before the clock: ROOT's thread safety for a job of several threads, and its implicit
    multi-threading (a thread pool of ``threads``) in the implicit mode. Once per process: a
    warm payload's forked job is a process of its own."""
    if threads <= 1:
        return
    ROOT = root()
    ROOT.EnableThreadSafety()
    if mode == IMPLICIT and not ROOT.IsImplicitMTEnabled():
        os.environ["ROOT_MAX_THREADS"] = str(threads)  # rootenv caps it at 1
        ROOT.EnableImplicitMT(threads)
        if ROOT.GetThreadPoolSize() != threads:
            raise InstoreError(
                f"ROOT's implicit multi-threading has {ROOT.GetThreadPoolSize()} threads, "
                f"not {threads}",
                "unset ROOT_MAX_THREADS or raise it to the job's threads",
            )


def run(url: str, obj: DataObject, pattern: Pattern, client: ClientOptions) -> EngineResult:
    ROOT = root()
    if client.readahead_bytes is not None:
        ROOT.TFile.SetReadaheadSize(client.readahead_bytes)
    t0 = OpenClock.start()
    f = _open(url)
    try:
        if obj.format == RNTUPLE:
            return engine_rntuple.run(f, url, obj, pattern, client, t0)
        if client.threads > 1 and client.mt_mode == CLUSTER:
            return _run_tree_threads(f, url, obj, pattern, client, t0)
        return _run_tree(f, url, obj, pattern, client.cache_bytes, t0, client.mt_mode)
    finally:
        ROOT.SetOwnership(f, True)
        f.Close()


def _run_tree(
    f: Any,
    url: str,
    obj: DataObject,
    pattern: Pattern,
    cache_bytes: int | None,
    t0: OpenClock,
    mt_mode: str | None = None,
) -> EngineResult:
    ROOT, cpp = root(), declare("payload")
    tree = _get_tree(f, url, obj)
    opened = t0.since()
    names, counters = _branches(tree)
    chosen = select_branches(names, counters, pattern.branches)
    first, stop, stride = entry_selection(int(tree.GetEntries()), pattern)
    log = cpp.ReadLog("instore_perf", tree)
    calls_before = int(f.GetReadCalls())
    if mt_mode == IMPLICIT:
        # branches are unzipped on the pool's threads: their unzip events would reach the
        # TTreePerfStats concurrently, and their reads (gPerfStats is per thread) not at all.
        # The TFile's own counters count every read; the read log keeps this thread's.
        tree.SetPerfStats(ROOT.nullptr)
    vec = ROOT.std.vector("std::string")(chosen)
    loop = cpp.loop(
        tree,
        vec,
        first,
        stop,
        stride,
        pattern.cpu_us,
        -1 if cache_bytes is None else cache_bytes,
    )
    if loop.error:
        raise OSError(str(loop.error))
    read = Loops([f], [loop], [log], calls_before)
    return _result(f, tree, obj, names, chosen, (first, stop, stride), read, opened)


@dataclass
class Loops:
    """What a job's loops read through: the files (one per thread), each thread's loop result
    and read log, and the files' read calls before the loops began."""

    files: list[Any]
    loops: list[Any]
    logs: list[Any]
    calls_before: int


def _result(
    f: Any,
    tree: Any,
    obj: DataObject,
    names: list[str],
    chosen: list[str],
    selection: tuple[int, int, int],
    read: Loops,
    opened: tuple[float, float],
    **threads: Any,
) -> EngineResult:
    """The job's result, every counter summed over its threads' files, loops and logs (one of
    each for a job of one thread). ``read_log_complete``: every read the files made since the
    logs were attached is in them (implicit MT: the pool's reads are not, unless the
    TTreeCache's fills all ran on this thread)."""
    calls = sum(int(x.GetReadCalls()) for x in read.files)
    logged = sum(len(log.offsets) for log in read.logs)
    return EngineResult(
        tree=obj.path,
        format=obj.format,
        object_name=obj.path,
        file_size=int(f.GetSize()),
        entries=int(tree.GetEntries()),
        branches_total=len(names),
        branches_read=len(chosen),
        events=sum(int(loop.events) for loop in read.loops),
        open_s=opened[0],
        open_cpu_s=opened[1],
        bytes_read=sum(int(x.GetBytesRead()) for x in read.files),
        read_calls=calls,
        open_read_calls=read.calls_before,
        vector_reads=sum(int(loop.cache_fills) for loop in read.loops),
        bytes_needed=bytes_needed(basket_map(tree, names), chosen, *selection),
        cache_bytes=int(read.loops[0].cache_size),
        reads=[r for log in read.logs for r in zip(log.offsets, log.lengths, strict=True)],
        counters={
            "perfstats_bytes_read": sum(int(log.GetBytesRead()) for log in read.logs),
            "perfstats_read_calls": sum(int(log.GetReadCalls()) for log in read.logs),
            "perfstats_disk_s": sum(float(log.GetDiskTime()) for log in read.logs),
            "perfstats_unzip_s": sum(float(log.GetUnzipTime()) for log in read.logs),
            "unzipped_bytes": sum(int(loop.unzipped_bytes) for loop in read.loops),
            "read_log_complete": int(logged == calls - read.calls_before),
        },
        **threads,
    )


def _parallel(
    trees: list[Any],
    logs: list[Any],
    names: Any,
    ranges: list[tuple[int, int]],
    stride: int,
    cpu_us: float,
    cache_bytes: int,
) -> list[Any]:
    """The C++ loop on one thread per tree, each over its own entry range."""
    ROOT, cpp = root(), declare("payload")
    vec = ROOT.std.vector
    return list(
        cpp.parallel_loop(vec("TTree*")(trees), vec("instore::ReadLog*")(logs), names,
                          vec("Long64_t")([a for a, _ in ranges]),
                          vec("Long64_t")([b for _, b in ranges]), stride, cpu_us, cache_bytes)
    )  # fmt: skip


def _run_tree_threads(
    f: Any, url: str, obj: DataObject, pattern: Pattern, client: ClientOptions, t0: OpenClock
) -> EngineResult:
    """The entries split by cluster over ``client.threads`` threads, each reading through its
    own TFile, TTree and TTreeCache (as TTreeProcessorMT and RDataFrame do); every counter is
    the sum over the threads' files, and the files' opens count as open time."""
    ROOT, cpp = root(), declare("payload")
    tree = _get_tree(f, url, obj)
    names, counters = _branches(tree)
    chosen = select_branches(names, counters, pattern.branches)
    first, stop, stride = entry_selection(int(tree.GetEntries()), pattern)
    bounds = [int(b) for b in cpp.cluster_bounds(tree)]
    ranges = split_clusters(bounds, first, stop, stride, client.threads) or [(first, stop)]
    files, trees, logs = [f], [tree], []
    try:
        for _ in ranges[1:]:
            files.append(_open(url))
            trees.append(_get_tree(files[-1], url, obj))
        opened = t0.since()
        logs += [cpp.ReadLog(f"instore_perf_{k}", t) for k, t in enumerate(trees)]
        calls_before = sum(int(x.GetReadCalls()) for x in files)
        cache = -1 if client.cache_bytes is None else client.cache_bytes
        vec = ROOT.std.vector("std::string")(chosen)
        loops = _parallel(trees, logs, vec, ranges, stride, pattern.cpu_us, cache)
        errors = [str(loop.error) for loop in loops if loop.error]
        if errors:
            raise OSError(errors[0])
        read = Loops(files, loops, logs, calls_before)
        return _result(f, tree, obj, names, chosen, (first, stop, stride), read, opened,
                       threads_used=len(ranges),
                       threads_note=threads_note(client.threads, len(ranges), len(bounds) - 1))  # fmt: skip
    finally:
        logs.clear()  # each TTreePerfStats goes before its tree does
        for extra in files[1:]:
            ROOT.SetOwnership(extra, True)
            extra.Close()

"""The ``root`` engine: ROOT's own event loop in C++ (through cling), TTreePerfStats attached."""

from __future__ import annotations

import functools
import os
import time
from typing import Any

import pandas as pd

from instore import credentials
from instore.errors import InstoreError
from instore.payload import engine_rntuple
from instore.payload.engine import ClientOptions
from instore.payload.maps import basket_frame
from instore.payload.objects import RNTUPLE, DataObject
from instore.payload.pattern import Pattern, bytes_needed, entry_selection, select_branches
from instore.payload.result import EngineResult
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
    if not tree or not tree.InheritsFrom("TTree"):
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
        cpp.loop(tree, ROOT.std.vector("std::string")(names), 0, tree.GetEntries(), 1, 0.0, -1)
        basket_map(tree, names)
        del log
    finally:
        f.Close()


def prepare(fmt: str | None) -> None:
    """The TTree loop, and the RNTuple one when an RNTuple is about to be read."""
    warm_up()
    if fmt == RNTUPLE:
        engine_rntuple.warm_up()


def run(url: str, obj: DataObject, pattern: Pattern, client: ClientOptions) -> EngineResult:
    ROOT = root()
    if client.readahead_bytes is not None:
        ROOT.TFile.SetReadaheadSize(client.readahead_bytes)
    t0 = time.perf_counter()
    f = _open(url)
    try:
        if obj.format == RNTUPLE:
            return engine_rntuple.run(f, url, obj, pattern, client.cache_bytes, t0)
        return _run_tree(f, url, obj, pattern, client.cache_bytes, t0)
    finally:
        ROOT.SetOwnership(f, True)
        f.Close()


def _run_tree(
    f: Any, url: str, obj: DataObject, pattern: Pattern, cache_bytes: int | None, t0: float
) -> EngineResult:
    ROOT, cpp = root(), declare("payload")
    tree = _get_tree(f, url, obj)
    open_s = time.perf_counter() - t0
    names, counters = _branches(tree)
    chosen = select_branches(names, counters, pattern.branches)
    first, stop, stride = entry_selection(int(tree.GetEntries()), pattern)
    log = cpp.ReadLog("instore_perf", tree)
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
    return EngineResult(
        tree=obj.path,
        format=obj.format,
        object_name=obj.path,
        file_size=int(f.GetSize()),
        entries=int(tree.GetEntries()),
        branches_total=len(names),
        branches_read=len(chosen),
        events=int(loop.events),
        open_s=open_s,
        bytes_read=int(f.GetBytesRead()),
        read_calls=int(f.GetReadCalls()),
        vector_reads=int(loop.cache_fills),
        bytes_needed=bytes_needed(basket_map(tree, names), chosen, first, stop, stride),
        cache_bytes=int(loop.cache_size),
        reads=list(zip(log.offsets, log.lengths, strict=True)),
        counters={
            "perfstats_bytes_read": int(log.GetBytesRead()),
            "perfstats_read_calls": int(log.GetReadCalls()),
            "perfstats_disk_s": float(log.GetDiskTime()),
            "perfstats_unzip_s": float(log.GetUnzipTime()),
            "unzipped_bytes": int(loop.unzipped_bytes),
        },
    )

"""The ``uproot`` engine: columnar reads chunked by cluster, through a counting source."""

from __future__ import annotations

import functools
import itertools
import math
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from uproot.source.coalesce import CoalesceConfig

from instore.errors import InstoreError
from instore.payload import objects
from instore.payload.cpuburn import burn
from instore.payload.engine import ClientOptions, UprootKnobs
from instore.payload.maps import basket_map, page_map
from instore.payload.objects import RNTUPLE, DataObject
from instore.payload.pattern import Pattern, bytes_needed, entry_selection, select_branches
from instore.payload.result import EngineResult, OpenClock
from instore.storage.source import source_class
from instore.urls import is_xrootd


def _steps(tree: object, first: int, stop: int, step_bytes: int) -> list[tuple[int, int]]:
    """Entry ranges to read at once: the file's clusters, or even slices if it has only one."""
    bounds = [int(x) for x in tree.common_entry_offsets()]  # type: ignore[attr-defined]
    if len(bounds) <= 2:
        n = max(1, math.ceil(int(tree.member("fTotBytes")) / step_bytes))  # type: ignore[attr-defined]
        bounds = [round(i * bounds[-1] / n) for i in range(n + 1)]
    return _slices(bounds, first, stop)


def _slices(bounds: list[int], first: int, stop: int) -> list[tuple[int, int]]:
    return [
        (max(a, first), min(b, stop))
        for a, b in itertools.pairwise(bounds)
        if b > first and a < stop
    ]


def _first_hit(a: int, first: int, stride: int) -> int:
    return first + math.ceil((a - first) / stride) * stride


def _tree_read(tree: object, pattern: Pattern, knobs: UprootKnobs) -> tuple[Any, ...]:
    names = [b.name for b in tree.branches]  # type: ignore[attr-defined]
    counters = {
        b.name: b.count_branch.name
        for b in tree.branches  # type: ignore[attr-defined]
        if b.count_branch is not None
    }
    chosen = select_branches(names, counters, pattern.branches)
    first, stop, stride = entry_selection(tree.num_entries, pattern)  # type: ignore[attr-defined]
    events = 0
    for a, b in _steps(tree, first, stop, knobs.step_bytes):
        tree.arrays(chosen, entry_start=a, entry_stop=b, library="ak")  # type: ignore[attr-defined]
        n = len(range(_first_hit(a, first, stride), b, stride))
        burn(pattern.cpu_us * n)
        events += n
    needed = bytes_needed(basket_map(tree), chosen, first, stop, stride)
    return names, chosen, events, needed


def _ntuple_read(ntuple: Any, pattern: Pattern) -> tuple[Any, ...]:
    """Read the selected top-level fields cluster by cluster, as for a TTree. Top-level fields
    only, as the root engine counts them (``keys()`` also lists every sub-field's path)."""
    names = list(ntuple.keys(recursive=False))
    chosen = select_branches(names, {}, pattern.branches)
    first, stop, stride = entry_selection(int(ntuple.num_entries), pattern)
    events = 0
    wanted = set(chosen)
    for a, b in _slices(objects.cluster_bounds(ntuple), first, stop):
        ntuple.arrays(filter_name=lambda n: n in wanted, entry_start=a, entry_stop=b, library="ak")
        n = len(range(_first_hit(a, first, stride), b, stride))
        burn(pattern.cpu_us * n)
        events += n
    needed = bytes_needed(page_map(ntuple), chosen, first, stop, stride)
    return names, chosen, events, needed


def prepare(fmt: str | None, url: str | None = None) -> None:
    """One read path for TTree and RNTuple alike; the XRootD client's module for root://."""
    warm_up()
    if url is not None and is_xrootd(url):
        import XRootD.client  # noqa: F401  (uproot imports it at its first open)


def set_threads(threads: int, mode: str | None) -> None:
    """Nothing before the clock: a read makes its own executors of ``threads`` threads."""


def run(url: str, obj: DataObject, pattern: Pattern, client: ClientOptions) -> EngineResult:
    knobs = client.uproot
    coalesce = CoalesceConfig(
        knobs.max_range_gap, knobs.max_request_ranges, knobs.max_request_bytes
    )
    handler = source_class(coalesce, knobs.timeout)
    t0 = OpenClock.start()
    file = objects.open_file(url, handler=handler, **_executors(client.threads))
    with file:
        data = objects.get(file, url, obj)
        objects.check_format(url, obj, data.classname)
        open_s, open_cpu_s = t0.since()
        open_reads = len(handler.instances[0].reads)  # the reads its open made
        try:
            if obj.format == RNTUPLE:
                names, chosen, events, needed = _ntuple_read(data, pattern)
            else:
                names, chosen, events, needed = _tree_read(data, pattern, knobs)
        except (OSError, InstoreError):
            raise  # storage failures and our own errors say what they are
        except Exception as err:  # uproot's decoding errors are plain ValueError, KeyError...
            why = (str(err).strip().splitlines() or [""])[0]
            raise InstoreError(
                f"{url}: cannot decode the {obj.format} {obj.path!r} ({type(err).__name__}: {why})",
                "the file may be truncated or corrupt; regenerate or re-copy it",
            ) from err
        source = handler.instances[0]
        reads = list(source.reads)
        ntuple_alone = obj.format == RNTUPLE and client.threads > 1  # executors unused
        return EngineResult(
            tree=obj.path if obj.format != RNTUPLE else "",
            format=obj.format,
            object_name=obj.path,
            file_size=int(source.num_bytes),
            entries=int(data.num_entries),
            branches_total=len(names),
            branches_read=len(chosen),
            events=events,
            open_s=open_s,
            open_cpu_s=open_cpu_s,
            bytes_read=sum(n for _, n in reads),
            read_calls=len(reads),
            open_read_calls=open_reads,
            vector_reads=source.requests,
            bytes_needed=needed,
            reads=reads,
            counters={
                "uproot_requests": source.num_requests,
                "uproot_requested_bytes": source.num_requested_bytes,
            },
            threads_used=1 if ntuple_alone else client.threads,
            threads_note=NTUPLE_ONE_THREAD if ntuple_alone else None,
        )


NTUPLE_ONE_THREAD = ("uproot 5.7 reads an RNTuple on one thread: its RNTuple arrays() take no "
                     "decompression or interpretation executor yet")  # fmt: skip


def _executors(threads: int) -> dict[str, Any]:
    """uproot's decompression and interpretation executors with ``threads`` threads each (the
    file shuts them down when it closes); none for one thread, uproot's own default then."""
    if threads <= 1:
        return {}
    return {
        "decompression_executor": ThreadPoolExecutor(threads),
        "interpretation_executor": ThreadPoolExecutor(threads),
    }


@functools.cache
def warm_up() -> None:
    """Run the engine once on a tiny TTree and RNTuple written by uproot, before any clock
    starts: uproot and awkward build their readers at first use, about 0.1 s that a cold job
    otherwise counts as reading (measured on a 9 MB RNTuple: 0.20 s first, 0.09 s second)."""
    import awkward as ak
    import numpy as np
    import uproot

    rng = np.random.default_rng(1)
    counts = rng.integers(0, 4, 2000)
    columns = {
        "x": rng.normal(size=len(counts)).astype(np.float32),
        "v": ak.unflatten(rng.normal(size=int(counts.sum())).astype(np.float32), counts),
    }
    directory = tempfile.mkdtemp(prefix="instore-warmup-")
    path = os.path.join(directory, "warm-up.root")
    try:
        with uproot.recreate(path) as f:
            f.mktree("tree", {"x": np.float32, "v": "var * float32"}).extend(columns)
            f["ntuple"] = columns  # uproot writes an RNTuple by default
        for name in ("tree", "ntuple"):
            run(path, objects.choose(path, name), Pattern(), ClientOptions())
    finally:
        shutil.rmtree(directory, ignore_errors=True)

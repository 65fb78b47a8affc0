"""The ``uproot`` engine: columnar reads chunked by cluster, through a counting source."""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

from uproot.source.coalesce import CoalesceConfig

from instore.inspect.basketmap import basket_map, open_tree
from instore.payload.cpuburn import burn
from instore.payload.pattern import Pattern, bytes_needed, entry_selection, select_branches
from instore.payload.result import EngineResult
from instore.payload.source import source_class


@dataclass(frozen=True)
class UprootKnobs:
    """uproot's client-side readahead: how requests are coalesced, and how much is read at once."""

    max_range_gap: int = CoalesceConfig.max_range_gap
    max_request_bytes: int = CoalesceConfig.max_request_bytes
    max_request_ranges: int = CoalesceConfig.max_request_ranges
    step_bytes: int = 64 * 1024 * 1024  # uncompressed bytes per step when the file has one cluster
    timeout: float = 60.0


def _steps(tree: object, first: int, stop: int, step_bytes: int) -> list[tuple[int, int]]:
    """Entry ranges to read at once: the file's clusters, or even slices if it has only one."""
    bounds = [int(x) for x in tree.common_entry_offsets()]  # type: ignore[attr-defined]
    if len(bounds) <= 2:
        n = max(1, math.ceil(int(tree.member("fTotBytes")) / step_bytes))  # type: ignore[attr-defined]
        bounds = [round(i * bounds[-1] / n) for i in range(n + 1)]
    return [
        (max(a, first), min(b, stop))
        for a, b in itertools.pairwise(bounds)
        if b > first and a < stop
    ]


def run(url: str, tree_name: str | None, pattern: Pattern, knobs: UprootKnobs) -> EngineResult:
    coalesce = CoalesceConfig(
        knobs.max_range_gap, knobs.max_request_ranges, knobs.max_request_bytes
    )
    handler = source_class(coalesce, knobs.timeout)
    t0 = time.perf_counter()
    file, tree = open_tree(url, tree_name, handler=handler)
    with file:
        open_s = time.perf_counter() - t0
        names = [b.name for b in tree.branches]
        counters = {
            b.name: b.count_branch.name for b in tree.branches if b.count_branch is not None
        }
        chosen = select_branches(names, counters, pattern.branches)
        first, stop, stride = entry_selection(tree.num_entries, pattern)
        events = 0
        for a, b in _steps(tree, first, stop, knobs.step_bytes):
            tree.arrays(chosen, entry_start=a, entry_stop=b, library="ak")
            n = len(range(first + math.ceil((a - first) / stride) * stride, b, stride))
            burn(pattern.cpu_us * n)
            events += n
        needed = bytes_needed(basket_map(tree), chosen, first, stop, stride)
        source = handler.instances[0]
        reads = list(source.reads)
        return EngineResult(
            tree=tree.name,
            file_size=int(source.num_bytes),
            entries=int(tree.num_entries),
            branches_total=len(names),
            branches_read=len(chosen),
            events=events,
            open_s=open_s,
            bytes_read=sum(n for _, n in reads),
            read_calls=len(reads),
            vector_reads=source.requests,
            bytes_needed=needed,
            reads=reads,
            counters={
                "uproot_requests": source.num_requests,
                "uproot_requested_bytes": source.num_requested_bytes,
            },
        )

"""A forked job's own copy of its warm parent's pages, made before its clock.

A child forked from the warm payload (``instore.payload.warm``) shares its parent's memory
copy-on-write and has none of the parent's library pages mapped. A cold job's start-up has
written its own memory and run its libraries before its clock; a forked job would copy and map
them inside it, on first touch (2.4-3.4 times a cold job's minor faults on a small RNTuple read,
and tens of ms). The parent lists the pages it has once (``resident_pages``); each forked read
makes them its own before its clock (``make_private``).

The listing itself must leave the parent's allocator as a cold start has it: glibc raises its
mmap and trim thresholds to the size of any mapped chunk freed, and a child inherits them, so a
scan that freed multi-MiB buffers had every forked job reuse heap pages where a cold job maps
fresh ones (half a cold job's faults, and 26% less wall, on a 44 MB RNTuple read with uproot).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

MADV_POPULATE_READ, MADV_POPULATE_WRITE = 22, 23  # Linux 5.14
PAGE = os.sysconf("SC_PAGE_SIZE")
# pagemap entries read at once: 64 KiB, under glibc's default mmap threshold (128 KiB), so the
# scan never frees a mapped chunk, which raises the threshold for every later allocation
CHUNK_PAGES = 8192


@dataclass(frozen=True)
class Pages:
    """A run of pages mapped in the warm parent: where, how long, and whether it is writable."""

    start: int
    length: int
    writable: bool
    perms: str  # as /proc/self/maps has them ("rw-p"): the child checks they still hold


def _mappings() -> list[tuple[int, int, str, str]]:
    """(start, end, perms, name) of this process's mappings."""
    out = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        start, end = (int(x, 16) for x in fields[0].split("-"))
        out.append((start, end, fields[1], fields[5].strip() if len(fields) > 5 else ""))
    return out


def resident_pages() -> list[Pages]:
    """The private pages this process has mapped (``/proc/self/pagemap``'s present bit): its
    own memory and the library pages it has run. A forked child inherits them shared."""
    import numpy as np

    runs: list[Pages] = []
    with open("/proc/self/pagemap", "rb", buffering=0) as pagemap:
        for start, end, perms, name in _mappings():
            if perms[0] != "r" or perms[3] != "p" or name in ("[vvar]", "[vdso]", "[vsyscall]"):
                continue  # inaccessible, shared, or the kernel's
            mine: list[Pages] = []
            for first in range(start, end, CHUNK_PAGES * PAGE):
                last = min(end, first + CHUNK_PAGES * PAGE)
                pagemap.seek(first // PAGE * 8)
                entries = np.frombuffer(pagemap.read((last - first) // PAGE * 8), dtype=np.uint64)
                present = np.concatenate(([0], (entries >> np.uint64(63)).astype(np.int8), [0]))
                edges = np.flatnonzero(np.diff(present))
                for a, b in zip(edges[::2], edges[1::2], strict=True):
                    _add(mine, Pages(first + int(a) * PAGE, int(b - a) * PAGE, perms[1] == "w",
                                     perms))  # fmt: skip
            runs += mine
    return runs


def _add(runs: list[Pages], run: Pages) -> None:
    """``run`` after the runs of its mapping, joined to the last where they touch (a chunk of
    the scan cuts a run in two)."""
    if runs and runs[-1].start + runs[-1].length == run.start:
        last = runs[-1]
        runs[-1] = Pages(last.start, last.length + run.length, last.writable, last.perms)
    else:
        runs.append(run)


def make_private(runs: Sequence[Pages]) -> int:
    """In a forked child: copy now every writable page of ``runs`` and map every read-only one,
    as a cold job's start-up left them, so that its clock counts no copy-on-write or library
    fault the cold job would not. Runs whose mapping changed since are left alone. Returns the
    bytes done (0 where the kernel has no MADV_POPULATE, before 5.14)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    maps = _mappings()
    done, i = 0, 0
    for run in runs:  # both in address order
        while i < len(maps) and maps[i][1] <= run.start:
            i += 1
        if i == len(maps) or maps[i][0] > run.start or maps[i][2] != run.perms:
            continue
        length = min(run.length, maps[i][1] - run.start)
        advice = MADV_POPULATE_WRITE if run.writable else MADV_POPULATE_READ
        if libc.madvise(run.start, length, advice) == 0:
            done += length
    return done

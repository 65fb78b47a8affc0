"""A job forked from the warm payload makes the parent's pages its own before its clock, so that
its clock counts no copy-on-write fault a cold job (whose memory is its own) would not."""

from __future__ import annotations

import json
import os
import resource

from instore.payload.pages import Pages, make_private, resident_pages

PAGE = os.sysconf("SC_PAGE_SIZE")


def faults_writing_in_a_child(buffer: bytearray, runs: list[Pages] | None) -> dict[str, int]:
    """In a forked child: (make ``runs`` private, then) write one byte of each page of
    ``buffer``; the minor faults of the writing alone, and the bytes made private."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        try:
            done = make_private(runs) if runs is not None else 0
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            for i in range(0, len(buffer), PAGE):
                buffer[i] = 2
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
            os.write(write, json.dumps({"faults": faults, "done": done}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        answer = json.loads(f.read())
    os.waitpid(pid, 0)
    return answer


def test_a_forked_child_that_makes_the_parents_pages_its_own_writes_them_without_faults() -> None:
    buffer = bytearray(b"\1" * (16 << 20))  # 4096 pages, all present in this process
    runs = resident_pages()
    assert sum(r.length for r in runs if r.writable) >= len(buffer)
    shared = faults_writing_in_a_child(buffer, None)
    private = faults_writing_in_a_child(buffer, runs)
    pages = len(buffer) // PAGE
    assert shared["faults"] >= pages  # each page copied on its first write
    assert private["done"] >= len(buffer) and private["faults"] < pages // 20, private


def test_pages_no_longer_mapped_as_they_were_are_left_alone() -> None:
    """A run whose mapping is gone or changed since the scan is skipped, not advised."""
    gone = Pages(start=PAGE, length=PAGE, writable=True, perms="rw-p")  # page 1: never mapped
    assert make_private([gone]) == 0
    here = next(r for r in resident_pages() if r.writable)
    assert make_private([Pages(here.start, here.length, True, "r-xp")]) == 0


# In a fresh process: map 4 GiB (address space only: one page in 256 written; a scan reading
# its pagemap whole reads 8 MiB at once), list the pages, then twice allocate a 1 MiB buffer,
# write it and free it: the faults of each. With glibc's thresholds as a cold start has them,
# the second is mapped afresh too (the first raised the mmap threshold to its own size only);
# after a scan that freed 8 MiB buffers, it comes from heap pages written before.
_AFTER_A_SCAN = """
import mmap, resource, sys
import numpy as np
from instore.payload.pages import resident_pages
big = mmap.mmap(-1, 4 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
big[:: 1 << 20] = b"\\1" * 4096
if sys.argv[1] == "scan":
    resident_pages()
for _ in range(2):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    buffer = np.empty(1 << 20, dtype=np.uint8)
    buffer[::4096] = 1
    del buffer
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_listing_the_pages_leaves_the_allocator_as_a_cold_start_has_it() -> None:
    """Regression (bench/fork_bias.py, 2026-11-27): the scan read a mapping's pagemap whole, in
    buffers above glibc's mmap threshold; freeing them raised the threshold, so every job
    forked from the warm payload took its large buffers from heap pages already faulted in,
    where a cold job maps fresh ones: forked uproot RNTuple reads faulted 32,000 pages against
    a cold job's 67,500 and measured 26% less wall. A large buffer after the scan must fault
    its pages as in a process that never scanned."""
    import subprocess
    import sys

    def faults(mode: str) -> list[int]:
        out = subprocess.run([sys.executable, "-c", _AFTER_A_SCAN, mode], capture_output=True,
                             text=True, check=True)  # fmt: skip
        return [int(n) for n in out.stdout.split()]

    cold, scanned = faults("none"), faults("scan")
    assert cold[1] >= 128, cold  # of 256 pages, mapped afresh
    assert scanned[1] >= cold[1] / 2, (scanned, cold)

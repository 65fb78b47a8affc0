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

"""The kernel's page cache in front of a FUSE mount: what an application's reads become as
the mount's requests (xrootdfs forwards each to the server it mounts), read in whole pages and
ahead as the kernel reads any file (``pages.FilePages``). Reproduced closely enough to count:
replaying agc-uproot's 271 chunks (7.5 MB) through an xrootdfs mount of a local XRootD server
made 318 requests of 12.1 MB at the server (XrdClRecorder in xrootdfs, 2026-11-27); this gives
317 of 12.1 MB, 284 of them the same requests (312 of 12.4 MB, 270 the same, while a read behind
the last one counted as following it: the kernel's test is unsigned)."""

from __future__ import annotations

from instore.predict.compiled import READ, Compiled, Piece
from instore.predict.pages import MAX_PAGES, PAGE, FilePages


def _pieces(requests: list[tuple[int, int]]) -> tuple[Piece, ...]:
    """The requests as the model sends them: one piece for each contiguous stretch, one round
    trip whose bytes flow at the mount's rate (the kernel keeps a few of a stretch's requests
    in flight, which ``in_flight_kb`` stands for), each request of it a run the server reads
    on its own; the stretches one after another."""
    out: list[list[tuple[int, int]]] = []
    for a, n in requests:
        run = (a * PAGE, n * PAGE)
        if out and out[-1][-1][0] + out[-1][-1][1] == run[0]:
            out[-1].append(run)
        else:
            out.append([run])
    return tuple((tuple(runs), sum(n for _, n in runs)) for runs in out)


def mount_plan(
    c: Compiled, most: int = MAX_PAGES
) -> tuple[tuple[tuple[Piece, ...], tuple[Piece, ...]], ...]:
    """Each request's requests at the mount, in the trace's order (one client's page cache):
    those it waits for, and those read ahead beside them; none for what is not a read."""
    key = ("mount", most)
    if key not in c.memo:
        files: dict[int, FilePages] = {}
        plan = []
        for i, op in enumerate(c.ops):
            if op != READ:
                plan.append(((), ()))
                continue
            pages = -(-c.file_sizes[c.files[i]] // PAGE)
            f = files.setdefault(c.files[i], FilePages(most, pages))
            waited: list[tuple[int, int]] = []
            ahead: list[tuple[int, int]] = []
            for off, size in c.chunks[i]:
                w, a = f.read(off, size)
                waited += w
                ahead += a
            plan.append((_pieces(waited), _pieces(ahead)))
        c.memo[key] = tuple(plan)
    return c.memo[key]

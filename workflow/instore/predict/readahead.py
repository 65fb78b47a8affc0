"""The kernel's page cache in front of a FUSE mount: what an application's reads become as
the mount's requests (xrootdfs forwards each to the server it mounts).

The kernel reads a mount in whole pages, at most ``MAX_PAGES`` a request (FUSE's 128 kB), and
reads ahead as it reads any file (mm/readahead.c, on demand): a read at the file's start or
one that follows the last opens a window (4 times a small read, up to 32 pages), a read that
reaches the window's marker opens the next, larger one without the application waiting for
it, a read next to pages already cached reads as far ahead as the history before it, and a
lone random read takes its own pages only. Reproduced here closely enough to count: replaying
agc-uproot's 271 chunks (7.5 MB) through an xrootdfs mount of a local XRootD server made 318
requests of 12.1 MB at the server (XrdClRecorder in xrootdfs, 2026-11-27); this gives 312 of
12.4 MB, 270 of them the same requests."""

from __future__ import annotations

from instore.predict.compiled import READ, Compiled, Piece

PAGE = 4096
MAX_PAGES = 32  # FUSE's largest request, and the mount's readahead window (128 kB)


def _pow2_up(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


def _first_window(req: int, most: int) -> int:
    n = _pow2_up(req)
    if n <= most // 32:
        return n * 4
    return n * 2 if n <= most // 4 else most


def _next_window(size: int, most: int) -> int:
    if size < most // 16:
        return 4 * size
    return 2 * size if size <= most // 2 else most


class FilePages:
    """One file's cached pages and readahead state, and the requests reading it makes."""

    def __init__(self, most: int, pages: int | None = None) -> None:
        self.most = most
        self.pages = pages  # the file's pages where known: nothing is read beyond them
        self.cached: set[int] = set()
        self.marks: set[int] = set()  # pages whose reading opens the next window
        self.start = self.size = self.ahead = 0
        self.prev = -1
        self.out: list[tuple[int, int]] = []  # (first page, pages) of each request

    def fetch(self, lo: int, hi: int) -> None:
        if self.pages is not None:
            hi = min(hi, self.pages)
        run = None
        for p in range(lo, hi):
            if p in self.cached:
                if run is not None:
                    self.emit(run, p)
                    run = None
                continue
            run = p if run is None else run
            self.cached.add(p)
        if run is not None:
            self.emit(run, hi)

    def emit(self, a: int, b: int) -> None:
        while a < b:
            n = min(self.most, b - a)
            self.out.append((a, n))
            a += n

    def window(self, index: int) -> None:
        if index == self.start and self.size == self.ahead:
            more = _next_window(self.size, self.most)
            if self.size + more <= self.most:
                self.ahead, self.size = more, self.size + more
            else:
                self.size, self.ahead = self.most, self.most >> 1
        self.fetch(self.start, self.start + self.size)
        if self.ahead:
            self.marks.add(self.start + self.size - self.ahead)

    def first(self, index: int, req: int) -> None:
        self.start, self.size = index, _first_window(req, self.most)
        self.ahead = self.size - req if self.size > req else self.size
        self.window(index)

    def on_demand(self, index: int, req: int, marked: bool) -> None:
        most = self.most
        if index == 0:
            return self.first(index, req)
        if index in (self.start + self.size - self.ahead, self.start + self.size):
            self.start += self.size
            self.size = self.ahead = _next_window(self.size, most)
            return self.window(index)
        if marked:
            s = index
            while s in self.cached:
                s += 1
            self.start, self.size = s, _next_window(s - index + req, most)
            self.ahead = self.size
            return self.window(index)
        if req > most or index - self.prev <= 1:
            return self.first(index, req)
        history = 0
        while history < most and index - 1 - history in self.cached:
            history += 1
        if history > req:
            self.start, self.size = index, min(history * (2 if history >= index else 1) + req, most)
            self.ahead = 1
            return self.window(index)
        return self.fetch(index, index + req)

    def read(self, off: int, length: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
        """The requests reading ``length`` bytes at ``off`` makes: those holding its pages (the
        application waits for them) and the rest (read ahead, not waited for)."""
        p0, p1 = off // PAGE, (off + max(1, length) - 1) // PAGE
        before = len(self.out)
        p = p0
        while p <= p1:
            if p in self.cached:
                if p in self.marks:
                    self.marks.discard(p)
                    self.on_demand(p, p1 - p + 1, True)
                p += 1
                continue
            self.on_demand(p, p1 - p + 1, False)
        self.prev = p1
        made = self.out[before:]
        waited = [r for r in made if r[0] <= p1 and r[0] + r[1] > p0]
        return waited, [r for r in made if not (r[0] <= p1 and r[0] + r[1] > p0)]


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

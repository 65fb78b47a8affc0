"""The kernel's page cache and readahead for one file (``FilePages``), as mm/readahead.c reads
any file on demand: in whole pages, at most ``most`` a request; a read at the file's start or
one that follows the last opens a window (4 times a small read, up to ``most`` pages), a read
that reaches the window's marker opens the next, larger one without the reader waiting for
it, a read next to pages already cached reads as far ahead as the history before it, and a
lone random read takes its own pages only. Two kernels read so in the model: the one in front
of a FUSE mount (``readahead.mount_plan``: what an application's reads become as the mount's
requests) and the server's, reading those requests from its disk (``read_through``)."""

from __future__ import annotations

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
        if req > most or 0 <= index - self.prev <= 1:  # a sequential miss (unsigned in C)
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


def read_through(pages: FilePages, runs: tuple[tuple[int, int], ...]) -> tuple[int, int]:
    """The disk requests, and their bytes, that a FUSE mount's requests cost at the server it
    mounts: its kernel reads them as it reads any file, so a stretch of them opens windows
    ahead of it and a request whose pages are partly cached reads each stretch it lacks on its
    own. One read per run (``disk.page_in``) missed both: lan-hdd's fuse replays, whose
    throttled disk makes a wall of its requests, had 278 of the 371 the block device counted
    for agc-uproot (333 so), and came out faster than the same trace read in place."""
    ios = nbytes = 0
    for off, length in runs:
        waited, ahead = pages.read(off, length)
        ios += len(waited) + len(ahead)
        nbytes += (sum(n for _, n in waited) + sum(n for _, n in ahead)) * PAGE
    return ios, nbytes

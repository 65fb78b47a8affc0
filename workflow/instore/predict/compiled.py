"""A trace prepared once for many predictions: each request's kind, file, chunks and bytes,
its recorded think time, and what it waits for and what waits for it, as the replay plans its
streams (``instore.replay.streams``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from instore.errors import InstoreError
from instore.predict.disk import in_pieces, page_in
from instore.predict.pages import PAGE, FilePages, read_through
from instore.replay.streams import plan
from instore.replay.trace import READ_OPS, Request, Trace

# One request as the disk sees it: its runs of contiguous bytes (offset, length) in the order
# it reads them, and its bytes
Piece = tuple[tuple[tuple[int, int], ...], int]
# A request to the server with its page cache's outcome known beforehand (``Plan.paged``): its
# runs, its bytes, and the disk requests and their bytes the page cache leaves (``page_in``)
Paged = tuple[tuple[tuple[int, int], ...], int, int, int]

# Operation codes of a compiled trace
OPEN, CLOSE, STAT, READ, OTHER = range(5)
_CODES = {"Open": OPEN, "Close": CLOSE, "Stat": STAT}


@dataclass(frozen=True)
class Compiled:
    """A trace prepared once for many predictions: each request's kind, file, chunks and
    bytes, its think time, what it waits for and what waits for it."""

    name: str
    ops: tuple[int, ...]
    files: tuple[int, ...]
    chunks: tuple[tuple[tuple[int, int], ...], ...]
    nbytes: tuple[int, ...]
    vector: tuple[bool, ...]
    before: tuple[float, ...]
    deps: tuple[int, ...]  # how many requests each waits for (their response, or their issue)
    dependents: tuple[tuple[int, ...], ...]  # the requests that wait for each one's response
    # the requests sent once each one is sent: its stream went on without its response
    on_issue: tuple[tuple[int, ...], ...]
    lead_s: float
    tail_s: float
    cpu_s: float | None  # the recorded job's CPU
    wall_s: float | None  # the recorded job's wall
    events: int | None
    threads: int  # streams: the job's threads reading at once
    file_sizes: tuple[int, ...]  # the furthest byte read of each file (stage-in copies this)
    requests: int
    reads: int
    bytes_read: int
    # what the model derives once per protocol and profile shape (read_plan, block_plan)
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def think_s(self) -> float:
        return self.lead_s + sum(self.before) + self.tail_s


def _op_code(r: Request) -> int:
    """Its operation's code; a Stat answered from the client's cache costs nothing (OTHER)."""
    if r.op == "Stat":
        return STAT if r.force else OTHER
    return _CODES.get(r.op, READ if r.op in READ_OPS else OTHER)


def compile_trace(trace: Trace, serialise: bool = False, in_flight: bool = True) -> Compiled:
    """The trace's requests, their think times and waits as the replay plans them
    (``streams.plan``: ``in_flight`` False for replays that sent a stream's requests in flight
    together one after another, as their records' ``overlapping_serialised`` says)."""
    reqs = trace.requests
    if not reqs:
        raise InstoreError(f"{trace.path}: a trace with no requests", "record a job that reads")
    think = trace.think()
    p = plan(reqs, think, serialise, in_flight)
    waits: list[set[int]] = [set(w) for w in p.waits]
    on_issue: list[list[int]] = [[] for _ in reqs]
    for stream in p.streams:
        for a, b in itertools.pairwise(stream):
            if a in p.detached:
                on_issue[a].append(b)
            else:
                waits[b].add(a)
    dependents: list[list[int]] = [[] for _ in reqs]
    for i, w in enumerate(waits):
        for d in w:
            dependents[d].append(i)
    deps = [len(w) for w in waits]
    for followers in on_issue:
        for b in followers:
            deps[b] += 1
    sizes = [0] * len(trace.files)
    for r in reqs:
        for off, size in r.chunks:
            sizes[r.file] = max(sizes[r.file], off + size)
    reads = [r for r in reqs if r.op in READ_OPS]
    cpu = trace.meta.get("cpu_s")
    wall = trace.meta.get("wall_s")
    return Compiled(
        name=trace.path.name,
        ops=tuple(_op_code(r) for r in reqs),
        files=tuple(r.file for r in reqs),
        chunks=tuple(r.chunks for r in reqs),
        nbytes=tuple(r.nbytes for r in reqs),
        vector=tuple(r.op == "VectorRead" for r in reqs),
        before=tuple(p.before),
        deps=tuple(deps),
        dependents=tuple(tuple(d) for d in dependents),
        on_issue=tuple(tuple(b) for b in on_issue),
        lead_s=think.lead_s,
        tail_s=think.tail_s,
        cpu_s=float(cpu) if isinstance(cpu, int | float) else None,
        wall_s=float(wall) if isinstance(wall, int | float) else None,
        events=trace.events(),
        threads=len(p.streams),
        file_sizes=tuple(sizes),
        requests=len(reqs),
        reads=len(reads),
        bytes_read=sum(r.nbytes for r in reads),
    )


def chained(c: Compiled) -> bool:
    """Whether each request waits for the one before and for nothing else (a single stream,
    ``threads`` 1): a client then sends its requests strictly one after another, memoised."""
    key = ("chained",)
    if key not in c.memo:
        last = c.requests - 1
        c.memo[key] = (
            all(d == (i + 1,) for i, d in enumerate(c.dependents[:last]))
            and not (c.dependents[last])
            and not any(c.on_issue)
        )
    return c.memo[key]


def split(chunks: Sequence[tuple[int, int]], vector: bool, max_read: float | None,
          ) -> list[tuple[tuple[int, int], ...]]:  # fmt: skip
    """The requests one recorded read becomes on the protocol: one (a vector read where the
    protocol has them), one per chunk, and each split into reads of at most ``max_read``."""
    out: list[tuple[tuple[int, int], ...]] = []
    groups = [tuple(chunks)] if vector else [(c,) for c in chunks]
    for group in groups:
        if max_read is None or all(s <= max_read for _, s in group):
            out.append(group)
            continue
        for off, size in group:
            step = int(max_read)
            out.extend(((o, min(step, off + size - o)),) for o in range(off, off + size, step))
    return out


def piece(chunks: Sequence[tuple[int, int]]) -> Piece:
    """A request's chunks as the disk sees them (``Piece``)."""
    return tuple(chunks), sum(s for _, s in chunks)


def read_plan(c: Compiled, vector: bool, max_read: float | None) -> tuple[tuple[Piece, ...], ...]:
    """Each request's reads on a protocol (none for what is not a read), memoised."""
    key = ("reads", vector, max_read)
    if key not in c.memo:
        c.memo[key] = tuple(
            tuple(piece(g) for g in split(ch, vector or not vec, max_read))
            if op == READ else ()
            for op, ch, vec in zip(c.ops, c.chunks, c.vector, strict=True)
        )  # fmt: skip
    return c.memo[key]


def block_plan(c: Compiled, block: int) -> tuple[tuple[int, ...], ...]:
    """Each request's cache blocks (indices, sorted), memoised."""
    key = ("blocks", block)
    if key not in c.memo:
        c.memo[key] = tuple(
            tuple(sorted({b for off, s in ch for b in range(off // block, (off + s - 1) // block + 1)}))
            for ch in c.chunks
        )  # fmt: skip
    return c.memo[key]


def blocks_piece(blocks: Sequence[int], block: int) -> Piece:
    """Whole cache blocks as the origin's disk sees them: one run per contiguous stretch."""
    runs: list[tuple[int, int]] = []
    for b in blocks:
        if runs and runs[-1][0] + runs[-1][1] == b * block:
            runs[-1] = (runs[-1][0], runs[-1][1] + block)
        else:
            runs.append((b * block, block))
    return tuple(runs), len(blocks) * block


@dataclass(frozen=True)
class Plan:
    """Each request's requests to the server on one protocol, cache and mount, as a client
    sends them: a read's (``reads``) and what the kernel reads ahead beside them (``ahead``: a
    FUSE mount's), instead the blocks a cold cache lacks (``blocks``: each read's; () for a
    warm one) or none (a warm cache, after a stage-in), and a stage-in's copy of each file at
    its first open; each request's runs in the server's pieces (``piece``; 0: runs whole)."""

    compiled: Compiled
    key: Any  # the reads' and readahead's memo key (``read_plan``'s, ``mount_plan``'s)
    reads: tuple[tuple[Piece, ...], ...]
    ahead: tuple[tuple[Piece, ...], ...]
    blocks: tuple[tuple[int, ...], ...]
    block: int
    cache_state: str | None
    staged: bool
    piece: int

    @property
    def mounted(self) -> bool:
        """Its reads are a FUSE mount's requests (``mount_plan``'s)."""
        return self.key[0] == "mount"

    def split(self, pc: Piece) -> Piece:
        """A request's runs as the server reads them (in its pieces, ``in_pieces``)."""
        return in_pieces(pc[0], self.piece), pc[1]

    def in_pieces(self) -> Plan:
        """The plan with its reads' and readahead's runs in the server's pieces, split once
        here (memoised) and not at each request."""
        if not self.piece:
            return self
        key, memo = ("pieces", self.key, self.piece), self.compiled.memo
        if key not in memo:
            memo[key] = tuple(tuple(tuple(self.split(pc) for pc in steps) for steps in plan)
                              for plan in (self.reads, self.ahead))  # fmt: skip
        return replace(self, reads=memo[key][0], ahead=memo[key][1])

    def read_steps(self, i: int, held: set[int]) -> tuple[Piece, ...]:
        """Read ``i``'s requests: a cold cache's blocks it lacks (``held``: the blocks it
        holds, file-keyed; updated), none from a warm one or after a stage-in, else its plan."""
        if self.cache_state is not None:
            if not self.blocks:
                return ()
            f = self.compiled.files[i]
            missing = [b for b in self.blocks[i] if (f << 32) + b not in held]
            held.update((f << 32) + b for b in missing)
            return (self.split(blocks_piece(missing, self.block)),) if missing else ()
        return () if self.staged else self.reads[i]

    def copy_steps(self, i: int, copied: set[int]) -> tuple[Piece, ...]:
        """A stage-in's open ``i``: the copy of its file if it is the file's first
        (``copied``: the files copied, updated), else nothing."""
        f = self.compiled.files[i]
        if f in copied:
            return ()
        copied.add(f)
        size = self.compiled.file_sizes[f]
        return (self.split((((0, size),), size)),)

    def page_in(self, pages: dict[int, Any], f: int, runs: tuple[tuple[int, int], ...],
                readahead: float) -> tuple[int, int]:  # fmt: skip
        """The disk requests, and their bytes, that reading ``runs`` of file ``f`` (a copy's:
        below 0) costs the server, whose page cache ``pages`` holds by file (updated): a FUSE
        mount's requests through its kernel's readahead (``read_through``), else one read per
        run the cache lacks (``disk.page_in``); ``readahead``: the server's, bytes."""
        if not self.mounted or self.cache_state is not None or f < 0:
            return page_in(pages.setdefault(f, ([], [])), runs, readahead)
        file_pages = pages.get(f)
        if file_pages is None:
            file_pages = pages[f] = FilePages(max(1, int(readahead // PAGE)),
                                              -(-self.compiled.file_sizes[f] // PAGE))  # fmt: skip
        return read_through(file_pages, runs)

    def paged(self, readahead: float) -> tuple[tuple[tuple[Paged, ...], tuple[Paged, ...]], ...]:
        """A chained trace's requests with their page cache's outcomes (memoised): each
        request's steps (its reads, a cold cache's blocks, a stage-in's copy) and a read's
        readahead after them, as ``Paged``. A chain's requests go one after another, so every
        pass of every client asks its page cache (its cache blocks and copies too, all cold at
        each pass's start) the same things in the same order: the outcomes are the same for
        each, found once here instead of at each request (``readahead``: the server's, bytes)."""
        key = ("pass", self.key, self.cache_state, self.block, self.staged, self.piece, readahead)
        c = self.compiled
        if key in c.memo:
            return c.memo[key]
        plan = self.in_pieces()
        pages: dict[int, Any] = {}  # the server's page cache, by file (``page_in``)
        held: set[int] = set()
        copied: set[int] = set()

        def paged_in(f: int, steps: tuple[Piece, ...]) -> tuple[Paged, ...]:
            return tuple((runs, size, *plan.page_in(pages, f, runs, readahead))
                         for runs, size in steps)  # fmt: skip

        out: list[tuple[tuple[Paged, ...], tuple[Paged, ...]]] = []
        for i, op in enumerate(c.ops):
            f = c.files[i]
            if op == READ:
                ahead = plan.ahead[i] if plan.cache_state is None and plan.ahead else ()
                out.append((paged_in(f, plan.read_steps(i, held)), paged_in(f, ahead)))
            elif op == OPEN and plan.staged:  # a copy's key: -1 - its file
                out.append((paged_in(-1 - f, plan.copy_steps(i, copied)), ()))
            else:
                out.append(((), ()))
        c.memo[key] = tuple(out)
        return c.memo[key]

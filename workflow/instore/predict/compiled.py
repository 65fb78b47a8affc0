"""A trace prepared once for many predictions: each request's kind, file, chunks and bytes,
its recorded think time, and what it waits for and what waits for it, as the replay plans its
streams (``instore.replay.streams``)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from instore.errors import InstoreError
from instore.replay.streams import plan
from instore.replay.trace import READ_OPS, Request, Trace

# One request as the disk sees it: its runs of contiguous bytes (offset, length) in the order
# it reads them, and its bytes
Piece = tuple[tuple[tuple[int, int], ...], int]

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
    deps: tuple[int, ...]  # how many requests each waits for
    dependents: tuple[tuple[int, ...], ...]
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


def compile_trace(trace: Trace, serialise: bool = False) -> Compiled:
    """The trace's requests, their think times and waits as the replay plans them."""
    reqs = trace.requests
    if not reqs:
        raise InstoreError(f"{trace.path}: a trace with no requests", "record a job that reads")
    think = trace.think()
    p = plan(reqs, think, serialise)
    waits: list[set[int]] = [set(w) for w in p.waits]
    for stream in p.streams:
        for a, b in itertools.pairwise(stream):
            waits[b].add(a)
    dependents: list[list[int]] = [[] for _ in reqs]
    for i, w in enumerate(waits):
        for d in w:
            dependents[d].append(i)
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
        deps=tuple(len(w) for w in waits),
        dependents=tuple(tuple(d) for d in dependents),
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

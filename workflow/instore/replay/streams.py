"""Streams: the parts of a trace that a job issued one after another, told apart so that a
replay issues them side by side, as the job's threads did.

What tells them apart. XrdClRecorder records no thread: each line carries its XrdCl::File
object's address (the object id), and the parser numbers each Open of one as a ``handle`` (an
address reused after a Close is a new handle). A job reading with several threads opens the
file once per thread or task: RDataFrame with ``EnableImplicitMT(2)`` over root:// (checked
here 2026-11-26, ROOT 6.40, an 8 MB NanoAOD-like file in 2 MB clusters) opened it 6 times: once
to read the tree's metadata, once for the data frame (open until the job's end), once more on
the main thread, then once per task, the two threads' tasks open together, their requests in
flight at the same moments, each task's requests under its own object id.

An object id is not a thread, though: that job's main thread held two files open at once (it
read the second between the first's reads and its Close), as a single-threaded job reading
friends or a chain does. So the timestamps decide first: a trace in which no two file objects
ever had requests in flight at the same moment (one issued before the other's response came)
is one stream, replayed exactly as before. Otherwise the handles are grouped: a handle holds
its stream from its Open to its last read (its Close, maybe at the job's end, stays in that
stream), and joins a stream whose handles are all done reading, the one that answered last
(as a thread takes its next task when it closed its last), or starts one.

Within a stream each request waits for the stream's earlier ones (closed loop) plus its think
time. Across streams a request also waits for what it followed in the job: a stream's first
request for the latest response before it (tasks start after the main thread's reads and its
JIT), any request for the last request of every stream that had ended before it (the job's
final Close comes after its tasks). Its think time counts from the latest of those responses.

Within a stream, a request issued before the one ahead of it was answered (a client's own
asynchronous reads: uproot sends a basket batch's vector reads to XRootD together and waits for
them all; threads sharing one open file) did not wait for that response: the one ahead is
``detached``, the stream goes on once it is sent, and a later request of the stream waits for it
only if the recording had its response before that request's issue. Each request's think time
counts, as always, from the latest response before it, so the think time summed is the trace's.
``in_flight=False`` sends them one after another instead (how replays ran before 2026-12-02:
their records say ``overlapping_serialised``), as ``--serialise`` sends the whole trace.
"""

from __future__ import annotations

import bisect
import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from instore.replay.trace import Request, ThinkTimes

SERIALISE = "--serialise: every request after the previous one has completed"


@dataclass(frozen=True)
class Plan:
    """How a replay issues a trace's requests (indices into Trace.requests, sorted by start)."""

    streams: tuple[tuple[int, ...], ...]  # each stream's requests, in the order it issues them
    before: tuple[float, ...]  # think time before each request, after what it waits for
    waits: tuple[tuple[int, ...], ...]  # requests of other streams each one waits for first
    overlapping: int  # requests recorded while another was in flight
    side_by_side: int  # of those, replayed beside the ones in flight (in other streams)
    serialised: int  # of those, replayed after the ones in flight (same stream)
    serialise_reason: str | None  # why requests that overlapped are replayed one by one
    # requests whose stream goes on once they are sent, without their response (``_detach``)
    detached: frozenset[int] = frozenset()

    @property
    def waited_on(self) -> frozenset[int]:
        """The requests some other stream, or a later one of a stream that went on without
        them, waits for (only those need announcing)."""
        return frozenset(i for w in self.waits for i in w) | self.detached


class _Top2:
    """The two latest response times over distinct keys (each key's time only grows): the
    latest of any key other than a given one, in constant time."""

    def __init__(self) -> None:
        self.best: tuple[float, int | None] = (float("-inf"), None)
        self.second = float("-inf")
        self.of: dict[int, float] = {}

    def update(self, key: int, end: float) -> None:
        end = max(end, self.of.get(key, end))
        self.of[key] = end
        if key == self.best[1]:
            self.best = (end, key)
        elif end > self.best[0]:
            self.second, self.best = self.best[0], (end, key)
        elif end > self.second:
            self.second = end

    def other_than(self, key: int) -> float:
        return self.second if self.best[1] == key else self.best[0]


def concurrent_objects(requests: Sequence[Request]) -> bool:
    """Were requests of two file objects ever in flight at the same moment?"""
    ends = _Top2()
    for r in requests:
        if ends.other_than(r.handle) > r.start:
            return True
        ends.update(r.handle, r.end)
    return False


def group_handles(requests: Sequence[Request]) -> dict[int, int]:
    """handle -> stream. A handle occupies its stream from its Open to its last request but a
    Close (a file kept open to the job's end holds no thread); each, in order of opening, joins
    a stream none of whose handles is still reading then, the one whose last response (Closes
    included) came latest (the thread that just finished a task takes the next), or starts one."""
    reading: dict[int, list[float]] = {}
    for r in requests:
        span = reading.setdefault(r.handle, [r.start, r.end])
        if r.op != "Close":
            span[1] = max(span[1], r.end)
    ends_of: dict[int, list[float]] = defaultdict(list)
    for r in requests:
        ends_of[r.handle].append(r.end)
    stream_of: dict[int, int] = {}
    busy_until: list[float] = []  # each stream's handles' latest reading end
    ends: list[list[float]] = []  # each stream's responses, sorted

    def last_before(k: int, t: float) -> float:
        i = bisect.bisect_right(ends[k], t)
        return ends[k][i - 1] if i else float("-inf")

    for handle, (start, read_end) in sorted(reading.items(), key=lambda kv: kv[1][0]):
        free = [k for k, busy in enumerate(busy_until) if busy <= start]
        k = max(free, key=lambda k: last_before(k, start)) if free else len(busy_until)
        if k == len(busy_until):
            busy_until.append(read_end)
            ends.append([])
        busy_until[k] = max(busy_until[k], read_end)
        for end in ends_of[handle]:
            bisect.insort(ends[k], end)
        stream_of[handle] = k
    return stream_of


def _overlaps(requests: Sequence[Request], key: Sequence[int]) -> tuple[int, int]:
    """Requests issued while one of the same key (stream, or file object) was in flight, and
    those issued while only other keys' were."""
    ends = _Top2()
    same = other = 0
    for r, k in zip(requests, key, strict=True):
        if ends.of.get(k, float("-inf")) > r.start:
            same += 1
        elif ends.other_than(k) > r.start:
            other += 1
        ends.update(k, r.end)
    return same, other


def _cannot_tell_apart(requests: Sequence[Request]) -> str | None:
    """The one-line cause and fix when requests were in flight together on one file object."""
    same, _ = _overlaps(requests, [r.handle for r in requests])
    if not same:
        return None
    return (
        f"{same} of {len(requests)} requests were issued while another on the same file object "
        "was in flight, and the recorder writes no thread, so they cannot be told apart into "
        "streams: they are replayed one after another, which can overpredict the wall -- record "
        "the job with a file opened per thread (RDataFrame's EnableImplicitMT does) to replay "
        "them side by side"
    )


def serial_plan(requests: Sequence[Request], think: ThinkTimes, reason: str | None) -> Plan:
    """Every request after the previous one has completed, with the trace's think times."""
    return Plan((tuple(range(len(requests))),), think.before, ((),) * len(requests),
                think.overlapping, 0, think.overlapping, reason)  # fmt: skip


def _detach(requests: Sequence[Request], p: Plan) -> Plan:
    """``p`` with each stream's requests in flight together as recorded: a request whose
    successor in its stream was issued before its response is detached, and the first later
    request of the stream issued after that response waits for it."""
    detached: set[int] = set()
    waits = [set(w) for w in p.waits]
    for stream in p.streams:
        outstanding: list[int] = []
        for a, b in itertools.pairwise(stream):
            if requests[b].start < requests[a].end:
                detached.add(a)
                outstanding.append(a)
            answered = [d for d in outstanding if requests[d].end <= requests[b].start]
            waits[b].update(answered)  # (a detached ``a`` is still in flight at ``b``)
            outstanding = [d for d in outstanding if d not in answered]
    if not detached:
        return p
    overlapping = p.side_by_side + p.serialised
    return replace(p, waits=tuple(tuple(sorted(w)) for w in waits), side_by_side=overlapping,
                   serialised=0, serialise_reason=None, detached=frozenset(detached))  # fmt: skip


def stream_plan(requests: Sequence[Request], think: ThinkTimes, in_flight: bool = True) -> Plan:
    """The trace's streams side by side (one stream: exactly the serial plan), each with its
    requests in flight together as recorded (``in_flight``) or one after another."""
    p = _stream_plan(requests, think)
    return _detach(requests, p) if in_flight else p


def _stream_plan(requests: Sequence[Request], think: ThinkTimes) -> Plan:
    cause = _cannot_tell_apart(requests)
    if not concurrent_objects(requests):
        return serial_plan(requests, think, cause)
    stream_of = group_handles(requests)
    key = [stream_of[r.handle] for r in requests]
    n = max(key) + 1
    streams: list[list[int]] = [[] for _ in range(n)]
    for i, k in enumerate(key):
        streams[k].append(i)
    last = {k: s[-1] for k, s in enumerate(streams)}
    ended = {k: max(requests[i].end for i in s) for k, s in enumerate(streams)}
    by_end = sorted(range(len(requests)), key=lambda i: requests[i].end)
    before: list[float] = []
    waits: list[tuple[int, ...]] = []
    own_end: dict[int, float] = {}
    joined: dict[int, set[int]] = defaultdict(set)
    latest = -1  # the request whose response came latest, among those before this one's issue
    pos = 0
    first_start = requests[0].start if requests else 0.0
    for r, k in zip(requests, key, strict=True):
        # strictly before its issue: every wait points to an earlier start, so none can cycle
        while pos < len(by_end) and requests[by_end[pos]].end < r.start:
            latest, pos = by_end[pos], pos + 1
        deps = {last[s] for s in range(n) if s != k and s not in joined[k] and ended[s] < r.start}
        joined[k].update(key[d] for d in deps)
        if k not in own_end and latest >= 0 and key[latest] != k:
            deps.add(latest)
        after = [requests[d].end for d in deps]
        if k in own_end:
            after.append(own_end[k])
        before.append(max(0.0, r.start - (max(after) if after else first_start)))
        waits.append(tuple(sorted(deps)))
        own_end[k] = max(own_end.get(k, r.end), r.end)
    serialised, side_by_side = _overlaps(requests, key)
    if serialised and cause is None:
        cause = (
            f"{serialised} of {len(requests)} requests were issued while another of the same "
            "stream (files one thread had open in turn) was in flight: replayed one after "
            "another -- nothing to do, unless the job opened them from several threads"
        )
    reason = cause if serialised else None
    return Plan(tuple(tuple(s) for s in streams), tuple(before), tuple(waits),
                think.overlapping, side_by_side, serialised, reason)  # fmt: skip


def plan(requests: Sequence[Request], think: ThinkTimes, serialise: bool = False,
         in_flight: bool = True) -> Plan:  # fmt: skip
    """The replay's plan: the streams side by side, each stream's requests in flight together
    as recorded (``in_flight``), or (``serialise``) every request after the previous one."""
    if serialise:
        return serial_plan(requests, think, SERIALISE)
    return stream_plan(requests, think, in_flight)

"""The link shared by its flows, as TCP shares a bottleneck: processor sharing.

Flows that cross the link at once each get an equal share of its rate, so flows that start
together end together: 16 clients asking for 484 kB each at once over 100 Mbit/s all wait the
0.62 s the 7.7 MB take, not 39 ms for the first and 0.62 s for the last as one queue would
serve them. Measured so (the WAN's load section of the run of 323eb56, agc-load, whose clients
start together): at 4, 16 and 64 clients every client's largest read took about the link's
time for every client's bytes (over XRootD, the 99th percentile of each client's reads 0.16-0.18
s at 4, 0.59-0.68 s at 16, 1.3-2.3 s at 64), and 15 of the 16 clients' passes took 2.56-2.75 s,
where one queue runs its first pass from 2.0 s (its first client) to 2.66 s (its last).

``SharedLink`` keeps the flows by the share of service each still needs (virtual time: the
service every active flow has had), so each arrival and departure costs a heap operation;
``Flow`` is one response waiting on it: what the model finishes when the flow leaves the link
(its own window's ramp, the disk's streaming and the return half of the round trip still bound
when the response is complete: ``model.predict``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Flow:
    """One response crossing the link: when its bytes reach the link (``start``), how many,
    and what finishing it needs (``Simulation.remote``, simulation.py)."""

    start: float
    size: float
    alone: float  # seconds its bytes take with the link to itself (its window's ramp in them)
    d_end: float  # when the disk has streamed its bytes
    t: float  # when the request was sent
    hop: float
    cost: float
    queued: float  # the disk queue's wait
    d_seek: float  # the disk requests' service time
    streamed: float  # the disk's streaming time (d_end - d_start - d_seek)
    ramp: float  # what the window's ramp adds to the bytes' own time
    own: list[float]
    # the request's steps left when it is off the link (``Simulation.run``: key,
    # steps, the next one, the read's start, hop, server time), for client ``c``'s request
    # ``i`` (-1: read ahead, nothing waits on it)
    then: Any = None
    c: int = 0
    i: int = -1

    def finish(self, left: float, per_flow: float) -> float:
        """Its response, its bytes off the link at ``left``: no sooner than its window and
        the disk's streaming allow, then the return half of the round trip; its parts of the
        time (``PARTS``' order) added to ``own`` (``per_flow``: seconds a byte of one flow).
        (Conditionals where max and min would do: the same values, at every response.)"""
        other = left if left > self.d_end else self.d_end
        flowed = self.start + self.alone
        hop = self.hop
        done = (other if other > flowed else flowed) + hop / 2
        late = flowed - other
        late = late if late > 0.0 else 0.0
        ramp = late if late < self.ramp else self.ramp  # as far as it is late
        # the disk's streaming overlaps the transfer: only what the link does not hide
        unhidden = self.streamed - self.size * per_flow
        on_disk = self.d_seek + (unhidden if unhidden > 0.0 else 0.0)
        own, cost, queued = self.own, self.cost, self.queued
        own[1] += hop + ramp
        own[2] += cost
        own[3] += on_disk
        own[4] += queued
        own[5] += done - self.t - hop - cost - queued - on_disk - ramp
        return done


class SharedLink:
    """A link of ``rate`` bytes/s shared equally by the flows on it (processor sharing)."""

    __slots__ = ("flows", "rate", "seq", "t", "v", "version")

    def __init__(self, rate: float) -> None:
        self.rate = rate
        self.t = 0.0  # the time the state is at
        self.v = 0.0  # the service (bytes) every flow on the link has had since the start
        self.flows: list[tuple[float, int, Flow]] = []  # (service it leaves at, order, flow)
        self.seq = 0
        self.version = 0  # bumped at every change: a departure scheduled before it is stale

    def advance(self, t: float) -> None:
        """The state at ``t``: every flow on the link served its share since (inline in
        ``arrive`` and ``depart``, which the model calls at every flow)."""
        if t > self.t:
            if self.flows:
                self.v += (t - self.t) * self.rate / len(self.flows)
            self.t = t

    def arrive(self, t: float, flow: Flow) -> None:
        """``flow``'s bytes reach the link at ``t`` (not before the state's time)."""
        flows = self.flows
        if t > self.t:  # advance(t)
            if flows:
                self.v += (t - self.t) * self.rate / len(flows)
            self.t = t
        self.seq += 1
        heapq.heappush(flows, (self.v + flow.size, self.seq, flow))
        self.version += 1

    def next_departure(self) -> float | None:
        """When the flow nearest its end leaves, if none arrives before (None: idle)."""
        flows = self.flows
        if not flows:
            return None
        left = flows[0][0] - self.v
        return self.t + (left if left > 0.0 else 0.0) * len(flows) / self.rate

    def depart(self, t: float) -> Flow:
        """The flow that leaves at ``t`` (``next_departure``)."""
        flows = self.flows
        if t > self.t:  # advance(t)
            if flows:
                self.v += (t - self.t) * self.rate / len(flows)
            self.t = t
        self.version += 1
        return heapq.heappop(flows)[2]

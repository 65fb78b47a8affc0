"""The model's discrete-event simulation (``instore.predict.model`` says what it models and
runs one per prediction): a ``Simulation`` holds the site in the loop's units, the job's plans
and every client's state; its loop takes the requests sent, the flows reaching the link and the
link's departures in time order, and ``prediction`` says what the passes gave."""

from __future__ import annotations

import heapq
import math
from typing import Any

from instore.access import FUSE, POSIX, STAGE_IN, XROOTD
from instore.errors import InstoreError
from instore.predict.compiled import (
    CLOSE,
    OPEN,
    READ,
    STAT,
    Compiled,
    Paged,
    Piece,
    Plan,
    block_plan,
    chained,
    read_plan,
)
from instore.predict.disk import Disk
from instore.predict.link import Flow, SharedLink
from instore.predict.profile import Profile, Protocol
from instore.predict.readahead import MAX_PAGES, PAGE, mount_plan
from instore.predict.scenario import Scenario, checked
from instore.predict.tcp import INITIAL_WINDOW_BYTES, Connection

MB = 1e6
LOCAL = (POSIX,)


# a client's first pass as the critical path reads it: its last response and request, each
# request's own time by part and the request whose response set its start
First = tuple[tuple[float, int], list[list[float] | None], list[int]]


class Simulation:
    """One ``predict`` call: the site, the job's plans and every client's state, shared by the
    event loop and its steps (slotted: the loop reads them at every event)."""

    __slots__ = (
        "ahead", "arriving", "began", "block", "c_rate", "c_rtt", "cache_state", "clients",
        "compiled", "connect", "connected", "connections", "copied", "cpu_mb", "cpu_req",
        "dependents", "disk", "extra", "files", "first", "flow", "got", "heap", "held", "hop_read",
        "initial", "last", "lead", "left", "link", "local", "n", "nbytes", "now", "on_issue", "ops",
        "origin_server", "own_of", "paged", "per_bw", "per_flow", "piece", "plan", "planned",
        "profile", "proto_name", "quiet", "readahead", "ready", "remaining", "restart", "rtt", "sc",
        "sent", "server", "setter", "size_on_link", "speed", "staged", "starts", "stretch", "tail",
        "think", "until", "walls", "whole",
    )  # fmt: skip

    def __init__(self, compiled: Compiled, profile: Profile, sc: Scenario) -> None:
        self.compiled, self.profile, self.sc = compiled, profile, sc
        self.cache_state = sc.xcache  # the scenario's cache state (None: no XCache in front)
        self.proto_name, proto = profile.protocol(sc.protocol)
        self.speed = checked(sc, profile)
        self.clients = max(1, int(sc.clients))
        self._site(profile, proto)
        self._job(compiled, profile, proto)
        self._start()

    def _site(self, profile: Profile, proto: Protocol) -> None:
        """The link, the disk, the server and the cache in the loop's units (s, bytes/s), so
        that no step converts a profile's figure again."""
        self.rtt = rtt = (profile.rtt_ms.value or 0.0) / 1000.0
        bw = (profile.bandwidth_mbit.value or 0.0) * 1e6 / 8.0
        if bw <= 0:
            raise InstoreError(f"site {profile.site}: a link of no bandwidth",
                               "give bandwidth_mbit above 0")  # fmt: skip
        self.flow = flow = profile.flow_bytes_per_s(proto)
        seq = (profile.disk_seq_mb_per_s.value or 1e9) * MB
        seek = (profile.disk_random_ms.value or 0.0) / 1000.0
        burst = float(profile.disk_burst_ios.value or 0.0)
        # the disk's requests side by side: the nearest whole number of servers, each at the
        # service time fio measured one read at a time (what one client alone waits), so
        # together they serve that many times its IOPS, within the rounding of what fio served
        # 16 at once; a ratio within noise of 1 (1.0002 on a throttled spindle) is one server
        servers = max(1, math.floor((profile.disk_parallel.value or 1.0) + 0.5))
        self.server = server = (proto.request_ms.value or 0.0) / 1000.0
        self.connect = proto.connect_trips(self.proto_name)  # round trips before a first request
        self.readahead = profile.readahead_kb * 1024
        # the most the server reads from its disk at once (XrdHttp's 128 kB; 0: a run whole)
        self.piece = int(proto.server_read_kb * 1024) if proto.server_read_kb else 0
        self.local = local = self.proto_name in LOCAL
        self.staged = self.proto_name == STAGE_IN
        cache = profile.xcache
        c_rtt, c_rate, block, origin_server = 0.0, 1e9 * MB, 1 << 20, server
        if cache is not None and self.cache_state is not None:
            c_rtt = (cache.local_rtt_ms.value or 0.0) / 1000.0
            c_rate = (cache.local_mb_per_s.value or 1e9) * MB
            block = int((cache.block_kb.value or 1024) * 1024)
            origin_server = (profile.protocols.get(XROOTD, proto).request_ms.value or 0.0) / 1000.0
        self.c_rtt, self.c_rate = c_rtt, c_rate
        self.block, self.origin_server = block, origin_server
        self.link = SharedLink(bw)  # the flows share it (processor sharing: link.py)
        self.disk = Disk(servers, seek, seq, burst)  # a FIFO queue to its servers (disk.py)
        self.per_flow = 1.0 / flow
        self.per_bw = 1.0 / bw
        self.size_on_link = not local
        self.hop_read = 0.0 if local else rtt
        # each client's connection to the server (its window grows and, idle, shrinks: tcp.py)
        self.initial = (profile.tcp_initial_window_kb.value or 0.0) * 1024 or INITIAL_WINDOW_BYTES
        self.restart = bool(profile.tcp_slow_start_after_idle.value)

    def _job(self, compiled: Compiled, profile: Profile, proto: Protocol) -> None:
        """The job as this site runs it: think time stretched by shared cores and the CPU's
        speed, the client's CPU the recording lacked, and each request's plan (the requests
        it becomes for this protocol, cache and mount), prepared once for every client."""
        sc = self.sc
        cores = max(1, profile.cores)
        self.stretch = stretch = 1.0 / self.speed
        if sc.jobs_per_node:
            self.stretch = stretch = stretch * max(1.0, sc.jobs_per_node * compiled.threads / cores)
        cpu_req = cpu_mb = 0.0
        if sc.recorded_on is not None:
            cpu_req = ((profile.client_cpu_request_us.value or 0.0)
                       - (sc.recorded_on.client_cpu_request_us.value or 0.0)) / 1e6  # fmt: skip
            cpu_mb = ((profile.client_cpu_mb_ms.value or 0.0)
                      - (sc.recorded_on.client_cpu_mb_ms.value or 0.0)) / 1000.0  # fmt: skip
        self.cpu_req, self.cpu_mb = cpu_req, cpu_mb
        # each read's CPU the recording lacked (None: none; adding 0.0 would change nothing)
        self.extra = None
        if cpu_req or cpu_mb:
            self.extra = tuple(cpu_req + cpu_mb * size / MB for size in compiled.nbytes)
        self.n = compiled.requests
        self.ops, self.files, self.nbytes = compiled.ops, compiled.files, compiled.nbytes
        self.dependents, self.on_issue = compiled.dependents, compiled.on_issue
        self.think = [b * stretch for b in compiled.before]  # each request's, before it
        max_read = proto.max_read_kb * 1024 if proto.max_read_kb else None
        ahead: tuple[tuple[Piece, ...], ...] = ()
        if self.proto_name == FUSE:  # the kernel's pages and readahead in front of the mount
            most = int(max_read // PAGE) if max_read else MAX_PAGES
            mounted, key = mount_plan(compiled, most), ("mount", most)
            reads, ahead = tuple(w for w, _ in mounted), tuple(a for _, a in mounted)
        else:
            key = ("reads", proto.vector, max_read)
            reads = read_plan(compiled, proto.vector, max_read)
        blocks = block_plan(compiled, self.block) if sc.xcache == "cold" else ()
        self.plan = Plan(compiled, key, reads, ahead, blocks, self.block, self.cache_state,
                         self.staged, self.piece).in_pieces()  # fmt: skip
        self.ahead = self.plan.ahead
        self.lead = compiled.lead_s * stretch
        self.tail = compiled.tail_s * stretch
        # a chain's page cache outcomes, the same at every pass (None: asked at each request,
        # of the client's own page cache)
        self.planned: tuple[tuple[tuple[Paged, ...], tuple[Paged, ...]], ...] | None = None
        if chained(compiled):
            self.planned = self.plan.paged(self.readahead)

    def _start(self) -> None:
        """Every client at the start of its first pass, and the events that begin it."""
        clients, n, lead = self.clients, self.n, self.lead
        # the link is a lone flow's until then: one finished alone, no event in between
        self.quiet = 0.0
        self.now = 0.0  # the time of the event in hand
        # file -> the byte ranges the page cache holds (starts, ends; sorted, disjoint)
        self.paged: list[dict[int, Any]] = [{} for _ in range(clients)]  # Plan.page_in's
        self.held: list[set[int]] = [set() for _ in range(clients)]  # cached blocks (file-keyed)
        self.copied: list[set[int]] = [set() for _ in range(clients)]  # staged-in files
        self.connected = [False] * clients
        self.remaining = [list(self.compiled.deps) for _ in range(clients)]
        self.ready = [[0.0] * n for _ in range(clients)]
        # each request's own time by part (PARTS' order) and the request whose response set
        # its start: the critical path is walked back from each client's last response
        self.own_of: list[list[list[float] | None]] = [[None] * n for _ in range(clients)]
        self.setter = [[-1] * n for _ in range(clients)]
        self.last = [(lead, -1)] * clients  # each client's latest response and its request
        # passes (a fixed time: pass after pass until it is up): each client's walls, when its
        # pass in hand began, its requests left, its whole passes and the read bytes answered
        # within the time in the pass in hand, and its first pass (``First``)
        self.until = self.sc.until_s or 0.0
        self.walls: list[list[float]] = [[] for _ in range(clients)]
        self.began, self.left = [0.0] * clients, [n] * clients
        self.whole, self.got = [0] * clients, [0] * clients
        self.first: list[First | None] = [None] * clients
        self.starts = starts = [i for i in range(n) if self.compiled.deps[i] == 0]
        # events: (time, client, request) a request sent; (time, -2, key) a flow reaching the
        # link; (time, -1, version) the link's next departure (stale once the link changed)
        self.heap: list[tuple[float, int, int]] = []
        heap, think = self.heap, self.think
        for c in range(clients):
            heap.extend((lead + think[i], c, i) for i in starts)
        heapq.heapify(heap)
        self.arriving: dict[int, Flow] = {}  # flows on their way to the link, by key
        self.sent = 0
        self.connections = [self.connection(self.rtt) for _ in range(clients)]

    def connection(self, hop: float) -> Connection:
        """A new connection to the server: a client's, or a stage-in copy's own."""
        return Connection(hop, self.flow, self.initial, self.restart)

    def loop(self) -> None:
        """The events in time order until none is left: requests sent, flows reaching the
        link, the link's departures (the hot loop: what it reads often it holds in locals)."""
        heap, link, arriving, per_flow = self.heap, self.link, self.arriving, self.per_flow
        pop, push, run, request = heapq.heappop, heapq.heappush, self.run, self.request
        while heap:
            t, c, i = pop(heap)
            self.now = t
            if c >= 0:  # a request sent
                request(c, i, t)
            elif c == -1:  # the link's next departure, unless the link changed since
                if i == link.version:
                    fl = link.depart(t)
                    if link.flows:
                        push(heap, (link.next_departure(), -1, link.version))
                    done = fl.finish(t, per_flow)
                    if fl.i >= 0:  # the request's next step, or its response
                        key, steps, k, start, hop, cost = fl.then
                        run(fl.c, fl.i, key, steps, k, done, start, hop, cost, fl.own)
            else:  # a flow reaches the link
                self.arrive(t, arriving.pop(i))

    def request(self, c: int, i: int, t: float) -> None:
        """Client ``c``'s request ``i`` sent at ``t``: a read's requests across the link (a
        cold cache's blocks instead, none after a stage-in), a stage-in's copy at a file's
        first open, or the round trips an open, close or stat costs."""
        if self.on_issue[i]:  # what its stream sends next without its response: sent now
            self.release(c, self.on_issue[i], t, -2 - i)  # (its critical path: from i's send)
        op = self.ops[i]
        own = [0.0] * 6
        planned = self.planned
        if op == READ:
            steps = planned[i][0] if planned is not None else self.plan.read_steps(i, self.held[c])
            if self.cache_state is not None:  # a cold cache fetches the blocks it lacks first
                self.run(c, i, self.files[i], steps, 0, t, t, self.rtt, self.origin_server, own)
            else:
                self.run(c, i, self.files[i], steps, 0, t, t, self.hop_read, self.server, own)
            return
        end, rtt = t, self.rtt
        if self.staged:  # a file's first open copies it; the rest cost nothing
            if op == OPEN:
                copy = planned[i][0] if planned else self.plan.copy_steps(i, self.copied[c])
                if copy:
                    own[1] += rtt  # the copy's own open
                    self.run(c, i, -1 - self.files[i], copy, 0, t + rtt, t, rtt, self.server, own)
                    return
        elif self.local:  # in place: no round trip
            pass
        elif op == OPEN:
            trips = 1 if self.connected[c] else 1 + self.connect  # its first open connects first
            self.connected[c] = True
            hop = self.c_rtt if self.cache_state is not None else rtt
            end = t + trips * hop + self.server
            own[1] += trips * hop
            own[2] += self.server
        elif op in (CLOSE, STAT):
            hop = self.c_rtt if self.cache_state is not None else rtt
            end = t + hop
            own[1] += hop
        self.respond(c, i, end, own)

    def remote(self, c: int, key: int, pc: Piece | Paged, t: float, hop: float, cost: float,
               own: list[float]) -> float | Flow:  # fmt: skip
        """One request across the link: a round trip, the server, the disk (a FIFO queue to
        its servers, the first free one taking it: one request, its service time and its
        bytes, for each run the page cache does not hold), the transfer (the link shared by
        the flows on it, a flow no faster than its window). Its response's time, or the
        ``Flow`` it waits on where other flows may share the link with it."""
        if self.planned is None:  # client c's page cache in this pass (runs in pieces already)
            runs, size = pc  # type: ignore[misc]
            ios, disk_bytes = self.plan.page_in(self.paged[c], key, runs, self.readahead)
        else:
            _, size, ios, disk_bytes = pc  # type: ignore[misc]
        arrive = t + hop / 2 + cost
        d_start, d_seek, d_end = self.disk.serve(arrive, ios, disk_bytes)
        if not self.size_on_link:
            own[1] += hop
            own[2] += cost
            own[3] += d_end - d_start
            own[4] += d_start - arrive
            own[5] += d_end - t - hop - cost - (d_end - arrive)
            return d_end
        link = self.link
        # the flow's bytes reach the link once the disk has them, not before the link's time
        # (nor the event in hand's, nor the end of a lone flow finished without an event)
        l_start = d_start + d_seek
        if self.quiet > l_start:
            l_start = self.quiet
        if self.now > l_start:
            l_start = self.now
        if link.t > l_start:
            l_start = link.t
        # a copy (stage-in: key < 0) opens a connection of its own
        conn = self.connection(hop) if key < 0 else self.connections[c]
        flowing, ramp = conn.send(size, l_start) if hop else (size * self.per_flow, 0.0)
        fl = Flow(l_start, size, flowing, d_end, t, hop, cost, d_start - arrive, d_seek,
                  d_end - d_start - d_seek, ramp, own)  # fmt: skip
        alone = l_start + size * self.per_bw
        heap = self.heap
        if not link.flows and (not heap or heap[0][0] >= alone):  # no flow can meet it
            self.quiet = alone
            return fl.finish(alone, self.per_flow)
        return fl

    def after(self, c: int, i: int, start: float, end: float, own: list[float]) -> float:
        """A read's response after its requests: the cache's own read, what the kernel reads
        ahead sent on (queued, not waited for), the client's CPU."""
        if self.cache_state is not None:
            size = self.nbytes[i]
            end += self.c_rtt + size / self.c_rate
            own[1] += self.c_rtt
            own[5] += size / self.c_rate
        elif self.ahead:
            f, hop, server, planned = self.files[i], self.hop_read, self.server, self.planned
            for pc in self.ahead[i] if planned is None else planned[i][1]:
                fl = self.remote(c, f, pc, start, hop, server, [0.0] * 6)
                if fl.__class__ is Flow:
                    self.send(fl)  # type: ignore[arg-type]
        if self.extra is None:
            return end
        own[0] += self.extra[i]
        return end + self.extra[i]

    def run(self, c: int, i: int, key: int, steps: tuple[Piece, ...] | tuple[Paged, ...], k: int,
            t: float, start: float, hop: float, cost: float, own: list[float]) -> None:  # fmt: skip
        """Request ``i``'s requests across the link in turn from the ``k``-th (a read's, a cold
        cache's blocks, a stage-in's copy: ``key`` < 0), on to a flow it waits on (the rest
        when its flow is off the link) or to its response."""
        end: float | Flow = t
        remote, n = self.remote, len(steps)
        while k < n:
            end = remote(c, key, steps[k], end, hop, cost, own)  # type: ignore[arg-type]
            k += 1
            if end.__class__ is Flow:
                end.c, end.i, end.then = c, i, (key, steps, k, start, hop, cost)  # type: ignore[union-attr]
                self.send(end)  # type: ignore[arg-type]
                return
        self.respond(c, i, end if key < 0 else self.after(c, i, start, end, own), own)  # type: ignore[arg-type]

    def send(self, fl: Flow) -> None:
        """``fl`` on its way to the link: there at once if nothing happens before."""
        heap = self.heap
        if not heap or heap[0][0] >= fl.start:
            self.arrive(fl.start, fl)
            return
        key = self.sent = self.sent + 1
        self.arriving[key] = fl
        heapq.heappush(heap, (fl.start, -2, key))

    def arrive(self, t: float, fl: Flow) -> None:
        """``fl``'s bytes on the link at ``t``, and the link's next departure as an event
        (made stale by any change to the link)."""
        link = self.link
        link.arrive(t, fl)
        heapq.heappush(self.heap, (link.next_departure(), -1, link.version))

    def release(self, c: int, followers: tuple[int, ...], at: float, by: int) -> None:
        """``followers`` of client ``c`` held by a request until ``at``: each sent once nothing
        else holds it, its think time after (``by``: what set its start, ``setter``'s code)."""
        r, rem, who = self.ready[c], self.remaining[c], self.setter[c]
        for j in followers:
            if at >= r[j]:
                r[j] = at
                who[j] = by
            rem[j] -= 1
            if not rem[j]:
                heapq.heappush(self.heap, (r[j] + self.think[j], c, j))

    def respond(self, c: int, i: int, end: float, own: list[float]) -> None:
        """Request ``i``'s response at ``end``: kept for the critical path, and the requests
        that waited on it sent once nothing else holds them (their think time after)."""
        self.own_of[c][i] = own
        last = self.last
        if end >= last[c][0]:
            last[c] = (end, i)
        if end <= self.until and self.ops[i] == READ:
            self.got[c] += self.nbytes[i]
        self.release(c, self.dependents[i], end, i)
        left = self.left
        left[c] -= 1
        if not left[c]:
            self.next_pass(c)

    def next_pass(self, c: int) -> None:
        """Client ``c``'s pass is over: kept, and within a fixed time the next one begins
        (on its own copy, as the replayer runs them: cold, its connection kept)."""
        n, lead = self.n, self.lead
        end = self.last[c][0] + self.tail
        self.walls[c].append(end - self.began[c])
        if self.first[c] is None:
            self.first[c] = (self.last[c], self.own_of[c], self.setter[c])
        if end > self.until:
            return
        self.whole[c] += 1
        self.got[c] = 0
        self.began[c] = end
        self.last[c] = (end + lead, -1)
        self.own_of[c], self.setter[c] = [None] * n, [-1] * n
        self.remaining[c], self.ready[c], self.left[c] = list(self.compiled.deps), [0.0] * n, n
        self.paged[c], self.held[c], self.copied[c] = {}, set(), set()
        think = self.think
        for j in self.starts:
            heapq.heappush(self.heap, (end + lead + think[j], c, j))

"""The model: a discrete-event simulation of a trace's requests against a site profile.

What it does, request by request (``Compiled`` prepares a trace once, ``predict`` runs it):

- **Think time as recorded.** Each request is issued its recorded think time after what it
  waits for (the replay's plan, ``instore.replay.streams``): the earlier request of its stream
  (closed loop), and, for a multi-threaded job, the requests of other streams it followed. The
  job's lead-in and tail are added as recorded. With ``jobs_per_node`` above the node's cores the
  think time stretches as the jobs share them; with ``cpu_speed`` (a worker whose CPU runs the
  job that many times as fast as the recording's) think time and CPU are divided by it.
- **A request is a round trip plus its bytes.** A read (a vector read too, where the protocol
  sends it as one request) costs the RTT, the protocol's server time per request, the disk and
  the transfer; a protocol without vector reads sends one request per chunk, in turn. A FUSE
  mount is read through the kernel's page cache (``instore.predict.readahead``): the pages a
  read lacks go as the mount's requests (at most 128 kB, read ahead as the kernel reads any
  file), each contiguous stretch one round trip flowing at the mount's bytes in flight, in
  turn; what the kernel reads ahead beyond the read is queued at the server, not waited for.
  Open costs a round trip (two for a client's first: the connection), Close one, a Stat sent
  to the server one (one answered from the client's cache none).
- **Streams side by side**: requests of different streams are in flight at once, as recorded.
- **A link shared by its flows** as TCP shares it (``instore.predict.link``): the flows on it
  at once share its bandwidth equally, so flows that start together end together; one flow is
  no faster than its TCP window / RTT where the window binds, and each client's connection
  ramps its window up by round trips, again after an idle spell (``instore.predict.tcp``), a
  stage-in copy on a connection of its own.
- **A disk queueing every client's requests, behind a page cache** (``instore.predict.disk``):
  a chunk the page cache holds costs no disk time; any other is one disk request that reads
  the chunk and, continuing the file, the readahead after it: a FIFO queue to the disk's
  servers (``disk_parallel``, rounded), the random read's service time (1 / IOPS: every
  request counts, as on an IOPS-limited disk) plus its bytes / sequential rate.
- **Clients** (the load section; jobs on many nodes) all read the same site at once, each its
  own copy of the files; their requests meet in the disk's queue and on the link. Given a fixed
  time (``until_s``) each client replays pass after pass until it is up, as the replayer does,
  each pass on a copy of its own (cold), its connection kept.
- **XCache**: warm, every read is served by the cache (its local round trip and rate); cold,
  a read first fetches the cache blocks it touches that the cache does not hold yet from the
  origin (one origin round trip, the blocks' bytes over the link and from the origin's disk).
- **posix** reads the disk in place (no round trip, no link); **stage-in** copies each file
  across the link at its first open, then reads it from the worker's page cache.

CPU is defined over the span the trace covers: the recorded job's CPU time (its think time
when the trace has none), plus the client's CPU per request and per MB where the profile's
client differs from the recording's, and never more than the job's threads (its streams) times
the predicted wall: the CPU efficiency per core is at most 1.

Where the time goes (``breakdown``, ``scenario.critical_path``) is per client (the mean over
clients, first passes), in seconds summing to its wall: think, round trips (what TCP's window
adds to a response's bytes among them), server, disk, disk queue, transfer (the bytes at the
flow's rate and their share of the link), along the critical path: the chain of requests, each
started by the response it waited for last, that ends with the job's last response.
"""

from __future__ import annotations

import heapq
import math

from instore.access import FUSE, POSIX, STAGE_IN, XROOTD
from instore.errors import InstoreError
from instore.predict.compiled import (
    CLOSE,
    OPEN,
    READ,
    STAT,
    Compiled,
    Piece,
    block_plan,
    blocks_piece,
    read_plan,
)
from instore.predict.disk import Disk, page_in
from instore.predict.link import Flow, SharedLink
from instore.predict.profile import Profile
from instore.predict.readahead import MAX_PAGES, PAGE, mount_plan
from instore.predict.scenario import Prediction, Scenario, checked, critical_path
from instore.predict.tcp import INITIAL_WINDOW_BYTES, Connection

MB = 1e6
LOCAL = (POSIX,)


def predict(compiled: Compiled, profile: Profile, scenario: Scenario | None = None) -> Prediction:
    """Simulate ``scenario.clients`` copies of the trace's job against the profile's site."""
    sc = scenario or Scenario()
    proto_name, proto = profile.protocol(sc.protocol)
    speed = checked(sc, profile)
    clients = max(1, int(sc.clients))
    rtt = (profile.rtt_ms.value or 0.0) / 1000.0
    bw = (profile.bandwidth_mbit.value or 0.0) * 1e6 / 8.0
    if bw <= 0:
        raise InstoreError(f"site {profile.site}: a link of no bandwidth",
                           "give bandwidth_mbit above 0")  # fmt: skip
    flow = profile.flow_bytes_per_s(proto)
    seq = (profile.disk_seq_mb_per_s.value or 1e9) * MB
    seek = (profile.disk_random_ms.value or 0.0) / 1000.0
    burst = float(profile.disk_burst_ios.value or 0.0)
    # the disk's requests side by side: the nearest whole number of servers, each at the
    # service time fio measured one read at a time (what one client alone waits), so together
    # they serve that many times its IOPS, within the rounding of what fio served 16 at once;
    # a ratio within noise of 1 (1.0002 on a throttled spindle) is one server, not two
    servers = max(1, math.floor((profile.disk_parallel.value or 1.0) + 0.5))
    server = (proto.request_ms.value or 0.0) / 1000.0
    readahead = profile.readahead_kb * 1024
    max_read = proto.max_read_kb * 1024 if proto.max_read_kb else None
    local = proto_name in LOCAL
    staged = proto_name == STAGE_IN
    cache = profile.xcache
    c_rtt, c_rate, block, origin_server = 0.0, 1e9 * MB, 1 << 20, server
    if cache is not None and sc.xcache is not None:
        c_rtt = (cache.local_rtt_ms.value or 0.0) / 1000.0
        c_rate = (cache.local_mb_per_s.value or 1e9) * MB
        block = int((cache.block_kb.value or 1024) * 1024)
        origin_server = (profile.protocols.get(XROOTD, proto).request_ms.value or 0.0) / 1000.0
    cores = max(1, profile.cores)
    stretch = 1.0 / speed
    if sc.jobs_per_node:
        stretch *= max(1.0, sc.jobs_per_node * compiled.threads / cores)
    cpu_req = cpu_mb = 0.0
    if sc.recorded_on is not None:
        cpu_req = ((profile.client_cpu_request_us.value or 0.0)
                   - (sc.recorded_on.client_cpu_request_us.value or 0.0)) / 1e6  # fmt: skip
        cpu_mb = ((profile.client_cpu_mb_ms.value or 0.0)
                  - (sc.recorded_on.client_cpu_mb_ms.value or 0.0)) / 1000.0  # fmt: skip

    n = compiled.requests
    ops, files, nbytes = compiled.ops, compiled.files, compiled.nbytes
    before, dependents = compiled.before, compiled.dependents
    ahead: tuple[tuple[Piece, ...], ...] = ()
    if proto_name == FUSE:  # the kernel's pages and readahead in front of the mount
        mounted = mount_plan(compiled, int(max_read // PAGE) if max_read else MAX_PAGES)
        reads, ahead = tuple(w for w, _ in mounted), tuple(a for _, a in mounted)
    else:
        reads = read_plan(compiled, proto.vector, max_read)
    blocks = block_plan(compiled, block) if sc.xcache == "cold" else ()
    lead = compiled.lead_s * stretch
    tail = compiled.tail_s * stretch
    link = SharedLink(bw)  # the flows share it (processor sharing: link.py)
    # the link is a lone flow's until then: one finished alone, no event in between
    quiet = [0.0]
    now = [0.0]  # the time of the event in hand
    disk = Disk(servers, seek, seq, burst)  # a FIFO queue to its servers (disk.py)
    # file -> the byte ranges the page cache holds (starts, ends; sorted, disjoint)
    paged: list[dict[int, tuple[list[int], list[int]]]] = [{} for _ in range(clients)]
    held: list[set[int]] = [set() for _ in range(clients)]  # cached blocks (file-keyed)
    copied: list[set[int]] = [set() for _ in range(clients)]  # staged-in files
    connected = [False] * clients
    remaining = [list(compiled.deps) for _ in range(clients)]
    ready = [[0.0] * n for _ in range(clients)]
    # each request's own time by part (PARTS' order) and the request whose response set its
    # start: the critical path is walked back from each client's last response at the end
    own_of: list[list[list[float] | None]] = [[None] * n for _ in range(clients)]
    setter = [[-1] * n for _ in range(clients)]
    last = [(lead, -1)] * clients  # each client's latest response and its request
    # passes (a fixed time: pass after pass until it is up): each client's walls, when its
    # pass in hand began, its requests left, its whole passes and the read bytes answered
    # within the time in the pass in hand, and its first pass's (last response, own, setter)
    until = sc.until_s or 0.0
    walls: list[list[float]] = [[] for _ in range(clients)]
    began, left, whole, got = [0.0] * clients, [n] * clients, [0] * clients, [0] * clients
    first: list[tuple[tuple[float, int], list[list[float] | None], list[int]] | None]
    first = [None] * clients
    roots = [i for i in range(n) if compiled.deps[i] == 0]
    # events: (time, client, request) a request sent; (time, -2, key) a flow reaching the
    # link; (time, -1, version) the link's next departure (stale once the link changed)
    heap: list[tuple[float, int, int]] = []
    for c in range(clients):
        heap.extend((lead + before[i] * stretch, c, i) for i in roots)
    heapq.heapify(heap)
    arriving: dict[int, Flow] = {}  # flows on their way to the link, by key
    sent = [0]
    per_flow = 1.0 / flow
    per_bw = 1.0 / bw
    # each client's connection to the server (its window grows and, idle, shrinks: tcp.py)
    initial = (profile.tcp_initial_window_kb.value or 0.0) * 1024 or INITIAL_WINDOW_BYTES
    restart = bool(profile.tcp_slow_start_after_idle.value)

    def connection(hop: float) -> Connection:
        return Connection(hop, flow, initial, restart)

    connections = [connection(rtt) for _ in range(clients)]

    def remote(c: int, key: int, pc: Piece, t: float, hop: float, cost: float,
               own: list[float]) -> float | Flow:  # fmt: skip
        """One request across the link: a round trip, the server, the disk (a FIFO queue to
        its servers, the first free one taking it: one request, its service time and its
        bytes, for each run the page cache does not hold), the transfer (the link shared by
        the flows on it, a flow no faster than its window). Its response's time, or the
        ``Flow`` it waits on where other flows may share the link with it."""
        runs, size = pc
        ios, disk_bytes = page_in(paged[c].setdefault(key, ([], [])), runs, readahead)
        arrive = t + hop / 2 + cost
        d_start, d_seek, d_end = disk.serve(arrive, ios, disk_bytes)
        if not size_on_link:
            own[1] += hop
            own[2] += cost
            own[3] += d_end - d_start
            own[4] += d_start - arrive
            own[5] += d_end - t - hop - cost - (d_end - arrive)
            return d_end
        l_start = max(d_start + d_seek, quiet[0], now[0], link.t)
        # a copy (stage-in: key < 0) opens a connection of its own
        conn = connection(hop) if key < 0 else connections[c]
        flowing, ramp = conn.send(size, l_start) if hop else (size * per_flow, 0.0)
        fl = Flow(l_start, size, flowing, d_end, t, hop, cost, d_start - arrive, d_seek,
                  d_end - d_start - d_seek, ramp, own)  # fmt: skip
        alone = l_start + size * per_bw
        if not link.flows and (not heap or heap[0][0] >= alone):  # no flow can meet it
            quiet[0] = alone
            return fl.finish(alone, per_flow)
        return fl

    def after(c: int, i: int, start: float, end: float, own: list[float]) -> float:
        """A read's response after its requests: the cache's own read, what the kernel reads
        ahead sent on (queued, not waited for), the client's CPU."""
        if sc.xcache is not None:
            end += c_rtt + nbytes[i] / c_rate
            own[1] += c_rtt
            own[5] += nbytes[i] / c_rate
        elif ahead:
            for pc in ahead[i]:
                fl = remote(c, files[i], pc, start, hop_read, server, [0.0] * 6)
                if fl.__class__ is Flow:
                    send(fl)  # type: ignore[arg-type]
        extra = cpu_req + cpu_mb * nbytes[i] / MB
        own[0] += extra
        return end + extra

    def run(c: int, i: int, key: int, steps: tuple[Piece, ...], k: int, t: float, start: float,
            hop: float, cost: float, own: list[float]) -> None:  # fmt: skip
        """Request ``i``'s requests across the link in turn from the ``k``-th (a read's, a cold
        cache's blocks, a stage-in's copy: ``key`` < 0), on to a flow it waits on (the rest
        when its flow is off the link) or to its response."""
        end: float | Flow = t
        while k < len(steps):
            end = remote(c, key, steps[k], end, hop, cost, own)  # type: ignore[arg-type]
            k += 1
            if end.__class__ is Flow:
                end.c, end.i, end.then = c, i, (key, steps, k, start, hop, cost)  # type: ignore[union-attr]
                send(end)  # type: ignore[arg-type]
                return
        respond(c, i, end if key < 0 else after(c, i, start, end, own), own)  # type: ignore[arg-type]

    def send(fl: Flow) -> None:
        """``fl`` on its way to the link: there at once if nothing happens before."""
        if not heap or heap[0][0] >= fl.start:
            link.arrive(fl.start, fl)
            departures()
            return
        key = sent[0] = sent[0] + 1
        arriving[key] = fl
        heapq.heappush(heap, (fl.start, -2, key))

    def respond(c: int, i: int, end: float, own: list[float]) -> None:
        own_of[c][i] = own
        if end >= last[c][0]:
            last[c] = (end, i)
        if ops[i] == READ and end <= until:
            got[c] += nbytes[i]
        r = ready[c]
        rem = remaining[c]
        who = setter[c]
        for j in dependents[i]:
            if end >= r[j]:
                r[j] = end
                who[j] = i
            rem[j] -= 1
            if rem[j] == 0:
                heapq.heappush(heap, (r[j] + before[j] * stretch, c, j))
        left[c] -= 1
        if not left[c]:
            next_pass(c)

    def next_pass(c: int) -> None:
        """Client ``c``'s pass is over: kept, and within a fixed time the next one begins
        (on its own copy, as the replayer runs them: cold, its connection kept)."""
        end = last[c][0] + tail
        walls[c].append(end - began[c])
        if first[c] is None:
            first[c] = (last[c], own_of[c], setter[c])
        if end > until:
            return
        whole[c] += 1
        got[c] = 0
        began[c] = end
        last[c] = (end + lead, -1)
        own_of[c], setter[c] = [None] * n, [-1] * n
        remaining[c], ready[c], left[c] = list(compiled.deps), [0.0] * n, n
        paged[c], held[c], copied[c] = {}, set(), set()
        for j in roots:
            heapq.heappush(heap, (end + lead + before[j] * stretch, c, j))

    def departures() -> None:  # the link's next departure, as an event
        at = link.next_departure()
        if at is not None:
            heapq.heappush(heap, (at, -1, link.version))

    size_on_link = not local
    hop_read = 0.0 if local else rtt
    while heap:
        t, c, i = heapq.heappop(heap)
        now[0] = t
        if c == -2:  # a flow reaches the link
            link.arrive(t, arriving.pop(i))
            departures()
            continue
        if c == -1:  # the link's next departure, unless the link changed since
            if i == link.version:
                fl = link.depart(t)
                departures()
                done = fl.finish(t, per_flow)
                if fl.i >= 0:  # the request's next step, or its response
                    key, steps, k, start, hop, cost = fl.then
                    run(fl.c, fl.i, key, steps, k, done, start, hop, cost, fl.own)
            continue
        op = ops[i]
        own = [0.0] * 6
        end = t
        if op == READ:
            f = files[i]
            steps, hop, cost = reads[i], hop_read, server
            if sc.xcache is not None:  # a cold cache fetches the blocks it lacks first
                mine = held[c]
                missing = [b for b in blocks[i] if (f << 32) + b not in mine] if blocks else []
                mine.update((f << 32) + b for b in missing)
                steps = (blocks_piece(missing, block),) if missing else ()
                hop, cost = rtt, origin_server
            elif staged:  # read from the worker's page cache after the copy
                steps = ()
            run(c, i, f, steps, 0, t, t, hop, cost, own)
            continue
        if op == OPEN and staged and files[i] not in copied[c]:
            copied[c].add(files[i])
            own[1] += rtt  # the copy's own open
            size = compiled.file_sizes[files[i]]
            run(c, i, -1 - files[i], ((((0, size),), size),), 0, t + rtt, t, rtt, server, own)
            continue
        if op == OPEN and not local and not staged:
            trips = 1 if connected[c] else 2  # a client's first open connects first
            connected[c] = True
            hop = c_rtt if sc.xcache is not None else rtt
            end = t + trips * hop + server
            own[1] += trips * hop
            own[2] += server
        elif op in (CLOSE, STAT) and not local and not staged:
            hop = c_rtt if sc.xcache is not None else rtt
            end = t + hop
            own[1] += hop
        respond(c, i, end, own)
    ends = [w[0] for w in walls]  # each client's first pass
    wall = sum(ends) / clients
    mean = critical_path([f for f in first if f], lead, tail, [b * stretch for b in before])
    cpu = compiled.cpu_s if compiled.cpu_s is not None else compiled.think_s
    cpu = (cpu + cpu_req * compiled.reads + cpu_mb * compiled.bytes_read / MB) / speed
    threads = max(1, compiled.threads)
    cpu = max(0.0, min(cpu, wall * threads))
    events_per_s = None
    if compiled.events is not None and wall > 0:
        events_per_s = compiled.events * clients / wall
    passes, timed = None, []
    if sc.until_s:  # counted as the replayer counts them: whole passes and the bytes' share
        total = compiled.bytes_read or 1
        passes = sum(whole[c] + got[c] / total for c in range(clients)) / clients
        timed = [w for c, ws in enumerate(walls) for w in ws[: whole[c]]]
    return Prediction(
        trace=compiled.name,
        site=profile.site,
        protocol=proto_name,
        xcache=sc.xcache,
        clients=clients,
        wall_s=wall,
        wall_max_s=max(ends),
        cpu_s=cpu,
        cpu_efficiency=cpu / wall if wall > 0 else 0.0,
        cpu_efficiency_per_core=cpu / (wall * threads) if wall > 0 else 0.0,
        threads=threads,
        events_per_s=events_per_s,
        aggregate_mb_per_s=compiled.bytes_read * clients / max(ends) / MB if wall > 0 else 0.0,
        breakdown=mean,
        passes=passes,
        pass_walls=timed,
    )

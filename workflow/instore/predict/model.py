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
- **A link shared by its flows**: the link is one server of the profile's bandwidth: a
  transfer occupies it for bytes / bandwidth, in the order the data is ready, and one flow is
  no faster than its TCP window / RTT where the window binds; each client's connection ramps
  its window up from the initial one by round trips, and again after an idle spell
  (``instore.predict.tcp``), a stage-in copy on a connection of its own.
- **A disk queueing every client's requests, behind a page cache**: a chunk the page cache
  holds (read ahead by an earlier request of that file) costs no disk time; any other is one
  disk request that reads the chunk and the readahead after it (the kernel's): a FIFO queue
  to the disk's servers (one, or as many as an SSD serves side by side: ``disk_parallel``,
  rounded to the nearest whole number), the random read's service time (1 / IOPS: an
  IOPS-limited disk counts every request; a spinning disk's sequential ones would cost less,
  which the model does not know) plus its bytes / sequential rate.
- **Clients** (the load section; jobs on many nodes) all read the same site at once, each its
  own copy of the files; their requests meet in the disk's and the link's queues.
- **XCache**: warm, every read is served by the cache (its local round trip and rate); cold,
  a read first fetches the cache blocks it touches that the cache does not hold yet from the
  origin (one origin round trip, the blocks' bytes over the link and from the origin's disk).
- **posix** reads the disk in place (no round trip, no link); **stage-in** copies each file
  across the link at its first open, then reads it from the worker's page cache.

CPU is defined over the span the trace covers: the recorded job's CPU time (its think time
when the trace has none), plus the client's CPU per request and per MB where the profile's
client differs from the recording's, and never more than the job's threads (its streams) times
the predicted wall: the CPU efficiency per core is at most 1.

Where the time goes (``breakdown``) is per client (the mean over clients), in seconds summing to
its wall: think, round trips (what TCP's window adds to a response's bytes among them: the
RTT's doing, not the rate's), server, disk, disk queue, transfer (the bytes at the flow's rate
and the link's queue), along the critical path: the chain of requests, each started by the response
it waited for last, that ends with the job's last response (requests in flight beside that
chain do not add to the wall, and are not counted).
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
from instore.predict.disk import page_in
from instore.predict.profile import Profile
from instore.predict.readahead import MAX_PAGES, PAGE, mount_plan
from instore.predict.scenario import PARTS, XCACHE_STATES, Prediction, Scenario
from instore.predict.tcp import INITIAL_WINDOW_BYTES, Connection

MB = 1e6
LOCAL = (POSIX,)


def predict(compiled: Compiled, profile: Profile, scenario: Scenario | None = None) -> Prediction:
    """Simulate ``scenario.clients`` copies of the trace's job against the profile's site."""
    sc = scenario or Scenario()
    proto_name, proto = profile.protocol(sc.protocol)
    if sc.xcache is not None:
        if sc.xcache not in XCACHE_STATES:
            raise InstoreError(f"--xcache {sc.xcache}: not a cache state",
                               f"use one of {', '.join(XCACHE_STATES)}")  # fmt: skip
        if profile.xcache is None:
            raise InstoreError(
                f"site {profile.site}: its profile has no XCache",
                "drop --xcache, or add an xcache entry to the profile (docs/predict.md)",
            )
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
    speed = _cpu_speed(sc.cpu_speed)
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
    link_free = [0.0]  # when the link (a FIFO server) is next free
    disk = [0.0] * servers  # when each of the disk's servers is next free (a heap)
    tokens = [burst, 0.0]  # the disk's idle burst left, and when it was last counted
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
    done_at = [[0.0] * n for _ in range(clients)]  # each request's response
    heap: list[tuple[float, int, int]] = []
    for c in range(clients):
        for i in range(n):
            if compiled.deps[i] == 0:
                heap.append((lead + before[i] * stretch, c, i))
    heapq.heapify(heap)
    per_flow = 1.0 / flow
    per_bw = 1.0 / bw
    # each client's connection to the server (its window grows and, idle, shrinks: tcp.py)
    initial = (profile.tcp_initial_window_kb.value or 0.0) * 1024 or INITIAL_WINDOW_BYTES
    restart = bool(profile.tcp_slow_start_after_idle.value)

    def connection(hop: float) -> Connection:
        return Connection(hop, flow, initial, restart)

    connections = [connection(rtt) for _ in range(clients)]

    def remote(c: int, key: int, pc: Piece, t: float, hop: float, cost: float,
               own: list[float]) -> float:  # fmt: skip
        """One request across the link: a round trip, the server, the disk (a FIFO queue to
        its servers, the first free one taking it: one request, its service time and its
        bytes, for each run the page cache does not hold),
        the transfer (the link a FIFO queue too, a flow no faster than its window)."""
        runs, size = pc
        ramp = 0.0
        ios, disk_bytes = page_in(paged[c].setdefault(key, ([], [])), runs, readahead)
        arrive = t + hop / 2 + cost
        d_start = arrive if arrive > disk[0] or not ios else disk[0]
        paid = ios
        if burst and ios:  # an idle throttle lets a slice's requests through at once
            left = min(burst, tokens[0] + (d_start - tokens[1]) / seek) if seek else burst
            free_ios = min(ios, int(left))
            paid = ios - free_ios
            tokens[0] = left - free_ios
        d_seek = paid * seek
        d_end = d_start + d_seek + disk_bytes / seq
        if ios:
            heapq.heapreplace(disk, d_end)
            tokens[1] = d_end
        if not size_on_link:
            done = d_end
            on_disk = d_end - d_start
        else:
            l_start = d_start + d_seek
            if link_free[0] > l_start:
                l_start = link_free[0]
            link_free[0] = l_start + size * per_bw
            # a copy (stage-in: key < 0) opens a connection of its own
            conn = connection(hop) if key < 0 else connections[c]
            if not hop:
                flowing = size * per_flow
            elif conn.window >= conn.path and (
                not restart or l_start - conn.sent_until <= conn.rto  # type: ignore[operator]
            ):  # its window fills the path and it has not idled: flow_time's steady case, inline
                flowing = size * per_flow
                conn.sent_until = l_start + flowing
            else:
                flowing = conn.flow_time(size, l_start)
                # what the window adds to the bytes' own time: round trips, not the rate's
                ramp = flowing - size * per_flow
            other = max(d_end, link_free[0])
            done = max(l_start + flowing, other) + hop / 2
            ramp = min(ramp, max(0.0, l_start + flowing - other))  # as far as it makes it late
            # the disk's streaming overlaps the transfer: only what the link does not hide
            on_disk = d_seek + max(0.0, d_end - d_start - d_seek - size * per_flow)
        own[1] += hop + ramp
        own[2] += cost
        own[3] += on_disk
        own[4] += d_start - arrive
        own[5] += done - t - hop - cost - (d_start - arrive) - on_disk - ramp
        return done

    size_on_link = not local
    while heap:
        t, c, i = heapq.heappop(heap)
        op = ops[i]
        f = files[i]
        own = [0.0] * 6
        end = t
        if op == READ:
            if sc.xcache is not None:
                if blocks:
                    mine = held[c]
                    missing = [b for b in blocks[i] if (f << 32) + b not in mine]
                    if missing:
                        mine.update((f << 32) + b for b in missing)
                        end = remote(
                            c, f, blocks_piece(missing, block), end, rtt, origin_server, own
                        )
                size = nbytes[i]
                end += c_rtt + size / c_rate
                own[1] += c_rtt
                own[5] += size / c_rate
            elif not staged:  # staged: read from the worker's page cache after the copy
                hop = 0.0 if local else rtt
                start = end
                for pc in reads[i]:
                    end = remote(c, f, pc, end, hop, server, own)
                for pc in ahead[i] if ahead else ():  # read ahead: queued, not waited for
                    remote(c, f, pc, start, hop, server, [0.0] * 6)
            extra = cpu_req + cpu_mb * nbytes[i] / MB
            if extra:
                own[0] += extra
                end += extra
        elif op == OPEN and staged and f not in copied[c]:
            copied[c].add(f)
            own[1] += rtt  # the copy's own open
            size = compiled.file_sizes[f]
            end = remote(c, -1 - f, (((0, size),), size), t + rtt, rtt, server, own)
        elif op == OPEN and not local and not staged:
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
        own_of[c][i] = own
        done_at[c][i] = end
        if end >= last[c][0]:
            last[c] = (end, i)
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

    tail = compiled.tail_s * stretch
    walls = [e + tail for e, _ in last]
    wall = sum(walls) / clients
    mean = dict.fromkeys(PARTS, 0.0)
    for c, (_, i) in enumerate(last):
        chain = [lead, 0.0, 0.0, 0.0, 0.0, 0.0]
        while i >= 0:
            own = own_of[c][i] or [0.0] * 6
            for k in range(6):
                chain[k] += own[k]
            chain[0] += before[i] * stretch
            i = setter[c][i]
        for k, v in zip(PARTS, chain, strict=True):
            mean[k] += v / clients
    mean["think"] += tail
    cpu = compiled.cpu_s if compiled.cpu_s is not None else compiled.think_s
    cpu = (cpu + cpu_req * compiled.reads + cpu_mb * compiled.bytes_read / MB) / speed
    threads = max(1, compiled.threads)
    cpu = max(0.0, min(cpu, wall * threads))
    events_per_s = None
    if compiled.events is not None and wall > 0:
        events_per_s = compiled.events * clients / wall
    passes = None
    if sc.until_s:
        passes = passes_in(sc.until_s, walls, done_at, compiled)
    return Prediction(
        trace=compiled.name,
        site=profile.site,
        protocol=proto_name,
        xcache=sc.xcache,
        clients=clients,
        wall_s=wall,
        wall_max_s=max(walls),
        cpu_s=cpu,
        cpu_efficiency=cpu / wall if wall > 0 else 0.0,
        cpu_efficiency_per_core=cpu / (wall * threads) if wall > 0 else 0.0,
        threads=threads,
        events_per_s=events_per_s,
        aggregate_mb_per_s=compiled.bytes_read * clients / max(walls) / MB if wall > 0 else 0.0,
        breakdown=mean,
        passes=passes,
    )


def _cpu_speed(value: float | None) -> float:
    """The CPU speed factor (1: as recorded); not a positive number is a one-line error."""
    if value is None:
        return 1.0
    if not math.isfinite(value) or value <= 0:
        raise InstoreError(f"--cpu-speed {value:g}: not a speed",
                           "give how many times as fast as the recording's CPU, above 0 "
                           "(2: twice as fast; 0.5: half)")  # fmt: skip
    return float(value)


def passes_in(until_s: float, walls: list[float], done_at: list[list[float]],
              compiled: Compiled) -> float:  # fmt: skip
    """The passes the clients make in ``until_s`` (their mean), counted as the replayer counts
    them: each whole pass (every pass as the first: on its own copy, cold), plus the share of
    a pass's read bytes answered in the pass in hand. Where the first pass's requests are
    seek-bound and its bytes come late, that share is small: comparing per-pass walls derived
    this way on both sides keeps the model and the measurement on one definition."""
    reads = [i for i, op in enumerate(compiled.ops) if op == READ]
    total = sum(compiled.nbytes[i] for i in reads) or 1
    counts = []
    for wall, done in zip(walls, done_at, strict=True):
        whole = int(until_s // wall) if wall > 0 else 0
        left = until_s - whole * wall
        got = sum(compiled.nbytes[i] for i in reads if done[i] <= left)
        counts.append(whole + got / total)
    return sum(counts) / len(counts)

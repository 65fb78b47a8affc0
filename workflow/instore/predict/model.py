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

from instore.predict.compiled import Compiled
from instore.predict.profile import Profile
from instore.predict.scenario import Prediction, Scenario, critical_path
from instore.predict.simulation import MB, Simulation


def predict(compiled: Compiled, profile: Profile, scenario: Scenario | None = None) -> Prediction:
    """Simulate ``scenario.clients`` copies of the trace's job against the profile's site."""
    sim = Simulation(compiled, profile, scenario or Scenario())
    sim.loop()
    return _prediction(sim)


def _prediction(sim: Simulation) -> Prediction:
    """What the simulation's passes gave: each client's first pass's wall and where its time
    went, the CPU over that wall, and within a fixed time the passes as the replayer counts
    them (kept here, beside the docstring that defines them)."""
    compiled, clients, speed = sim.compiled, sim.clients, sim.speed
    ends = [w[0] for w in sim.walls]  # each client's first pass
    wall = sum(ends) / clients
    mean = critical_path([f for f in sim.first if f], sim.lead, sim.tail, sim.think)
    cpu = compiled.cpu_s if compiled.cpu_s is not None else compiled.think_s
    cpu = (cpu + sim.cpu_req * compiled.reads + sim.cpu_mb * compiled.bytes_read / MB) / speed
    threads = max(1, compiled.threads)
    cpu = max(0.0, min(cpu, wall * threads))
    events_per_s = None
    if compiled.events is not None and wall > 0:
        events_per_s = compiled.events * clients / wall
    passes, timed = None, []
    if sim.sc.until_s:  # counted as the replayer counts them: whole passes and the bytes' share
        total = compiled.bytes_read or 1
        whole, got = sim.whole, sim.got
        passes = sum(whole[c] + got[c] / total for c in range(clients)) / clients
        timed = [w for c, ws in enumerate(sim.walls) for w in ws[: whole[c]]]
    return Prediction(
        trace=compiled.name,
        site=sim.profile.site,
        protocol=sim.proto_name,
        xcache=sim.cache_state,
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

"""The payload model: a payload point's wall as a site's profile explains it (its CPU, its
open's round trips, its reads' round trips and server time, its bytes over one flow with TCP's
ramp, and the disk), each term from the point's own record. The profile's fit (``fit.py``)
solves it for the parameters over the payload sections' points; the held-out check
(``validate.check_held_out``) predicts the caching section's points with it at RTTs and links
the fit never saw. A replay or a load point is the trace model's (``model.py``), not this."""

from __future__ import annotations

from typing import Any

from instore.access import DIRECT, POSIX
from instore.predict.disk import DiskRule, disk_rule
from instore.predict.profile import Param, Profile, Protocol
from instore.predict.tcp import INITIAL_WINDOW_BYTES, Connection


def cpu_of(r: dict[str, Any]) -> float:
    return float(r.get("user_s") or 0.0) + float(r.get("sys_s") or 0.0)


def open_wait_of(r: dict[str, Any]) -> float:
    """A payload point's open time off CPU: ``open_s`` less the CPU the open spent
    (``open_cpu_s``: a TLS or GSI handshake, streamer info), which the job's CPU already
    counts; the whole ``open_s`` for a record from before the open's CPU was kept."""
    return max(0.0, float(r.get("open_s") or 0.0) - float(r.get("open_cpu_s") or 0.0))


def away_of(r: dict[str, Any]) -> float:
    """A payload point's time off CPU after its file's open (ROOT's or uproot's open reads the
    header and metadata, a job's fixed cost, fitted apart as round trips)."""
    return max(0.0, float(r["wall_s"]) - cpu_of(r) - open_wait_of(r))


def open_reads_of(r: dict[str, Any]) -> float | None:
    """The read calls a payload point's open made (the file's header, streamers, the tree's
    metadata), which fall inside ``open_s``: recorded as ``open_read_calls``; for a record
    from before, ROOT's TTree read log tells them apart (its reads are the loop's); None where
    nothing does."""
    if r.get("open_read_calls") is not None:
        return float(r["open_read_calls"])
    counters = r.get("counters") or {}
    if counters.get("read_log_complete") == 1 and "perfstats_read_calls" in counters:
        return float(r["read_calls"]) - float(counters["perfstats_read_calls"])
    return None


def reads_after_open(r: dict[str, Any]) -> float:
    """The read calls a payload point made after its open: the open's own are in its open
    time, whose round trips ``open_round_trips`` explains (counted again, they paid their round
    trips twice). Every read call where the record does not say which the open made."""
    return max(0.0, float(r["read_calls"]) - (open_reads_of(r) or 0.0))


def ramp_of(r: dict[str, Any], rtt_s: float, rate: float,
            initial: float = INITIAL_WINDOW_BYTES, restart: bool = True) -> float:  # fmt: skip
    """What TCP's window adds to a point's reads after its open over its own connection
    (xrootd, http), beyond their bytes at ``rate``: the open's small responses do not grow
    the window, so the first large response ramps up from the initial window round trip by
    round trip (``tcp.Connection``), and again after an idle spell. The reads taken as equal
    shares of its bytes, its CPU spread evenly between them. Measured on an emulated 100 ms,
    100 Mbit/s link (2026-11-29, ``docs/data/tcp-ramp``): a fresh XRootD connection's 1.6 MB
    read after an open and four 4 kB reads took 0.52 s beyond its round trip and bytes;
    ``Connection`` gives 0.53.

    Nothing for a record that does not say which reads its open made (``open_reads_of``): it
    keeps the accounting from before, every read call a round trip and no ramp, in which the
    open's reads counted twice stand in for the ramp at 25-30 ms (within 2% of the WAN's
    payload points) but not at 100 ms (11% short of the caching section's)."""
    n = round(reads_after_open(r))
    if (r["protocol"] not in DIRECT or n <= 0 or rtt_s <= 0 or rate <= 0
            or open_reads_of(r) is None):  # fmt: skip
        return 0.0
    size, gap = float(r["bytes_read"]) / n, cpu_of(r) / n
    conn, t, added = Connection(rtt_s, rate, initial, restart), 0.0, 0.0
    for _ in range(n):
        flowing, ramp = conn.send(size, t)
        added += ramp
        t += rtt_s + flowing + gap
    return added


def io_terms(r: dict[str, Any], rtt_s: float, per_byte: float, disk: DiskRule,
             initial: float = INITIAL_WINDOW_BYTES, restart: bool = True) -> float:  # fmt: skip
    """A payload point's time off CPU after its open that the link and disk explain: its read
    calls' round trips, its bytes over the link (``per_byte``: seconds per byte of one flow)
    and what TCP's window adds to them (``ramp_of``), and, read cold, the disk's time for it
    (``DiskRule``), whose streaming the transfer hides as in the model."""
    transfer = float(r["bytes_read"]) * per_byte if r["protocol"] != POSIX else 0.0
    if transfer:
        transfer += ramp_of(r, rtt_s, 1.0 / per_byte, initial, restart)
    service, stream = _cold_disk(r, disk)
    return _trips(r, rtt_s) + service + max(transfer, stream)


def fixed_terms(r: dict[str, Any], rtt_s: float, disk: DiskRule, rate: float = 0.0) -> float:
    """The part of ``io_terms`` that does not depend on the flow's rate: the read calls' round
    trips, what TCP's window adds at the link's ``rate`` (the round trips of its ramp), and,
    read cold, the disk requests' service time. What a fit of the flow's rate subtracts first
    (where a flow's rate is fitted the link is the slower: it hides the disk's streaming)."""
    return _trips(r, rtt_s) + ramp_of(r, rtt_s, rate) + _cold_disk(r, disk)[0]


def _trips(r: dict[str, Any], rtt_s: float) -> float:
    return reads_after_open(r) * rtt_s if r["protocol"] != POSIX else 0.0


def _cold_disk(r: dict[str, Any], disk: DiskRule) -> tuple[float, float]:
    """The disk's (service, streaming) time for a point read cold; nothing for a warm one."""
    return disk.parts(r, cpu_of(r), reads_after_open(r)) if r.get("cold", True) else (0.0, 0.0)


def payload_wall(r: dict[str, Any], profile: Profile) -> float:
    """A payload point's wall as the profile explains it: its CPU, its open (round trips), its
    reads' round trips and server time, its bytes over one flow and the disk."""
    rtt_s = (profile.rtt_ms.value or 0.0) / 1e3
    proto = profile.protocols.get(str(r["protocol"]))
    flow = profile.flow_bytes_per_s(proto or Protocol(Param(0.0, "none")))
    server = (proto.request_ms.value or 0.0) / 1e3 if proto else 0.0
    trips = proto.open_round_trips.value if proto and proto.open_round_trips else None
    opened = (trips or 0.0) * rtt_s if trips is not None else open_wait_of(r)
    initial = (profile.tcp_initial_window_kb.value or 0.0) * 1024 or INITIAL_WINDOW_BYTES
    restart = bool(profile.tcp_slow_start_after_idle.value)
    return (cpu_of(r) + opened
            + io_terms(r, rtt_s, 1.0 / flow, disk_rule(profile), initial, restart)
            + reads_after_open(r) * server)  # fmt: skip

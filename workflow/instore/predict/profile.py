"""A site profile: the few physical parameters of a site the model needs, each with where it
came from and how well it fits, in ``results/<site>/profile.json`` (fitted) or any file a
site admin writes by hand (validated by ``workflow/schemas/profile.schema.json``; the format is
documented in docs/predict.md).

Every parameter is ``{"value": ..., "source": "...", "fit": {...} | null}``: ``source`` says
what it came from (``calibration: fio random 4k``, ``protocols+layout: 48 points``,
``hand-written``, ``default: ...``) and ``fit`` how well the fitted model matches those points
(``points``, ``median_abs_error``: relative, over the points it was fitted on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from instore.access import HTTP, XCACHE, XROOTD
from instore.errors import InstoreError
from instore.predict.tcp import INITIAL_WINDOW_BYTES

PROFILE_VERSION = 1
# The round trips a client's first request to a server waits for before its own: a TCP
# connection, and for XRootD its handshake with kXR_protocol and its kXR_login (measured on the
# emulated WAN, 2026-11-29: a job's first open off CPU took 3 round trips more than an open on
# a connection already made); plain HTTP's request follows the TCP handshake. A profile's
# protocol may say otherwise (``connect_round_trips``: TLS adds one or two, an authentication
# protocol more).
CONNECT_ROUND_TRIPS = {XROOTD: 3.0, HTTP: 1.0}
INITIAL_WINDOW_SOURCE = "default: Linux's initial window, 10 segments of 1448 bytes"
SLOW_START_AFTER_IDLE_SOURCE = "default: Linux's net.ipv4.tcp_slow_start_after_idle = 1"
FILE_NAME = "profile.json"
# parameters a profile may leave out: the dataclass's defaults stand for them (written once)
DEFAULTED = (
    "disk_burst_ios",
    "disk_parallel",
    "tcp_initial_window_kb",
    "tcp_slow_start_after_idle",
)
PROFILE_HINT = "write it with `instore predict --fit SITE`, or by hand as docs/predict.md shows"


@dataclass(frozen=True)
class Param:
    """One parameter: its value (None: does not apply or does not bind), where it came from and
    how well its fit matches the points it was fitted on (None: measured or given, not fitted)."""

    value: float | None
    source: str
    fit: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "fit": self.fit}


@dataclass(frozen=True)
class Protocol:
    """What one access protocol costs per request: the server's time per request (beyond the
    round trip), whether a vector read is one request (False: one per chunk, in turn), the
    largest read it sends (longer ones are split into requests in turn; None: no limit), the
    bytes one read keeps in flight (a FUSE mount's readahead: its reads flow no faster than
    that per round trip, however fast the link; None: only the TCP window binds) and the
    largest piece its server reads from the disk at once (XrdHttp's 128 kB: each piece the page
    cache lacks one disk request; None: a chunk's whole range at once)."""

    request_ms: Param
    vector: bool = True
    max_read_kb: float | None = None
    # a payload job's open (ROOT's or uproot's: the header, the metadata) in round trips
    open_round_trips: Param | None = None
    in_flight_kb: Param | None = None
    server_read_kb: float | None = None
    # round trips a new connection waits before its first request (None: CONNECT_ROUND_TRIPS)
    connect_round_trips: float | None = None

    def connect_trips(self, name: str) -> float:
        """The round trips connecting costs over protocol ``name`` (this protocol's own, else
        the protocol's usual, else one)."""
        if self.connect_round_trips is not None:
            return float(self.connect_round_trips)
        return CONNECT_ROUND_TRIPS.get(name, 1.0)

    def as_dict(self) -> dict[str, Any]:
        out = {"request_ms": self.request_ms.as_dict(), "vector": self.vector,
               "max_read_kb": self.max_read_kb, "server_read_kb": self.server_read_kb}  # fmt: skip
        if self.connect_round_trips is not None:
            out["connect_round_trips"] = self.connect_round_trips
        if self.open_round_trips is not None:
            out["open_round_trips"] = self.open_round_trips.as_dict()
        if self.in_flight_kb is not None:
            out["in_flight_kb"] = self.in_flight_kb.as_dict()
        return out


@dataclass(frozen=True)
class XCache:
    """A site's XCache: its block size (a cold cache fetches whole blocks from the origin) and
    how fast it serves what it holds (its local rate; a warm read pays no origin round trip)."""

    block_kb: Param
    local_mb_per_s: Param
    local_rtt_ms: Param

    def as_dict(self) -> dict[str, Any]:
        return {"block_kb": self.block_kb.as_dict(), "local_mb_per_s": self.local_mb_per_s.as_dict(),
                "local_rtt_ms": self.local_rtt_ms.as_dict()}  # fmt: skip


@dataclass(frozen=True)
class Profile:
    """The physical parameters of one site (about ten, none per point)."""

    site: str
    kind: str  # "fitted" or "hand-written"
    rtt_ms: Param
    bandwidth_mbit: Param
    tcp_window_kb: Param  # value None: the window does not bind on this link
    disk_seq_mb_per_s: Param
    disk_random_ms: Param  # one random read's service time (1000 / IOPS)
    client_cpu_request_us: Param  # the client's own CPU per request
    client_cpu_mb_ms: Param  # the client's own CPU per MB read
    protocols: dict[str, Protocol]
    xcache: XCache | None = None
    cores: int = 1  # a worker node's cores (jobs per node beyond them share CPU)
    readahead_kb: float = 128.0  # a read this close after the last one costs no seek
    notes: list[str] = field(default_factory=list)
    fit_quality: dict[str, Any] | None = None  # the whole model against the fitted points
    # random reads an idle disk serves at once, beyond its IOPS (a throttle's slice: the
    # emulated disks' blkio throttle lets IOPS x 100 ms through after it idles; a real disk 0)
    disk_burst_ios: Param = field(default_factory=lambda: Param(0.0, "default: no burst"))
    # random reads the disk serves side by side, each in disk_random_ms x the count rounded up
    # over the value (an SSD several; a spinning or throttled disk 1)
    disk_parallel: Param = field(default_factory=lambda: Param(1.0, "default: one at a time"))
    # a connection's first window, and whether an idle one shrinks back towards it (Linux's
    # net.ipv4.tcp_slow_start_after_idle, 1 or 0): how fast a response ramps up (tcp.py)
    tcp_initial_window_kb: Param = field(
        default_factory=lambda: Param(INITIAL_WINDOW_BYTES / 1024, INITIAL_WINDOW_SOURCE)
    )
    tcp_slow_start_after_idle: Param = field(
        default_factory=lambda: Param(1.0, SLOW_START_AFTER_IDLE_SOURCE)
    )

    @property
    def disk_iops(self) -> float | None:
        ms = self.disk_random_ms.value
        return 1000.0 / ms if ms else None

    def flow_bytes_per_s(self, protocol: Protocol) -> float:
        """One read's rate over the link: the link's, no faster than the TCP window, or the
        protocol's bytes in flight, per round trip (where either binds)."""
        rtt_s = (self.rtt_ms.value or 0.0) / 1000.0
        rate = (self.bandwidth_mbit.value or 0.0) * 1e6 / 8.0
        for kb in (self.tcp_window_kb.value,
                   protocol.in_flight_kb.value if protocol.in_flight_kb else None):  # fmt: skip
            if kb and rtt_s > 0:
                rate = min(rate, kb * 1024 / rtt_s)
        return rate

    def protocol(self, name: str | None) -> tuple[str, Protocol]:
        """The protocol ``name`` (None: xrootd if the site has it, else its first), or one
        line naming the ones the profile has."""
        if name is None:
            name = XROOTD if XROOTD in self.protocols else next(iter(self.protocols))
        if name not in self.protocols:
            raise InstoreError(
                f"site {self.site}: no protocol {name!r} in its profile "
                f"(it has {', '.join(self.protocols)})",
                f"use --protocol {' or '.join(self.protocols)}, or add {name} to the profile",
            )
        return name, self.protocols[name]

    def with_changes(self, **values: float | None) -> Profile:
        """The profile with what-if values (rtt_ms, bandwidth_mbit, iops, tcp_window_kb):
        each becomes a parameter whose source says it was asked for."""
        out = self
        for key, value in values.items():
            if value is None:
                continue
            if key == "iops":
                out = replace(
                    out,
                    disk_random_ms=Param(1000.0 / value, f"what-if: {value} IOPS"),
                    disk_burst_ios=Param(0.0, "what-if: another disk, no burst"),
                    disk_parallel=Param(1.0, "what-if: another disk, one read at a time"),
                )
            else:
                out = replace(out, **{key: Param(float(value), f"what-if: {key}={value}")})
        return out

    def as_dict(self) -> dict[str, Any]:
        keys = ("rtt_ms", "bandwidth_mbit", "tcp_window_kb", "disk_seq_mb_per_s",
                "disk_random_ms", "disk_burst_ios", "disk_parallel", "client_cpu_request_us",
                "client_cpu_mb_ms", "tcp_initial_window_kb", "tcp_slow_start_after_idle")  # fmt: skip
        return {
            "profile_version": PROFILE_VERSION,
            "site": self.site,
            "kind": self.kind,
            "cores": self.cores,
            "readahead_kb": self.readahead_kb,
            "parameters": {k: getattr(self, k).as_dict() for k in keys},
            "protocols": {name: p.as_dict() for name, p in self.protocols.items()},
            XCACHE: self.xcache.as_dict() if self.xcache else None,
            "fit_quality": self.fit_quality,
            "notes": list(self.notes),
        }


def _param(data: Any) -> Param:
    if isinstance(data, dict):
        value = data.get("value")
        return Param(None if value is None else float(value), str(data.get("source", "")),
                     data.get("fit"))  # fmt: skip
    return Param(None if data is None else float(data), "hand-written")


def from_dict(data: dict[str, Any], source: str | Path = "profile") -> Profile:
    """A profile from its JSON form, validated by the schema first (one line naming the field)."""
    from instore.configfile import validate

    validate(data, "profile", source)
    p = data["parameters"]
    cache = data.get(XCACHE)
    return Profile(
        site=data["site"],
        kind=data.get("kind", "hand-written"),
        rtt_ms=_param(p["rtt_ms"]),
        bandwidth_mbit=_param(p["bandwidth_mbit"]),
        tcp_window_kb=_param(p.get("tcp_window_kb")),
        disk_seq_mb_per_s=_param(p["disk_seq_mb_per_s"]),
        disk_random_ms=_param(p["disk_random_ms"]),
        client_cpu_request_us=_param(p.get("client_cpu_request_us", 0.0)),
        client_cpu_mb_ms=_param(p.get("client_cpu_mb_ms", 0.0)),
        **{k: _param(p[k]) for k in DEFAULTED if k in p},
        protocols={
            name: Protocol(
                _param(v["request_ms"]),
                bool(v.get("vector", True)),
                v.get("max_read_kb"),
                _param(v["open_round_trips"]) if "open_round_trips" in v else None,
                _param(v["in_flight_kb"]) if v.get("in_flight_kb") is not None else None,
                v.get("server_read_kb"),
                v.get("connect_round_trips"),
            )
            for name, v in data["protocols"].items()
        },
        xcache=XCache(
            _param(cache["block_kb"]),
            _param(cache["local_mb_per_s"]),
            _param(cache.get("local_rtt_ms", 0.05)),
        )
        if cache
        else None,
        cores=int(data.get("cores", 1)),
        readahead_kb=float(data.get("readahead_kb", 128.0)),
        notes=list(data.get("notes", [])),
        fit_quality=data.get("fit_quality"),
    )


def profile_path(results: Path, site: str) -> Path:
    return Path(results) / site / FILE_NAME


def read_profile(path: Path) -> Profile:
    """A profile file (fitted or hand-written), or one line naming what is wrong and the fix."""
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError as err:
        raise InstoreError(f"{path}: no such profile", PROFILE_HINT) from err
    except ValueError as err:
        raise InstoreError(f"{path}: not valid JSON ({err})", PROFILE_HINT) from err
    return from_dict(data, path)


def site_profile(results: Path, site: str) -> Profile:
    """``site`` may be a profile file's path, or a site whose ``results/<site>/profile.json``
    exists."""
    as_path = Path(site)
    if as_path.suffix == ".json" and as_path.is_file():
        return read_profile(as_path)
    path = profile_path(results, site)
    if not path.is_file():
        raise InstoreError(
            f"{path}: site {site} has no profile",
            f"fit one with `instore predict --fit {site}` after its sweeps, or give a "
            "hand-written profile's path (docs/predict.md)",
        )
    return read_profile(path)


def write_profile(results: Path, profile: Profile) -> Path:
    """Write ``results/<site>/profile.json`` atomically; return its path."""
    path = profile_path(results, profile.site)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(profile.as_dict(), indent=1) + "\n")
    tmp.replace(path)
    return path

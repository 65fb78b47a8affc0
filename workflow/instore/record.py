"""The run record: one job's line in ``records.jsonl`` and its row in a section table.

A record has parts, each made by the one place that knows it and defined once here:

* ``JobResult`` -- what ``instore read`` measured and prints (knobs, ``Measurement``,
  ``Provenance``, error);
* ``ContainerRun`` -- what running it in a container adds (runtime, image, start-up, outer wall);
* ``JobFate`` -- which job of the point it was, where it ran, how many attempts it took;
* ``PointInfo`` and ``SiteInfo`` -- the point and site the sweep measured it for;
* the point's own fields (its knobs, section and repetition, ``instore.study.Point``).

``row`` flattens them into the flat dict the log and the tables hold; the field names are the
column names reports and notebooks read. Standard library only: the payload imports this
module and starts once per measured job.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import socket
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

RECORD_VERSION = 1
XROOTD_PACKAGE = "xrootd"  # the XRootD Python bindings' distribution, whose version is kept
_PACKAGES = ("instore", "root", "uproot", "awkward", "numpy", XROOTD_PACKAGE)
# Only these environment variables are recorded; never the whole environment (credentials).
# glibc's resolver settings (resolv.conf(5)) a sweep hands its jobs from the caller's
# environment (sweep/jobs.py): the XRootD client's login looks up the worker's own addresses
RESOLVER_ENV = ("RES_OPTIONS", "LOCALDOMAIN")
RECORDED_ENV = (
    "ROOT_TTREECACHE_SIZE",
    "ROOT_TTREECACHE_PREFILL",
    "XRD_REQUESTTIMEOUT",
    "INSTORE_RUNTIME",
    "INSTORE_IMAGE_DIGEST",
    *RESOLVER_ENV,
)


def size_histogram(lengths: Iterable[int]) -> dict[str, int]:
    """Read counts per power-of-two size bucket, keyed by the bucket's upper bound in bytes."""
    counts = Counter(1 << max(0, int(n - 1).bit_length()) for n in lengths if n > 0)
    return {str(k): counts[k] for k in sorted(counts)}


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _credential() -> dict[str, str | None] | None:
    from instore.credentials import describe

    return describe()


@dataclass(frozen=True)
class Provenance:
    """Where and with what software a job ran (kept as one JSON column in the tables)."""

    host: str
    kernel: str
    python: str
    root_version: str | None
    versions: dict[str, str | None]
    env: dict[str, str]
    pid: int
    # The credential the job held: kind, proxy subject and expiry only; never its content.
    credential: dict[str, str | None] | None = None

    @classmethod
    def collect(cls) -> Provenance:
        from instore.rootenv import root_version

        uname = platform.uname()
        return cls(
            host=socket.gethostname(),
            kernel=f"{uname.system} {uname.release}",
            python=platform.python_version(),
            root_version=root_version(),
            versions={p: _version(p) for p in _PACKAGES},
            env={k: os.environ[k] for k in RECORDED_ENV if k in os.environ},
            pid=os.getpid(),
            credential=_credential(),
        )


@dataclass(frozen=True)
class Measurement:
    """What one read measured: times from inside the payload's process, counts from the engine."""

    tree: str
    file_size: int
    entries: int
    branches_total: int
    branches_read: int
    events: int
    wall_s: float
    open_s: float
    stage_in_s: float
    user_s: float
    sys_s: float
    cpu_efficiency: float | None
    cpu_wait_s: float
    event_rate_hz: float | None
    bytes_read: int
    read_calls: int
    vector_reads: int
    read_size_hist: dict[str, int]
    bytes_needed: int
    read_amplification: float | None
    mb_per_s: float | None
    cache_bytes_effective: int
    rchar_delta: int
    counters: dict[str, float]
    format: str = ""  # what was read: "ttree" or "rntuple"
    object_name: str = ""  # its path in the file (a TTree's or an RNTuple's, e.g. analysis/nominal)
    # Selected branches or fields the engine could not read (a class with no dictionary where it
    # ran), and why the first was skipped: a measurement of fewer fields than asked says so.
    fields_skipped: int = 0
    fields_skipped_reason: str | None = None
    # Of the job's threads (the knob `threads`: a slot of that many cores, so cpu_efficiency is
    # CPU over wall x threads), how many read, and why fewer did.
    threads_used: int = 1
    threads_note: str | None = None
    # Why cpu_efficiency is above 1 per core, when it is (instore.payload.threads.over_cores)
    cpu_efficiency_note: str | None = None
    # The process's CPU during open_s (a TLS or GSI handshake, metadata): user_s and sys_s
    # include it, so open_s less this is the open's wait on the storage. None: not recorded.
    open_cpu_s: float | None = None
    # Of read_calls, those the open made (the file's header, streamers, the tree's metadata),
    # whose round trips are in open_s: a profile's fit counts the rest. None: not known (an
    # RNTuple read by ROOT, a record from before).
    open_read_calls: int | None = None


@dataclass
class JobResult:
    """What ``instore read`` prints for one job. A failed read is a result too: ``error`` says
    why and the measurement holds what was done until then."""

    url: str
    start_time: str
    knobs: dict[str, Any]  # the read's options as flat fields: engine, cache_bytes, pattern_*...
    measurement: Measurement
    provenance: Provenance
    error: str | None = None
    start_lateness_s: float | None = None  # how late the job reached --start-at
    cold_cache_dropped: bool | None = None  # None: not a cold read of a local file
    passes: int | None = None  # reads of the file (fixed-time mode); None when it failed
    ready_at: float | None = None  # Unix time the payload was ready to measure (after start-up)
    http_client: str = "n/a"  # which HTTP client read it (instore.payload.specs.http_client)
    record_version: int = RECORD_VERSION
    reads: list[tuple[int, int]] = field(default_factory=list, repr=False)  # the access log only

    def as_dict(self) -> dict[str, Any]:
        """The JSON the payload prints (``reads`` go to the access log, not the record)."""
        return {
            "record_version": self.record_version,
            "url": self.url,
            "start_time": self.start_time,
            **self.knobs,
            "http_client": self.http_client,
            "cold_cache_dropped": self.cold_cache_dropped,
            "passes": self.passes,
            **asdict(self.measurement),
            "error": self.error,
            "start_lateness_s": self.start_lateness_s,
            "ready_at": self.ready_at,
            "provenance": asdict(self.provenance),
        }


@dataclass(frozen=True)
class ContainerRun:
    """What running the payload in a container adds, kept apart from the payload's fields."""

    runtime: str
    image_digest: str | None
    container_startup_s: float | None
    outer_wall_s: float  # the job's wall seen from outside: start-up included
    exit_status: int
    # How the job's process started: "exec" (a new process, in a new container) or "fork"
    # (a child of the worker's warm payload); and the time from submitting it to the payload
    # being ready to measure (jobs told to start together then wait for the common start).
    launch: str = "exec"
    launch_s: float | None = None
    # The worker's own addresses were named in the container's /etc/hosts, so the XRootD
    # client's login lookups of them never reached DNS (container/hosts.py says why)
    own_names_in_hosts: bool = False


@dataclass(frozen=True)
class JobFate:
    """Which job of its point a record is, where it ran, and what it took to get it."""

    job: int
    node: int
    attempts: int
    status: str  # "ok" or "failed"
    attempt_errors: list[str]
    start_skew_s: float  # how late the job passed the point's barrier
    batch_job_id: str | None  # the worker's own batch (SLURM) job, if any
    launch_note: str | None = None  # the worker's warm payload had died and was replaced


@dataclass(frozen=True)
class JobOutcome:
    """One job as its worker returns it. The payload's record stays the dict it printed: a
    payload in an image built from another version keeps its own fields."""

    payload: dict[str, Any]
    container: ContainerRun
    fate: JobFate


@dataclass(frozen=True)
class PointInfo:
    """Which measurement of which point a job belongs to, and what the site did meanwhile."""

    point_key: str
    jobs: int
    measured_at: str
    disk_bytes_read: int | None  # the site's disk, whole point; None where it is not counted
    repaired_before: str | None  # site repairs made just before the point, "; "-joined
    # Bytes that crossed the link to the workers during the point (what a site cache fetched
    # from the origin, or what direct reads moved); None where the link is not ours to count.
    link_bytes_read: int | None = None
    # the link's RTT: measured when it was set (emulated), the calibration's probe (real)
    rtt_ms_measured: float | None = None
    bandwidth_mbit_applied: float | None = None  # the emulated link's tbf rate for the point
    disk_reads: int | None = None  # read requests the site's disk completed during the point
    # CPU, disk, and link usage over the point (site.usage.usage_between), flat in the row
    usage: dict[str, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class SiteInfo:
    """The site a job measured."""

    site: str
    site_kind: str
    site_profile: str | None
    conditions: dict[str, Any]


def row(
    job: JobOutcome, point: PointInfo, site: SiteInfo, point_fields: Mapping[str, Any]
) -> dict[str, Any]:
    """One record as the log and the tables hold it: every part's fields, flat. The point's
    fields (``dataclasses.asdict(Point)``) come last, so its knobs are what the row says."""
    info = asdict(point)
    usage = info.pop("usage")
    return {
        **job.payload,
        **asdict(job.container),
        **asdict(job.fate),
        **info,
        **usage,
        **asdict(site),
        **point_fields,
    }

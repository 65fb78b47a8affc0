"""One job: prepare (cgroup, stage-in, cold cache), read with an engine, and record it all."""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from instore import pagecache
from instore.errors import InstoreError
from instore.payload import objects
from instore.payload.engine import ClientOptions, Engine, UprootKnobs
from instore.payload.objects import DataObject
from instore.payload.pattern import Pattern
from instore.payload.procstats import ProcSnapshot, join_cgroup
from instore.payload.result import EngineResult
from instore.payload.specs import FILE_MODULES, ROOT_CLIENT, SPECS, http_client, resolve_mode
from instore.payload.threads import cpu_efficiency, over_cores, too_many_threads
from instore.record import JobResult, Measurement, Provenance, size_histogram, utc_now
from instore.storage import COPY_TOOLS, fetch
from instore.storage.diagnosis import explain
from instore.urls import is_local, local_path
from instore.vocabulary import FORMATS

# The module of each engine that reads files, as its spec names it (imported here, as a job's)
ENGINES: dict[str, Engine] = {
    name: importlib.import_module(module) for name, module in FILE_MODULES.items()
}
STAGE_IN_TOOLS = tuple(COPY_TOOLS)
CGROUP_ENV = "INSTORE_BLKIO_CGROUP"


@dataclass(frozen=True)
class ReadOptions:
    url: str
    engine: str = "root"
    tree: str | None = None
    object_format: str | None = None  # with tree: the object is known, no file opened to choose
    pattern: Pattern = field(default_factory=Pattern)
    cache_bytes: int | None = None  # TTreeCache; None keeps ROOT's default, 0 turns it off
    readahead_bytes: int | None = None  # TFile::SetReadaheadSize; None keeps ROOT's default
    uproot: UprootKnobs = field(default_factory=UprootKnobs)
    cold: bool = True
    stage_in: str | None = None
    scratch: Path | None = None
    fixed_time_s: float = 0.0  # > 0: the HEPiX method, re-read the file until this much wall time
    start_at: float | None = None  # wall-clock time to start measuring (aligns concurrent jobs)
    threads: int = 1  # the job's threads (cores of its slot); instore.payload.threads
    mt_mode: str | None = None  # how it uses them; None: the engine's default (1 thread: none)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise InstoreError(
                f"unknown engine {self.engine!r}", f"choose one of {', '.join(ENGINES)}"
            )
        # frozen: the resolved mode is set once, here
        object.__setattr__(self, "mt_mode", resolve_mode(self.engine, self.threads, self.mt_mode))
        too_many = too_many_threads(self.threads)
        if too_many:
            raise InstoreError(too_many, "give --threads no larger than the worker's cores")
        if self.cache_bytes is not None and self.cache_bytes < 0:
            raise InstoreError("TTreeCache size is negative", "give --cache-mb 0 (off) or more")
        if self.readahead_bytes is not None and self.readahead_bytes < 0:
            raise InstoreError("readahead size is negative", "give --readahead-kb 0 or more")
        if self.stage_in is not None and self.stage_in not in STAGE_IN_TOOLS:
            raise InstoreError(
                f"unknown stage-in tool {self.stage_in!r}",
                f"choose one of {', '.join(STAGE_IN_TOOLS)}",
            )
        if self.fixed_time_s < 0:
            raise InstoreError(
                "fixed time is negative", "give --fixed-time 0 (read once) or more seconds"
            )
        if self.object_format not in (None, *FORMATS):
            raise InstoreError(
                f"unknown object format {self.object_format!r}",
                f"choose one of {', '.join(FORMATS)}",
            )
        if self.object_format is not None and self.tree is None:
            raise InstoreError(
                "--format needs the object's path", "give --tree PATH with --format, or neither"
            )
        if self.stage_in is not None and self.scratch is None:
            raise InstoreError("stage-in needs a scratch directory", "give --scratch DIR")

    def client(self) -> ClientOptions:
        return ClientOptions(
            self.cache_bytes, self.readahead_bytes, self.uproot, self.threads, self.mt_mode
        )

    def knobs(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "cache_bytes": self.cache_bytes,
            "readahead_bytes": self.readahead_bytes,
            "stage_in": self.stage_in,
            "cold": self.cold,
            "fixed_time_s": self.fixed_time_s,
            "threads": self.threads,
            "mt_mode": self.mt_mode,
            **{f"pattern_{k}": v for k, v in asdict(self.pattern).items()},
            **{f"uproot_{k}": v for k, v in asdict(self.uproot).items()},
        }


def stage_in(url: str, tool: str, scratch: Path) -> Path:
    """Copy the file to local scratch, as a stage-in job does before it reads."""
    scratch.mkdir(parents=True, exist_ok=True)
    target = scratch / f"{os.getpid()}-{Path(urlparse(url).path).name}"
    fetch(url, target, tool)
    return target


def _engine(opts: ReadOptions, url: str, obj: DataObject) -> EngineResult:
    return ENGINES[opts.engine].run(url, obj, opts.pattern, opts.client())


def choose_object(opts: ReadOptions) -> tuple[DataObject | None, Exception | None]:
    """The TTree or RNTuple the job reads, chosen before the clock starts (or why not), in a
    child process where the file is remote: a connection (and its login and authentication)
    made here would outlive the choice, and the job's own open would reuse it, as no job on a
    worker does (measured on the WAN site: 3 round trips, 75 ms, that the open did not pay).
    Nothing is opened when the caller named the object and its format (a sweep of the files it
    generated): then a cold site cache is not warmed by the choice either."""
    if opts.tree is not None and opts.object_format is not None:
        return DataObject(opts.tree, opts.object_format), None
    if is_local(opts.url):
        return _choose(opts)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: choose, send the answer, and leave without any clean-up
        os.close(read)
        try:
            with os.fdopen(write, "wb") as out:
                out.write(_pickled(_choose(opts)))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        data = answer.read()
    os.waitpid(pid, 0)
    if not data:
        return None, InstoreError(f"{opts.url}: choosing the object to read failed",
                                  "run `instore read` on the URL by hand to see why")  # fmt: skip
    return pickle.loads(data)


def _pickled(chosen: tuple[DataObject | None, Exception | None]) -> bytes:
    """The choice as bytes; an error that will not pickle (one holding a C++ object) as the
    one line a job's record would have given it."""
    try:
        return pickle.dumps(chosen)
    except Exception:
        return pickle.dumps((None, InstoreError(_error_line(chosen[1]))))  # type: ignore[arg-type]


def _choose(opts: ReadOptions) -> tuple[DataObject | None, Exception | None]:
    try:
        via_root = SPECS[opts.engine].xrootd == ROOT_CLIENT  # one XRootD client per process
        return objects.choose(opts.url, opts.tree, opts.uproot.timeout, via_root), None
    except Exception as err:  # recorded as the job's error, as a failed read is
        return None, err


def prepare(engine: str, fmt: str | None = None, url: str | None = None) -> None:
    """Load the engine's libraries and JIT its C++ before the clock starts: start-up is not I/O."""
    ENGINES[engine].prepare(fmt, url)


def set_threads(opts: ReadOptions) -> InstoreError | None:
    """Set the job's threads up before the clock (the root engine's thread safety and implicit
    multi-threading); what went wrong, to be recorded as the job's error."""
    if opts.threads <= 1:
        return None
    try:
        ENGINES[opts.engine].set_threads(opts.threads, opts.mt_mode)
    except InstoreError as err:
        return err
    return None


def _join_site_cgroup() -> InstoreError | None:
    """Join the emulated site's blkio cgroup, where the job's env names one (its disk limits
    apply to our reads too), before the clock, as a replay does: moving a process between
    cgroups is set-up, not the read. The error, for the record."""
    if not os.environ.get(CGROUP_ENV):
        return None
    try:
        join_site_cgroup(os.environ[CGROUP_ENV])
    except InstoreError as err:
        return err
    return None


def join_site_cgroup(path: str) -> None:
    try:
        join_cgroup(os.path.join(path, "cgroup.procs"))
    except OSError as err:
        raise InstoreError(
            f"cannot join the site's blkio cgroup {path} ({err.strerror})",
            "run jobs as root on the emulated site's host, or bind the cgroup into the container",
        ) from err


def wait_until(start_at: float | None) -> float | None:
    """Sleep until ``start_at`` so jobs of one point measure together; return how late we were."""
    if start_at is None:
        return None
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    return max(0.0, -delay)


def _read_passes(
    opts: ReadOptions, url: str, start: float, obj: DataObject
) -> tuple[EngineResult, int, bool | None]:
    """Read once, or (fixed-time mode) again and again until the time is up; sum the passes.

    Also says whether the page cache was dropped before the last pass (None: not a cold read
    of a local file)."""
    total: EngineResult | None = None
    passes, dropped = 0, None
    while True:
        if opts.cold and not opts.stage_in and is_local(url):
            dropped = pagecache.drop(local_path(url))
        result = _engine(opts, url, obj)
        total = result if total is None else total.plus(result)
        passes += 1
        if time.perf_counter() - start >= opts.fixed_time_s:
            return total, passes, dropped


def _error_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    if isinstance(err, subprocess.CalledProcessError):
        text = (err.stderr or "").strip().splitlines() or [
            f"{err.cmd[0]} exited with {err.returncode}"
        ]
    return f"{type(err).__name__}: {text[0] if text else ''}"


def run_read(opts: ReadOptions) -> JobResult:
    """Measure one job. Never raises for a failed read: the record carries the error."""
    obj, choose_error = choose_object(opts)
    prepare(opts.engine, obj.format if obj else None, opts.url)
    threads_error = set_threads(opts)
    cgroup_error = _join_site_cgroup()  # set-up: before the clock
    ready_at = time.time()
    lateness = wait_until(opts.start_at)
    start_time = utc_now()
    staged: Path | None = None
    result = EngineResult()
    error, passes, dropped = None, None, None
    before = ProcSnapshot.take()
    stage_s = 0.0
    try:
        url = opts.url
        if obj is None:
            raise choose_error or InstoreError(f"{url}: nothing to read")
        if threads_error is not None:
            raise threads_error
        if cgroup_error is not None:
            raise cgroup_error
        if opts.stage_in:
            staged = stage_in(url, opts.stage_in, opts.scratch)  # type: ignore[arg-type]
            stage_s = time.perf_counter() - before.wall
            url = str(staged)
        result, passes, dropped = _read_passes(opts, url, before.wall, obj)
    except InstoreError as err:
        error = str(err)
    except Exception as err:  # a failed job is a result: keep measuring, record why
        error = _error_line(err)
    finally:
        after = ProcSnapshot.take()
        if staged is not None:
            staged.unlink(missing_ok=True)
    return JobResult(
        url=opts.url,
        start_time=start_time,
        knobs=opts.knobs(),
        measurement=_measurement(before, after, result, stage_s, opts),
        provenance=Provenance.collect(),
        error=explain(opts.url, error),  # an auth refusal says so, and names the fix
        start_lateness_s=lateness,
        cold_cache_dropped=dropped,
        passes=passes,
        ready_at=ready_at,
        http_client=http_client(opts.url, opts.engine),
        reads=result.reads,
    )


def _measurement(
    before: ProcSnapshot, after: ProcSnapshot, r: EngineResult, stage_s: float, opts: ReadOptions
) -> Measurement:
    """User and system CPU are the process's (getrusage): every thread's, so a job of n threads
    is charged its n cores' CPU, and its efficiency is over wall x threads."""
    wall = after.wall - before.wall
    user, sys_ = after.user - before.user, after.sys - before.sys
    split = opts.mt_mode == "cluster"  # a cluster-split job says how many threads really read
    efficiency = cpu_efficiency(user + sys_, wall, opts.threads)
    return Measurement(
        tree=r.tree,
        format=r.format,
        object_name=r.object_name,
        fields_skipped=r.fields_skipped,
        fields_skipped_reason=r.fields_skipped_reason,
        file_size=r.file_size,
        entries=r.entries,
        branches_total=r.branches_total,
        branches_read=r.branches_read,
        events=r.events,
        wall_s=wall,
        open_s=r.open_s,
        open_cpu_s=r.open_cpu_s,
        stage_in_s=stage_s,
        user_s=user,
        sys_s=sys_,
        cpu_efficiency=efficiency,
        cpu_efficiency_note=over_cores(efficiency, opts.threads),
        cpu_wait_s=(after.run_delay_ns - before.run_delay_ns) / 1e9,
        event_rate_hz=r.events / wall if wall > 0 else None,
        bytes_read=r.bytes_read,
        read_calls=r.read_calls,
        open_read_calls=r.open_read_calls,
        vector_reads=r.vector_reads,
        read_size_hist=size_histogram(n for _, n in r.reads),
        bytes_needed=r.bytes_needed,
        read_amplification=r.bytes_read / r.bytes_needed if r.bytes_needed else None,
        mb_per_s=r.bytes_read / 1e6 / wall if wall > 0 else None,
        cache_bytes_effective=r.cache_bytes,
        rchar_delta=after.rchar - before.rchar,
        # a forked job's should be a cold job's (instore.payload.warm): what fork leaves in a clock
        counters={**r.counters, "minor_faults": after.minor_faults - before.minor_faults},
        threads_used=r.threads_used if split or r.threads_note else opts.threads,
        threads_note=r.threads_note,
    )

"""One job of a sweep point: what it runs and sees (command line, binds, credentials), and how a
Dask worker runs it (wait for the barrier, launch, retry on failure)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from instore import credentials
from instore.access import STAGE_IN
from instore.container import Access, Bind, Target
from instore.container.measure import run_contained
from instore.container.runtime import Runtime
from instore.container.warm import run_warm
from instore.payload.runner import CGROUP_ENV
from instore.record import RESOLVER_ENV, JobFate, JobOutcome
from instore.storage import copy_tool
from instore.study import Point
from instore.sweep.engines import engine_of
from instore.urls import is_local, local_path

CONTAINER_CGROUP = "/instore/blkio"  # where a container sees the site's blkio cgroup


@dataclass(frozen=True)
class Job:
    point_key: str
    index: int
    node: int
    argv: tuple[str, ...]
    target: Target
    access: Access
    startup_s: float | None
    timeout_s: float
    retries: int
    backoff_s: float = 2.0
    launch: str = "fork"  # fork: a child of the worker's warm payload; exec: a process of its own
    engine: str = "root"  # which warm payload forks it (one per engine)
    # what it was sent to read, as its record names it: a job that dies before it writes its
    # record keeps them in its row (no client of a load point is lost for want of its URL)
    reads: Mapping[str, Any] = field(default_factory=dict)


def job_reads(point: Point, url: str, pass_urls: Sequence[str] = ()) -> dict[str, Any]:
    """The fields a job's record names its files by: a replay's ``urls`` and ``pass_urls``,
    a read's ``url``."""
    if point.trace is not None:
        return {"urls": [url], "pass_urls": list(pass_urls)}
    return {"url": url}


def run_job(job: Job, start_at: float) -> JobOutcome:
    """Start at ``start_at`` (wall clock) with the other jobs of the point; keep every attempt's fate.

    A failed attempt is retried after an exponential back-off; the record keeps the number of
    attempts and the last error, so failures are counted, never dropped.
    """
    time.sleep(max(0.0, start_at - time.time()))
    skew = time.time() - start_at
    attempts, errors, notes = 0, [], []
    while True:
        attempts += 1
        if job.launch == "fork":
            record, container, note = run_warm(
                job.target, job.argv, job.access, engine=job.engine, timeout=job.timeout_s
            )
            notes += [note] if note else []
        else:
            record, container = run_contained(
                job.target,
                list(job.argv),
                job.access,
                startup_s=job.startup_s,
                timeout=job.timeout_s,
            )
        if not record.get("error"):
            break
        errors.append(str(record["error"]))
        if attempts > job.retries:
            break
        time.sleep(job.backoff_s * 2 ** (attempts - 1))
    if record.get("error"):
        record = {**job.reads, **record}
    fate = JobFate(
        job=job.index,
        node=job.node,
        attempts=attempts,
        status="failed" if record.get("error") else "ok",
        attempt_errors=errors,
        start_skew_s=skew,
        batch_job_id=os.environ.get("SLURM_JOB_ID"),  # the worker's own SLURM job, if any
        launch_note="; ".join(notes) or None,
    )
    return JobOutcome(record, container, fate)


def payload_engine(point: Point) -> str:
    """Which warm payload forks the point's jobs (one per engine on each worker)."""
    return engine_of(point).payload


# instore replay's own per-request time-out, and the share of a job's time-out a replay
# request may take in a sweep: a request stuck that long (its server gone, the link down) ends
# the replay with its record, naming the request and why, before the sweep kills the job
# without one.
REPLAY_REQUEST_TIMEOUT_S = 60.0
REPLAY_REQUEST_SHARE = 1 / 3


def replay_request_timeout(job_timeout_s: float | None) -> float:
    if job_timeout_s is None:
        return REPLAY_REQUEST_TIMEOUT_S
    return min(REPLAY_REQUEST_TIMEOUT_S, job_timeout_s * REPLAY_REQUEST_SHARE)


def job_argv(
    point: Point,
    url: str,
    tree: str,
    scratch: Path,
    start_at: float | None = None,
    trace: Path | None = None,
    job_timeout_s: float | None = None,
    pass_urls: Sequence[str] = (),
    object_format: str | None = None,
) -> tuple[str, ...]:
    """The job's command line; ``object_format`` (with ``tree``, the object's path) spares the
    job opening its file before the clock to find the object."""
    if point.trace is not None:
        if trace is None:
            raise ValueError("a replay point's job needs its trace's directory")
        # absolute: a job in a container runs elsewhere, with the data bound at its real path
        timeout = replay_request_timeout(job_timeout_s)
        return replay_argv(point, url, trace.resolve(), start_at, timeout, pass_urls)
    argv = ["instore", "read", url, "--tree", tree, *point.read_args()]
    if object_format is not None:
        argv += ["--format", object_format]
    if start_at is not None:
        argv += ["--start-at", f"{start_at:.3f}"]
    if point.protocol == STAGE_IN:
        argv += ["--stage-in", copy_tool(url), "--scratch", str(scratch)]
    return tuple(argv)


def replay_argv(
    point: Point,
    url: str,
    trace: Path,
    start_at: float | None = None,
    request_timeout_s: float = REPLAY_REQUEST_TIMEOUT_S,
    pass_urls: Sequence[str] = (),
) -> tuple[str, ...]:
    """`instore replay` of the point's trace against the file at ``url``: one run record
    (``--record-only``) on stdout, as `instore read` prints one; a point's fixed time (the
    HEPiX method) replays it for that long, as it makes `instore read` read for that long."""
    # --no-check: the sweep's plan and preflight found the files; a replay's own check forks
    argv = ["instore", "replay", str(trace), "--target", url, "--record-only", "--no-check",
            "--timeout", f"{request_timeout_s:g}"]  # fmt: skip
    if point.fixed_time_s > 0:
        argv += ["--fixed-time", str(point.fixed_time_s)]
        for later in pass_urls:  # the files its later passes read, cold
            argv += ["--pass-target", later]
    if start_at is not None:
        argv += ["--start-at", f"{start_at:.3f}"]
    return tuple(argv)


def in_container(target: Target) -> bool:
    return target.runtime is not Runtime.NONE


def access_for(
    urls: Iterable[str],
    env: dict[str, str],
    data: Path,
    scratch: Path,
    fuse: bool,
    container: bool,
) -> Access:
    """What the job must see: the data, scratch, the directories of local URLs, the grid
    credentials and, in a container, the site's blkio cgroup (the payload joins it so its reads
    are throttled)."""
    local = {Path(local_path(u)).parent for u in urls if is_local(u)}
    binds = [Bind(data.resolve()), Bind(scratch.resolve(), writable=True)]
    binds += [
        Bind(p, propagate=fuse) for p in sorted(local) if not p.is_relative_to(data.resolve())
    ]
    env = dict(env)
    if container and env.get(CGROUP_ENV):
        binds.append(Bind(Path(env[CGROUP_ENV]), writable=True, inside=CONTAINER_CGROUP))
        env[CGROUP_ENV] = CONTAINER_CGROUP
    # The grid credentials found here, as grid jobs find them: files bound read-only, variables
    # naming them (a token given as a value is handed over as a private file).
    creds = credentials.for_job(container, scratch.resolve() / ".instore-creds")
    binds += [Bind(host, inside=inside) for host, inside in creds.binds]
    env.update(creds.env)
    env.update(resolver_env(os.environ))
    return Access(binds=tuple(binds), env=env, fuse=fuse)


def resolver_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The caller's resolver settings (``RESOLVER_ENV``) that are set: a job gets them too, as
    it gets the grid credentials. The XRootD client looks up the worker's own addresses at each
    login (container/hosts.py); where a resolver loses a query, its time-out (5 s by default)
    is what a burst of opens waits, and RES_OPTIONS="timeout:1" shortens it."""
    return {k: environ[k] for k in RESOLVER_ENV if k in environ}

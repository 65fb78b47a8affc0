"""Run a site's sections: points one after another, the jobs of a point together.

Points never overlap in time (a storage benchmark whose points run side by side measures
itself). Before each point caches are dropped (page cache on the workers, the server side on
emulated sites) and the emulated disk's block readahead is set.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from distributed import Client
from tqdm import tqdm

from instore import credentials
from instore.container import Access, Bind, measure_startup, select_runtime, target_for, warm
from instore.container.runtime import Runtime, Target
from instore.errors import InstoreError
from instore.generate.layouts import RNTUPLE_LAYOUTS
from instore.payload import engine_rntuple
from instore.payload.runner import CGROUP_ENV
from instore.record import JobOutcome, PointInfo, SiteInfo, row, utc_now
from instore.rootenv import http_auth_problem
from instore.site import LiveSite, SiteConfig, load_site, open_site
from instore.study import Point, Study, expand, grid_skip_reason
from instore.study.files import replica_name
from instore.study.grid import section_sites
from instore.sweep.cluster import ClusterSpec, cluster_client
from instore.sweep.jobs import Job, run_job
from instore.sweep.store import RecordStore

log = logging.getLogger(__name__)
BARRIER_S = 1.0  # jobs of a point are told to start this long after submission
CONTAINER_CGROUP = "/instore/blkio"  # where a container sees the site's blkio cgroup
FALLBACK_ALIGN_S = 10.0  # measurement start after launch when start-up could not be measured
LAUNCHES = ("fork", "exec")  # a child of the worker's warm payload, or a process of its own
# Concurrent jobs start measuring this long after launch, beyond twice the measured start-up:
# a container's start varies by about a second; a fork by milliseconds.
ALIGN_MARGIN_S = {"exec": 1.0, "fork": 0.2}


@dataclass
class SweepOptions:
    study: Study
    site: str
    sections: Sequence[str]
    data: Path = Path("data/files")
    results: Path = Path("results")
    scratch: Path = Path("data/scratch")
    force: bool = False
    runtime: str = "none"
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    progress: bool = True
    launch: str = "fork"

    def __post_init__(self) -> None:
        if self.launch not in LAUNCHES:
            raise InstoreError(
                f"unknown launch {self.launch!r}", f"choose one of {', '.join(LAUNCHES)}"
            )


@dataclass
class SweepSummary:
    site: str
    measured: int = 0
    already: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    failed_points: int = 0
    repairs: list[str] = field(default_factory=list)
    tables: dict[str, Path] = field(default_factory=dict)

    def line(self) -> str:
        skipped = sum(self.skipped.values())
        line = f"{self.site}: measured {self.measured} point(s), {self.already} already measured, {skipped} skipped, {self.failed_points} with failed jobs"
        return line + (f", {len(self.repairs)} site repair(s)" if self.repairs else "")


def files_for(point: Point, replicas: int) -> list[str]:
    """Job j reads replica j: concurrent jobs read different files (wrapping if too few)."""
    return [replica_name(point.layout, j % replicas) for j in range(point.jobs)]


@dataclass
class Plan:
    todo: list[tuple[Point, str]]  # (point, key) still to measure
    keys: set[str]  # every point of the study's sections: what the tables show
    files: list[Path]  # the input files the points to measure need

    @property
    def already(self) -> int:
        return len(self.keys) - len(self.todo)


def plan(opts: SweepOptions, site: str) -> Plan:
    """What to measure, what is already measured, and the input files needed."""
    study, store = opts.study, RecordStore(opts.results, site)
    files_key = dataclasses.asdict(study.files)
    done = set() if opts.force else store.done_keys()
    todo, keys, needed = [], set(), set()
    for section in opts.sections:
        for point in expand(study, section):
            key = point.key(site, files_key)
            keys.add(key)
            if key not in done:
                todo.append((point, key))
                needed.update(files_for(point, study.files.replicas))
    paths = [opts.data / name for name in sorted(needed)]
    missing = [p for p in paths if not p.exists()]
    if missing:
        f = study.files
        raise InstoreError(
            f"{len(missing)} input file(s) missing, e.g. {missing[0]}",
            f"run: instore generate --size-mb {f.size_mb} --replicas {f.replicas} --seed {f.seed} --cluster-mb {f.cluster_mb} --out {opts.data}",
        )
    return Plan(todo, keys, paths)


def site_skip_reason(point: Point, site: SiteConfig) -> str | None:
    """Why the site's file alone rules a point out (None: it can run there)."""
    reason = site.rules_out(
        point.protocol, point.block_readahead_kb, point.sets_conditions, point.cache_state
    )
    if reason is None and point.engine == "root" and point.protocol == "http":
        reason = http_auth_problem(site.auth)  # the root engine's HTTP client lacks the auth
    return reason


def engine_skip_reason(point: Point) -> str | None:
    """Why the point's engine cannot read its file over its protocol here (None: it can): the
    root engine reads no RNTuple over http through XrdClHttp (RNTuple has no HTTP of its own)."""
    if point.engine == "root" and point.protocol == "http" and point.layout in RNTUPLE_LAYOUTS:
        return engine_rntuple.http_problem()
    return None


def section_skip_reason(study: Study, point: Point, site: str) -> str | None:
    """Why the study keeps a section off this site (None: the section runs here)."""
    sites = section_sites(study, point.section)
    if sites is not None and site not in sites:
        return f"section {point.section} runs on {', '.join(sites)} only"
    return None


def cluster_skip_reason(point: Point, workers: int) -> str | None:
    if point.nodes > workers:
        return f"needs {point.nodes} nodes, the cluster has {workers}"
    return None


def job_argv(
    point: Point, url: str, tree: str, scratch: Path, start_at: float | None = None
) -> tuple[str, ...]:
    argv = ["instore", "read", url, "--tree", tree, *point.read_args()]
    if start_at is not None:
        argv += ["--start-at", f"{start_at:.3f}"]
    if point.protocol == "stage-in":
        tool = "xrdcp" if urlparse(url).scheme in ("root", "roots", "http", "https") else "cp"
        argv += ["--stage-in", tool, "--scratch", str(scratch)]
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
    local = {Path(u).parent for u in urls if urlparse(u).scheme in ("", "file")}
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
    return Access(binds=tuple(binds), env=env, fuse=fuse)


def run_site(opts: SweepOptions) -> SweepSummary:
    """Measure every missing point of the site's sections; always rewrite the tables."""
    site = load_site(opts.site)
    summary = SweepSummary(site.name)
    planned = plan(opts, site.name)
    summary.already, todo = planned.already, []
    for point, key in planned.todo:
        reason = section_skip_reason(opts.study, point, site.name) or site_skip_reason(point, site)
        reason = reason or grid_skip_reason(opts.study, point) or engine_skip_reason(point)
        if reason:  # known before the site is brought up: a section may need no site at all
            summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
        else:
            todo.append((point, key))
    store = RecordStore(opts.results, site.name)
    if todo:
        _sweep(opts, site, planned, todo, store, summary)
    summary.tables = store.write_tables(opts.sections, planned.keys)
    return summary


def _sweep(
    opts: SweepOptions,
    site: SiteConfig,
    planned: Plan,
    todo: list[tuple[Point, str]],
    store: RecordStore,
    summary: SweepSummary,
) -> None:
    """Bring the site and the workers up, start a warm payload on each worker, measure the
    points, and take it all down again; each step's time is logged."""
    opts.scratch.mkdir(parents=True, exist_ok=True)
    target = target_for(select_runtime(opts.runtime).runtime)
    spec = dataclasses.replace(
        opts.cluster,
        threads=max(opts.cluster.threads, max(p.fill for p, _ in todo)),
        nodes=max(opts.cluster.nodes, site.nodes, max(p.nodes for p, _ in todo)),
        log_directory=str(store.dir / "batch-logs"),
    )
    clock = _Clock()
    with open_site(site, files=planned.files, results=opts.results) as live:
        clock.lap(f"site {site.name} open")
        with cluster_client(spec) as (client, workers):
            clock.lap(f"{len(workers)} Dask worker(s) up")
            access = sweep_access(opts, live, target, [p for p, _ in todo])
            try:
                if opts.launch == "fork":
                    _start_warm(client, workers, target, access)
                    clock.lap("warm payloads ready")
                run = SweepRun(
                    opts=opts, live=live, client=client, workers=workers, target=target,
                    access=access, store=store, summary=summary, site=site_info(live),
                    startup=_container_startup(opts, target, access), align_s=0.0,
                )  # fmt: skip
                run = dataclasses.replace(run, align_s=_warm_up(run, todo[0][0]))
                clock.lap("warm-up job done")
                _measure(run, todo)
                clock.lap(f"{len(todo)} point(s) measured")
            finally:
                if opts.launch == "fork":
                    _stop_warm(client, workers)
        clock.lap("workers stopped")
    clock.lap(f"site {site.name} closed")


class _Clock:
    """Logs how long each step of a sweep's set-up and teardown took."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def lap(self, what: str) -> None:
        now = time.perf_counter()
        log.info("%s (%.1f s)", what, now - self.last)
        self.last = now


@dataclass(frozen=True)
class SweepRun:
    """What every point of one site's sweep is run with: the site and cluster brought up, the
    job's container and how long it takes to start, and where records go."""

    opts: SweepOptions
    live: LiveSite
    client: Client
    workers: list[str]
    target: Target
    access: Access  # what every job of the sweep sees: data, scratch, the site's paths, creds
    store: RecordStore
    summary: SweepSummary
    site: SiteInfo
    startup: float | None  # container start-up (median); None outside a container or warm
    align_s: float  # concurrent jobs start measuring this long after launch


def site_info(live: LiveSite) -> SiteInfo:
    cfg = live.config
    return SiteInfo(cfg.name, cfg.kind, getattr(cfg, "profile", None), live.conditions())


def sweep_access(
    opts: SweepOptions, live: LiveSite, target: Target, points: Sequence[Point]
) -> Access:
    """What the sweep's jobs see, once for all its points: a warm payload's container is
    started once with it. Every file every point reads is reachable, over its protocol."""
    replicas = opts.study.files.replicas
    urls = {live.url(p.protocol, f) for p in points for f in files_for(p, replicas)}
    fuse = any(p.protocol == "fuse" for p in points)
    return access_for(
        sorted(urls), live.job_env(), opts.data, opts.scratch, fuse, in_container(target)
    )


def _start_warm(client: Client, workers: list[str], target: Target, access: Access) -> None:
    """One warm payload per worker, before the first point: start-up is paid once."""
    infos = client.run(warm.start, target, access, workers=workers)
    threads = max(int(i.get("threads", 1)) for i in infos.values())
    log.info("warm payloads: %s, %d thread(s) in each parent", target.runtime, threads)
    if threads > 1:  # fork keeps only the forking thread; say so rather than hide it
        log.warning("a warm payload runs %d threads when it forks its jobs", threads)


def _stop_warm(client: Client, workers: list[str]) -> None:
    try:
        client.run(warm.stop_all, workers=workers)
    except Exception as err:  # the workers are going anyway; their payloads die with them
        log.warning("stopping the warm payloads: %s", err)


def _container_startup(opts: SweepOptions, target: Target, access: Access) -> float | None:
    """Container start-up (the median of 3 empty starts), for jobs that each start one."""
    if target.runtime is Runtime.NONE or opts.launch == "fork":
        return None
    return measure_startup(target, access, runs=3).median_s


def _measure(run: SweepRun, todo: list[tuple[Point, str]]) -> None:
    live, summary = run.live, run.summary
    bar = tqdm(
        todo,
        desc=live.config.name,
        unit="point",
        disable=not run.opts.progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    for point, key in bar:
        bar.set_postfix_str(f"{point.section}: {point.label()}"[:80])
        reason = cluster_skip_reason(point, len(run.workers))
        if reason:
            summary.skipped[reason] = summary.skipped.get(reason, 0) + 1
            continue
        repaired = live.heal()
        for line in repaired:
            log.warning("%s: before point %s: %s", live.config.name, point.label(), line)
        summary.repairs += repaired
        rows = _run_point(run, point, key, "; ".join(repaired) or None)
        run.store.append(rows)
        summary.measured += 1
        summary.failed_points += any(r["status"] != "ok" for r in rows)


def _warm_up(run: SweepRun, point: Point) -> float:
    """Run one short job first, on a worker as the points' jobs run: it warms the payload's
    start-up (bytecode, JIT caches, the first fork) and tells how long start-up takes, so
    concurrent jobs can be told when to start measuring together."""
    opts, live = run.opts, run.live
    protocol = "posix" if "posix" in live.protocols else live.protocols[0]
    url = live.url(protocol, replica_name(point.layout, 0))
    argv = ("instore", "read", url, "--tree", opts.study.tree, "--entries", "0.01")
    job = Job("warm-up", 0, 0, argv, run.target, run.access, run.startup,
              opts.study.timeout_s, retries=0, launch=opts.launch)  # fmt: skip
    future = run.client.submit(run_job, job, time.time(), workers=[run.workers[0]], pure=False)
    outcome: JobOutcome = future.result()
    record, container = outcome.payload, outcome.container
    if record.get("error"):  # the points will record their own failures; keep measuring
        log.warning(
            "warm-up job failed (%s); aligning concurrent jobs %.0f s after launch",
            record["error"],
            FALLBACK_ALIGN_S,
        )
        return FALLBACK_ALIGN_S
    startup = container.launch_s
    if startup is None:  # a payload from an image without ready_at
        startup = container.outer_wall_s - float(record.get("wall_s") or 0)
    log.info("warm-up job: %s launch took %.3f s", container.launch, startup)
    return 2 * startup + ALIGN_MARGIN_S[opts.launch]


def job_start_at(jobs: int, now: float) -> float:
    """When a point's jobs start: together, a barrier after submission, or at once when alone
    (a second per point of the study otherwise spent waiting for nothing)."""
    return now + BARRIER_S if jobs > 1 else now


def _run_point(run: SweepRun, point: Point, key: str, repaired: str | None) -> list[dict[str, Any]]:
    """Measure one point: link conditions set, site cache emptied or filled, caches dropped,
    its jobs started together; one row per job."""
    opts, live = run.opts, run.live
    live.set_block_readahead(point.block_readahead_kb)
    conditions = live.set_conditions(point.rtt_ms, point.bandwidth_mbit)
    files = files_for(point, opts.study.files.replicas)
    live.prepare_cache(point.cache_state, sorted(set(files)))  # off the clock
    live.drop_caches()
    disk_before, link_before = live.disk_bytes_read(), live.link_bytes()
    reads_before = live.disk_reads()
    urls = [live.url(point.protocol, f) for f in files]
    start_at = job_start_at(point.jobs, time.time())
    measure_at = start_at + run.align_s if point.jobs > 1 else None
    jobs = [
        Job(
            point_key=key,
            index=j,
            node=j // point.fill,
            argv=job_argv(point, url, opts.study.tree, opts.scratch, measure_at),
            target=run.target,
            access=run.access,
            startup_s=run.startup,
            timeout_s=opts.study.timeout_s,
            retries=opts.study.retries,
            backoff_s=opts.study.backoff_s,
            launch=opts.launch,
        )
        for j, url in enumerate(urls)
    ]
    measured_at = utc_now()
    futures = [
        run.client.submit(
            run_job,
            job,
            start_at,
            workers=[run.workers[job.node]],
            allow_other_workers=False,
            pure=False,
        )
        for job in jobs
    ]
    outcomes: list[JobOutcome] = run.client.gather(futures)
    disk_after, link_after = live.disk_bytes_read(), live.link_bytes()
    reads_after = live.disk_reads()
    info = PointInfo(
        point_key=key,
        jobs=point.jobs,
        measured_at=measured_at,
        disk_bytes_read=None if None in (disk_before, disk_after) else disk_after - disk_before,
        repaired_before=repaired,
        link_bytes_read=None if None in (link_before, link_after) else link_after - link_before,
        rtt_ms_measured=conditions.get("rtt_ms_measured"),
        bandwidth_mbit_applied=conditions.get("bandwidth_mbit_applied"),
        disk_reads=None if None in (reads_before, reads_after) else reads_after - reads_before,
    )
    fields = dataclasses.asdict(point)
    return [row(outcome, info, run.site, fields) for outcome in outcomes]

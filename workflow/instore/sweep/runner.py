"""Run a site's sections: points one after another, the jobs of a point together.

Points never overlap in time (a storage benchmark whose points run side by side measures
itself). Before each point caches are dropped (page cache on the workers, the server side on
emulated sites) and the emulated disk's block readahead is set. A point's next repetition, if
its rule asks for one (instore.sweep.adaptive), runs right after it; the machine itself is
probed before, between and after the points (instore.sweep.noise).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from distributed import Client
from tqdm import tqdm

from instore.container import Access, select_runtime, target_for
from instore.container.runtime import Target
from instore.record import JobOutcome, PointInfo, SiteInfo, row, utc_now
from instore.site import LiveSite, SiteConfig, load_site, open_site
from instore.site.real import site_dataset
from instore.site.usage import usage_between
from instore.study import Point
from instore.summary.load import write_skipped
from instore.sweep import payloads
from instore.sweep.adaptive import Series
from instore.sweep.cluster import cluster_client, fewest_cores
from instore.sweep.jobs import Job, job_argv, job_reads, payload_engine, run_job
from instore.sweep.noise import NoiseMonitor
from instore.sweep.options import SweepOptions, SweepSummary
from instore.sweep.plan import Inputs, Plan, cluster_skip_reason, plan
from instore.sweep.ramp import STOP_COLUMN, Ramp
from instore.sweep.store import RecordStore

log = logging.getLogger(__name__)
BARRIER_S = 1.0  # jobs of a point are told to start this long after submission
FALLBACK_ALIGN_S = 10.0  # measurement start after launch when start-up could not be measured
# Concurrent jobs start measuring this long after launch, beyond twice the measured start-up:
# a container's start varies by about a second; a fork by milliseconds.
ALIGN_MARGIN_S = {"exec": 1.0, "fork": 0.2}


def run_site(opts: SweepOptions) -> SweepSummary:
    """Measure every missing point of the site's sections; always rewrite the tables."""
    site = load_site(opts.site)
    dataset = site_dataset(site, opts.results) if site.dataset else None  # surveyed first
    planned = plan(opts, site, dataset)
    summary = SweepSummary(site.name, already=planned.already, skipped=dict(planned.skipped),
                           substituted=dict(planned.substituted))  # fmt: skip
    todo = planned.todo
    store = RecordStore(opts.results, site.name)
    noise = NoiseMonitor(opts.results, site.name) if todo else None
    if noise is not None:
        noise.start()  # before the site and the workers come up: the machine as it was
    for site_now, points in disk_variants(site, todo):
        _sweep(opts, site_now, planned, points, store, summary, noise)
    if noise is not None:
        noise.close()
    summary.tables = store.write_tables(opts.sections, planned.keys)
    write_skipped(opts.results, site.name, planned.by_section)  # the pages say why
    return summary


def disk_variants(
    site: SiteConfig, todo: list[tuple[Point, str]]
) -> list[tuple[SiteConfig, list[tuple[Point, str]]]]:
    """The site as each point's disk wants it, with the points for each, in order: a point
    with a file system of its own (the filesystem axis) runs on the site brought up on a disk
    made with it, since a disk cannot change file system under a running server."""
    own = site.disk.filesystem if site.disk else None
    groups: dict[str | None, list[tuple[Point, str]]] = {}
    for point, key in todo:
        wanted = None if point.filesystem in (None, own) else point.filesystem
        groups.setdefault(wanted, []).append((point, key))
    variants = []
    for filesystem, points in groups.items():
        variant = site
        if filesystem is not None and site.disk is not None:
            variant = dataclasses.replace(
                site, disk=dataclasses.replace(site.disk, filesystem=filesystem)
            )
        variants.append((variant, points))
    return variants


def _sweep(
    opts: SweepOptions,
    site: SiteConfig,
    planned: Plan,
    todo: list[tuple[Point, str]],
    store: RecordStore,
    summary: SweepSummary,
    noise: NoiseMonitor | None = None,
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
    inputs = planned.inputs
    needed = sorted({f for p, _ in todo for f in inputs.read(p)})
    remote = needed if inputs.dataset else []
    files = [] if inputs.dataset else [opts.data / name for name in needed]
    with open_site(site, files=files, results=opts.results, remote=remote) as live:
        clock.lap(f"site {site.name} open")
        with cluster_client(spec) as (client, workers):
            clock.lap(f"{len(workers)} Dask worker(s) up")
            access = payloads.sweep_access(opts, live, target, [p for p, _ in todo], inputs)
            try:
                if opts.launch == "fork":
                    # one per engine the points use (the warm-up job uses the first point's):
                    # starting ROOT's (imports, cling, JIT) costs about 20 s here, for nothing
                    # in a sweep of uproot or replay points
                    engines = sorted({payload_engine(p) for p, _ in todo})
                    formats = inputs.formats([p for p, _ in todo])
                    spares = payloads.spares_for([p for p, _ in todo])
                    payloads.start_warm(client, workers, target, access, engines, formats, spares)
                    clock.lap("warm payloads ready")
                run = SweepRun(
                    opts=opts, live=live, client=client, workers=workers, target=target,
                    access=access, store=store, summary=summary, site=site_info(live),
                    startup=payloads.container_startup(opts, target, access), align_s=0.0,
                    inputs=inputs, series=planned.series, noise=noise,
                    cores=fewest_cores(client, workers), ramp=planned.ramp or Ramp(site.load),
                )  # fmt: skip
                align_s, launch_s = _warm_up(run, todo[0][0])
                run = dataclasses.replace(run, align_s=align_s, launch_s=launch_s)
                clock.lap("warm-up job done")
                before = summary.measured
                _measure(run, todo)
                clock.lap(f"{summary.measured - before} point(s) measured")
            finally:
                if opts.launch == "fork":
                    payloads.stop_warm(client, workers)
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
    inputs: Inputs  # what the points read: the study's file sets or the site's own dataset
    launch_s: float = 0.0  # one job's launch; a worker's warm payload forks its jobs in turn
    series: Mapping[str, Series] = field(default_factory=dict)  # key -> its point's repetitions
    noise: NoiseMonitor | None = None  # the machine's probes, between points
    cores: int | None = None  # the fewest cores a worker may run on (None: not asked)
    ramp: Ramp | None = None  # the load ramp: where it stopped, what it skips after


def site_info(live: LiveSite) -> SiteInfo:
    cfg = live.config
    return SiteInfo(cfg.name, cfg.kind, getattr(cfg, "profile", None), live.conditions())


def _measure(run: SweepRun, todo: list[tuple[Point, str]]) -> None:
    """The points in order; a point's next repetition, if its rule asks, right after it."""
    live, summary = run.live, run.summary
    queue = list(todo)
    bar = tqdm(
        total=len(queue),
        desc=live.config.name,
        unit="point",
        disable=not run.opts.progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    while queue:
        point, key = queue.pop(0)
        bar.update(1)
        bar.set_postfix_str(f"{point.section}: {point.label()}"[:80])
        reason = cluster_skip_reason(point, len(run.workers), run.cores) or (
            run.ramp.skip_reason(point) if run.ramp is not None else None
        )
        if reason:
            summary.skip(reason)
            continue
        repaired = live.heal()
        for line in repaired:
            log.warning("%s: before point %s: %s", live.config.name, point.label(), line)
        summary.repairs += repaired
        noise = run.noise.between().fields() if run.noise is not None else {}
        rows = _run_point(run, point, key, "; ".join(repaired) or None)
        series = run.series.get(key)
        repeat = series.add(point.repetition, rows) if series is not None else {}
        stop = run.ramp.observe(point, rows) if run.ramp is not None else None
        for r in rows:
            r.update(repeat, **noise, **({STOP_COLUMN: stop} if stop else {}))
        if stop:
            log.warning("%s: %s: %s", live.config.name, point.section, stop)
        run.store.append(rows)
        again = series.next() if series is not None else None
        if again is not None:
            queue.insert(0, again)
            bar.total += 1
        for note in {r["launch_note"] for r in rows if r.get("launch_note")}:
            log.warning("%s: point %s: %s", live.config.name, point.label(), note)
        summary.measured += 1
        summary.failed_points += any(r["status"] != "ok" for r in rows)
    bar.close()


def _warm_up(run: SweepRun, point: Point) -> tuple[float, float]:
    """Run one short job first, on a worker as the points' jobs run: it warms the payload's
    start-up (bytecode, JIT caches, the first fork) and tells how long start-up takes, so
    concurrent jobs can be told when to start measuring together. Returns that alignment and
    one job's launch time."""
    opts, live = run.opts, run.live
    # the first point's own protocol: the jobs' container sees what the points read, and no
    # more (seen: a sweep of xrootd points only, whose posix warm-up found no file)
    protocol = point.protocol if point.protocol in live.protocols else live.protocols[0]
    url = live.url(protocol, run.inputs.files(point)[0])
    engine = payload_engine(point)
    argv = ("instore", "read", url, "--tree", run.inputs.tree(point),
            "--entries", "0.01", "--engine", engine)  # fmt: skip
    if (fmt := run.inputs.object_format(point)) is not None:
        argv += ("--format", fmt)
    job = Job("warm-up", 0, 0, argv, run.target, run.access, run.startup,
              opts.study.timeout_s, retries=0, launch=opts.launch, engine=engine)  # fmt: skip
    future = run.client.submit(run_job, job, time.time(), workers=[run.workers[0]], pure=False)
    outcome: JobOutcome = future.result()
    record, container = outcome.payload, outcome.container
    if record.get("error"):  # the points will record their own failures; keep measuring
        log.warning(
            "warm-up job failed (%s); aligning concurrent jobs %.0f s after launch",
            record["error"],
            FALLBACK_ALIGN_S,
        )
        return FALLBACK_ALIGN_S, 0.0
    startup = container.launch_s
    if startup is None:  # a payload from an image without ready_at
        startup = container.outer_wall_s - float(record.get("wall_s") or 0)
    log.info("warm-up job: %s launch took %.3f s", container.launch, startup)
    return 2 * startup + ALIGN_MARGIN_S[opts.launch], startup


def job_start_at(jobs: int, now: float) -> float:
    """When a point's jobs start: together, a barrier after submission, or at once when alone
    (a second per point of the study otherwise spent waiting for nothing)."""
    return now + BARRIER_S if jobs > 1 else now


def _run_point(run: SweepRun, point: Point, key: str, repaired: str | None) -> list[dict[str, Any]]:
    """Measure one point: link conditions set, site cache emptied or filled, caches dropped,
    its jobs started together; one row per job."""
    opts, live = run.opts, run.live
    live.set_block_readahead(point.block_readahead_kb)
    live.set_io_scheduler(point.io_scheduler)
    conditions = live.set_conditions(point.rtt_ms, point.bandwidth_mbit)
    files, tree = run.inputs.files(point), run.inputs.tree(point)
    live.prepare_cache(point.cache_state, sorted(set(files)))  # off the clock
    live.drop_caches()
    disk_before, link_before = live.disk_bytes_read(), live.link_bytes()
    reads_before = live.disk_reads()
    urls = [live.url(point.protocol, f) for f in files]
    later = [[live.url(point.protocol, f) for f in each]
             for each in run.inputs.passes(point)]  # fmt: skip
    start_at = job_start_at(point.jobs, time.time())
    # the last of a node's jobs is forked after the others: it is ready (fill - 1) launches later
    align = run.align_s + (point.fill - 1) * run.launch_s
    measure_at = start_at + align if point.jobs > 1 else None
    jobs = [
        Job(
            point_key=key,
            index=j,
            node=j // point.fill,
            argv=job_argv(
                point,
                url,
                tree,
                opts.scratch,
                measure_at,
                opts.trace(point.trace) if point.trace else None,
                opts.study.timeout_s,
                later[j],
                run.inputs.object_format(point),
            ),
            target=run.target,
            access=run.access,
            startup_s=run.startup,
            timeout_s=opts.study.timeout_s,
            retries=opts.study.retries,
            backoff_s=opts.study.backoff_s,
            launch=opts.launch,
            engine=payload_engine(point),
            reads=job_reads(point, url, later[j]),
        )
        for j, url in enumerate(urls)
    ]
    measured_at = utc_now()
    counters_before = live.counters()
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
    usage = usage_between(counters_before, live.counters(), live.bandwidth_mbit())
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
        usage=usage,
    )
    fields = dataclasses.asdict(point)
    return [row(outcome, info, run.site, fields) for outcome in outcomes]

"""What a sweep's jobs run in, set up once per sweep: the access every job sees (data, scratch,
the site's paths, credentials), one warm payload per worker and engine, warm for the formats the
points read, and a container's start-up where each job starts its own."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from distributed import Client

from instore.access import FUSE
from instore.container import Access, measure_startup, warm
from instore.container.runtime import Runtime, Target
from instore.payload.specs import READ_COMMAND
from instore.site import LiveSite
from instore.study import Point
from instore.sweep.engines import engine_of
from instore.sweep.jobs import access_for, in_container
from instore.sweep.options import SweepOptions
from instore.sweep.plan import Inputs

log = logging.getLogger(__name__)


def sweep_access(
    opts: SweepOptions,
    live: LiveSite,
    target: Target,
    points: Sequence[Point],
    inputs: Inputs,
) -> Access:
    """What the sweep's jobs see, once for all its points: a warm payload's container is
    started once with it. Every file every point reads is reachable, over its protocol."""
    urls = {live.url(p.protocol, f) for p in points for f in inputs.read(p)}
    fuse = any(p.protocol == FUSE for p in points)
    return access_for(
        sorted(urls), live.job_env(), opts.data, opts.scratch, fuse, in_container(target)
    )


def spares_for(points: Sequence[Point]) -> dict[str, int]:
    """Reads each warm payload forks ahead: the most read jobs a point runs on one worker (its
    fill). None for jobs that copy no pages before their clock (a replay's)."""
    spares: dict[str, int] = {}
    for point in points:
        spec = engine_of(point).spec
        if spec.command == READ_COMMAND:
            spares[spec.payload] = max(spares.get(spec.payload, 0), point.fill)
    return spares


def start_warm(
    client: Client,
    workers: list[str],
    target: Target,
    access: Access,
    engines: list[str],
    formats: tuple[str, ...],
    spares: Mapping[str, int],
) -> None:
    """One warm payload per worker and engine, before the first point, warm for the formats the
    points read, with its ``spares`` (``spares_for``):
    start-up is paid once, and each job's copy of the payload's pages between points."""
    ran = client.run(warm.start, target, access, engines, formats, spares, workers=workers)
    infos = [i for per in ran.values() for i in per]
    threads = max(int(i.get("threads", 1)) for i in infos)
    log.info(
        "warm payloads: %s, %s for %s, %d thread(s) in each parent, up to %d spare read(s)",
        target.runtime,
        " and ".join(engines),
        " and ".join(formats),
        threads,
        max(int(i.get("spares", 0)) for i in infos),
    )
    if threads > 1:  # fork keeps only the forking thread; say so rather than hide it
        log.warning("a warm payload runs %d threads when it forks its jobs", threads)


def stop_warm(client: Client, workers: list[str]) -> None:
    try:
        client.run(warm.stop_all, workers=workers)
    except Exception as err:  # the workers are going anyway; their payloads die with them
        log.warning("stopping the warm payloads: %s", err)


def container_startup(opts: SweepOptions, target: Target, access: Access) -> float | None:
    """Container start-up (the median of 3 empty starts), for jobs that each start one."""
    if target.runtime is Runtime.NONE or opts.launch == "fork":
        return None
    return measure_startup(target, access, runs=3).median_s

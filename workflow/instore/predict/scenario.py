"""What a prediction takes beside the trace and the profile (``Scenario``: protocol, XCache
state, clients, jobs per node, CPU speed, a fixed time) and what it gives (``Prediction``:
wall, CPU efficiency, events/s and where the time goes, by ``PARTS``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from instore.errors import InstoreError
from instore.predict.profile import Profile

XCACHE_STATES = ("cold", "warm")
PARTS = ("think", "round_trips", "server", "disk", "disk_queue", "transfer")
# each part in words, for the pages' sentences ("waits most on the disk's queue")
PART_WORDS = {"round_trips": "round trips", "transfer": "the link", "disk": "the disk",
              "disk_queue": "the disk's queue", "server": "the server", "think": "its own CPU"}  # fmt: skip


@dataclass(frozen=True)
class Scenario:
    """The inputs beside the profile: protocol, XCache state, clients reading the site at
    once, jobs sharing a node's cores (None: think time as recorded), and the profile the
    trace was recorded on (its client's CPU per request and per MB is then replaced by this
    site's; None: the recorded think time already has this site's client CPU)."""

    protocol: str | None = None
    xcache: str | None = None
    clients: int = 1
    jobs_per_node: int | None = None
    # the worker's CPU this many times as fast as the recording's for this job (None: as
    # recorded): a newer node, or the same one in another hour (the fidelity bench's jobs
    # spent 0.82 to 1.37 times their recording's CPU, bench/replay_fidelity.py)
    cpu_speed: float | None = None
    recorded_on: Profile | None = None
    # a fixed-time point (the load section): the jobs replay the trace pass after pass, each
    # on its own copy, until this many seconds have passed; the prediction then counts the
    # passes as the replayer does (whole ones, plus the share of a pass's bytes read)
    until_s: float | None = None


@dataclass
class Prediction:
    """What the model says for one trace, profile and scenario (per client unless named)."""

    trace: str
    site: str
    protocol: str
    xcache: str | None
    clients: int
    wall_s: float  # mean over the clients
    wall_max_s: float
    cpu_s: float
    cpu_efficiency: float  # CPU / wall (at most the job's threads)
    cpu_efficiency_per_core: float  # CPU / (wall x threads): at most 1
    threads: int
    events_per_s: float | None  # every client's events over the wall
    aggregate_mb_per_s: float
    breakdown: dict[str, float] = field(default_factory=dict)  # seconds, summing to wall_s
    passes: float | None = None  # in ``Scenario.until_s`` (mean over the clients)
    # within ``Scenario.until_s``: every client's whole passes' walls, pass after pass
    pass_walls: list[float] = field(default_factory=list)
    what_if: dict[str, Any] = field(default_factory=dict)

    @property
    def waits_on(self) -> str:
        """The largest part of the time away from CPU (think excluded)."""
        io = {k: v for k, v in self.breakdown.items() if k != "think"}
        return max(io, key=lambda k: io[k]) if io else "think"

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {**asdict(self), "waits_on": self.waits_on}


def checked(sc: Scenario, profile: Profile) -> float:
    """The scenario's CPU speed factor (1: as recorded), once its cache state and speed are
    known good; either not is a one-line error."""
    if sc.xcache is not None:
        if sc.xcache not in XCACHE_STATES:
            raise InstoreError(f"--xcache {sc.xcache}: not a cache state",
                               f"use one of {', '.join(XCACHE_STATES)}")  # fmt: skip
        if profile.xcache is None:
            raise InstoreError(
                f"site {profile.site}: its profile has no XCache",
                "drop --xcache, or add an xcache entry to the profile (docs/predict.md)",
            )
    value = sc.cpu_speed
    if value is None:
        return 1.0
    if not math.isfinite(value) or value <= 0:
        raise InstoreError(f"--cpu-speed {value:g}: not a speed",
                           "give how many times as fast as the recording's CPU, above 0 "
                           "(2: twice as fast; 0.5: half)")  # fmt: skip
    return float(value)


def critical_path(first: list[tuple[tuple[float, int], list[list[float] | None], list[int]]],
                  lead: float, tail: float, think: list[float]) -> dict[str, float]:  # fmt: skip
    """Where the time goes, the mean over clients (``PARTS``): each client's chain of requests
    from its last response back (``first``: its last response and request, each request's own
    time by part and the request whose response set its start, ``-2 - i`` where it was request
    ``i``'s send: then ``i``'s own time is not on the path), with each request's think time
    before it (``think``), the lead-in and the tail."""
    mean = dict.fromkeys(PARTS, 0.0)
    for (_, i), owns, setters in first:
        # each part's sum in a local of its own (the walk is a pass's every request, for each
        # client): added in the same order as part by part, so to the same values
        a, b, c, d, e, f = lead, 0.0, 0.0, 0.0, 0.0, 0.0
        while i != -1:
            own = owns[i] if i >= 0 else None
            i = i if i >= 0 else -2 - i
            if own is not None:  # (a request without its own time adds nothing: 0.0 each)
                a += own[0]
                b += own[1]
                c += own[2]
                d += own[3]
                e += own[4]
                f += own[5]
            a += think[i]
            i = setters[i]
        for k, v in zip(PARTS, (a, b, c, d, e, f), strict=True):
            mean[k] += v / len(first)
    mean["think"] += tail
    return mean

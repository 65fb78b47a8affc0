"""Sweep points: one combination of knobs, run as a set of concurrent jobs (fill x nodes)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from instore.access import POSIX, XCACHE
from instore.payload.specs import REPLAY_ENGINE, modes_of
from instore.study.config import Study
from instore.vocabulary import CAPABILITIES

# Axis name in study.yaml -> Point field, for the axes whose names differ.
_AXIS_FIELD = {"entries": "entry_fraction"}


@dataclass(frozen=True)
class Point:
    section: str
    layout: str = "ordered"
    protocol: str = POSIX
    engine: str = "root"
    cache_mb: float | None = None  # None: ROOT's default TTreeCache
    readahead_kb: int | None = None  # ROOT's TFile readahead; None: ROOT's default
    block_readahead_kb: int | None = None  # emulated disk's block-device readahead
    uproot_gap_kb: int | None = None
    branches: str = "all"
    entry_fraction: float = 1.0
    cpu_us: float = 0.0
    fill: int = 1  # concurrent jobs per node
    nodes: int = 1
    fixed_time_s: float = 0.0  # > 0: the HEPiX method, every job reads for this long
    cache_state: str | None = None  # the site's XCache before the point: cold or warm
    rtt_ms: float | None = None  # emulated link's round trip; None: the site's own
    bandwidth_mbit: float | None = None  # emulated link's rate; None: the site's own
    fileset: str | None = None  # the files read: a named set of the profile; None: its `files`
    trace: str | None = None  # a recorded analysis, replayed (engine replay) on its file set
    io_scheduler: str | None = None  # emulated disk's I/O scheduler; None: the site's own
    filesystem: str | None = None  # emulated disk's file system (ext4, xfs); None: the site's own
    threads: int = 1  # threads of each job (cores of its slot): jobs x threads on a node
    mt_mode: str | None = None  # how a job uses its threads: cluster (default) or implicit
    repetition: int = 0
    # The grid's protocol this point's stands in for, on a site that offers none of its
    # section's protocols (None: the grid's own): the same measurement, said in its records.
    substitutes: str | None = None

    @property
    def jobs(self) -> int:
        return self.fill * self.nodes

    def knobs(self) -> dict[str, Any]:
        """What the point's jobs are run with: every field but where it sits in the study."""
        return {k: getattr(self, k) for k in KNOBS}

    @property
    def sets_conditions(self) -> bool:
        """True when the point asks for its own link RTT or bandwidth."""
        return self.rtt_ms is not None or self.bandwidth_mbit is not None

    @property
    def needs(self) -> tuple[str, ...]:
        """The site capabilities (instore.site.config.CAPABILITIES) its knobs ask for."""
        asked = [cap for knob, cap in CONDITION_NEEDS.items() if getattr(self, knob) is not None]
        if self.protocol == XCACHE:
            asked.append(COLD_CACHE if self.cache_state == "cold" else XCACHE_NEED)
        return tuple(dict.fromkeys(asked))

    def key(self, site: str, files: Mapping[str, Any]) -> str:
        """Stable id of what this point measures: knobs, repetition, input files and site."""
        blob = json.dumps(
            {
                "site": site,
                "files": dict(files),
                "section": self.section,
                "repetition": self.repetition,
                **{k: v for k, v in self.knobs().items() if k not in KEYED_IF_SET or _set(k, v)},
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def label(self) -> str:
        shown = {k: v for k, v in self.knobs().items() if v != getattr(_DEFAULT, k)}
        return " ".join(f"{k}={v}" for k, v in shown.items()) or "defaults"

    def read_args(self) -> list[str]:
        """`instore read` options for one job of this point (URL and stage-in added by the sweep)."""
        args = [
            "--engine",
            self.engine,
            "--branches",
            self.branches,
            "--entries",
            str(self.entry_fraction),
            "--cpu-us",
            str(self.cpu_us),
        ]
        if self.cache_mb is not None:
            args += ["--cache-mb", str(self.cache_mb)]
        if self.readahead_kb is not None:
            args += ["--readahead-kb", str(self.readahead_kb)]
        if self.uproot_gap_kb is not None:
            args += ["--uproot-gap-kb", str(self.uproot_gap_kb)]
        if self.fixed_time_s > 0:
            args += ["--fixed-time", str(self.fixed_time_s)]
        if self.threads != 1:
            args += ["--threads", str(self.threads)]
        if self.mt_mode is not None:
            args += ["--mt-mode", self.mt_mode]
        return args


# Fields that place a point in the study rather than say how its jobs run: the same knobs
# measured in another section or repetition are the same measurement, repeated.
NOT_KNOBS = ("section", "repetition", "substitutes")
# The knobs that identify a point: Point's other fields, so a field added there is one here too
# (in the key, in the summary's grouping), never silently merged away.
KNOBS: tuple[str, ...] = tuple(f.name for f in fields(Point) if f.name not in NOT_KNOBS)
_DEFAULT = Point(section="")
# Knobs added after results were recorded: they enter a point's key only when set, so the keys
# (and the records) of points that do not use them stay what they were.
KEYED_IF_SET = (
    "cache_state", "rtt_ms", "bandwidth_mbit", "fileset", "trace", "io_scheduler", "filesystem",
    "threads", "mt_mode",
)  # fmt: skip


def _set(knob: str, value: Any) -> bool:
    """Whether a knob of KEYED_IF_SET is set: other than its default (None, or 1 thread)."""
    return value != getattr(_DEFAULT, knob)


# Axes that change the site itself, costliest first: a file system means a new disk (the site
# rebuilt), an RTT a retuned and remeasured link. They go outermost, so the points of one
# value run together.
CONDITION_AXES = ("filesystem", "rtt_ms", "bandwidth_mbit")
_CONDITION_ORDER = {a: i for i, a in enumerate(CONDITION_AXES)}
# A section's grid may say what it needs of a site, which of the profile's own sites it runs on
# (its budget) and its repetitions; none is an axis.
NEEDS_KEY = "needs"
BUDGET_KEY = "budget_sites"
REPETITIONS_KEY = "repetitions"
NOT_AXES = (NEEDS_KEY, BUDGET_KEY, REPETITIONS_KEY)
# The knobs that change the site itself, each the capability it needs. A site that lacks one
# runs the point at its own value, unless the point's section needs it.
LINK, BLOCK_READAHEAD, IO_SCHEDULER, FILESYSTEM, XCACHE_NEED, COLD_CACHE = CAPABILITIES
CONDITION_NEEDS = {
    "rtt_ms": LINK, "bandwidth_mbit": LINK, "block_readahead_kb": BLOCK_READAHEAD,
    "io_scheduler": IO_SCHEDULER, "filesystem": FILESYSTEM,
}  # fmt: skip


def axis_value(axis: str, value: Any) -> Any:
    """A grid value as a Point holds it (cache_mb's \"default\" is None: ROOT's default;
    fileset's \"default\" is None: the profile's own files)."""
    return None if axis in ("cache_mb", "fileset") and value == "default" else value


def _default_mode_applies(point: Point, modes: tuple[str, ...]) -> bool:
    """Whether a job of several threads takes its engine's default mode: when the grid names
    none (root: entries split by cluster, as RDataFrame does), or always when the engine has one
    (uproot: its executors)."""
    return bool(modes) and (point.mt_mode is None or len(modes) == 1)


def _applicable(point: Point, study: Study) -> Point:
    """The point with knobs that do not apply to it unset: a cache state means nothing to a
    job that does not read through the cache, nor a threading mode to one thread, so such points
    collapse into one (a job of more threads names its mode, the default one too). A replay
    point reads what its trace read: the trace's file set and layout, with the replayer."""
    if point.protocol != XCACHE and point.cache_state is not None:
        point = replace(point, cache_state=None)
    if point.threads == 1 and point.mt_mode is not None:  # one thread has no mode
        point = replace(point, mt_mode=None)
    elif point.threads > 1 and _default_mode_applies(point, modes := modes_of(point.engine)):
        point = replace(point, mt_mode=modes[0])
    if point.trace is not None:
        spec = study.trace(point.trace)
        fileset = axis_value("fileset", spec.fileset)
        point = replace(point, engine=REPLAY_ENGINE, fileset=fileset, layout=spec.layout)
    return point


def section_budget(study: Study, section: str) -> tuple[str, ...] | None:
    """The profile's own sites a section is limited to (None: all of them); a site that is not
    one of the profile's runs every section it can."""
    sites = study.sections.get(section, {}).get(BUDGET_KEY)
    return tuple(sites) if sites is not None else None


def section_needs(study: Study, section: str) -> tuple[str, ...]:
    """What a section needs of a site: a site that lacks one skips it whole."""
    return tuple(study.sections.get(section, {}).get(NEEDS_KEY, ()))


def expand(study: Study, section: str) -> list[Point]:
    """Every point of a section's grid, repetitions innermost-last, in a stable order; points
    that differ only in knobs that do not apply to them are one point. Repetitions run up to the
    rule's cap: an adaptive rule (``Study.rule_of``) may stop before it, which the sweep decides
    as it measures (instore.sweep.adaptive), so planning needs no measurement."""
    if section not in study.sections:
        return []  # a section the study leaves out has no points (not one default point)
    grid = {a: v for a, v in study.sections[section].items() if a not in NOT_AXES}
    # The site is rebuilt or its link retuned whenever those axes change (tens of seconds):
    # they go outermost, so the points of one condition run together.
    axes = sorted(grid, key=lambda a: _CONDITION_ORDER.get(a, len(CONDITION_AXES)))
    names = {f.name for f in fields(Point)}
    points, seen = [], set()
    for combo in itertools.product(*(grid[a] for a in axes)):
        values = {_AXIS_FIELD.get(a, a): axis_value(a, v) for a, v in zip(axes, combo, strict=True)}
        unknown = set(values) - names
        if unknown:  # the schema forbids this; a guard for grids built in code
            raise ValueError(f"unknown grid axes {sorted(unknown)}")
        base = _applicable(Point(section=section, **values), study)
        if base in seen:
            continue
        seen.add(base)
        repetitions = study.repetitions_of(base.fileset, section)
        points.extend(replace(base, repetition=r) for r in range(repetitions))
    return points

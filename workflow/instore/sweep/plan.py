"""What a sweep will measure, decided before anything starts: the points of its sections not
yet measured, every reason a point is skipped (the study's, the site's, its dataset's, the
engine's, the cluster's: all asked here), and the input files the rest need. Repetitions are
planned one at a time: the first a point still needs, from its records (instore.sweep.adaptive
decides the rest as the sweep measures)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from instore.access import XROOTD
from instore.errors import InstoreError
from instore.filenames import replica_name
from instore.payload.threads import too_many_threads
from instore.site import SiteConfig
from instore.site.dataset.model import Dataset
from instore.study import Point, Study, expand
from instore.study.grid import (
    CONDITION_NEEDS,
    axis_value,
    section_budget,
    section_needs,
)
from instore.sweep.adaptive import Series, run_of
from instore.sweep.engines import engine_of
from instore.sweep.options import SweepOptions
from instore.sweep.ramp import Ramp, clients_skip_reason, ramp_order
from instore.sweep.store import RecordStore
from instore.vocabulary import FORMATS, RNTUPLE, RNTUPLE_LAYOUTS, TTREE


@dataclass(frozen=True)
class Inputs:
    """What a sweep's points read: the study's generated file sets, or a site's own dataset in
    their place. The planner, the runner and the payloads ask this one object, so the study and
    the dataset travel together."""

    study: Study
    dataset: Dataset | None = None  # the site's own files, read instead of the generated ones

    def files(self, point: Point) -> list[str]:
        """Job j reads replica j of the point's file set: concurrent jobs read different files
        (wrapping if too few). On a site with its own dataset: file j (mod n) of the point's
        layout."""
        if self.dataset is not None:
            return self.dataset.reads(point)
        replicas = self.study.fileset(point.fileset).replicas
        fileset = point.fileset or ""
        return [replica_name(point.layout, j % replicas, fileset) for j in range(point.jobs)]

    def passes(self, point: Point) -> list[list[str]]:
        """For each job of a replay point in fixed-time mode, the files its later passes read:
        the set's replicas no job of the point reads first, dealt out in turn (job j: j + jobs,
        j + 2 jobs, ...), so a pass finds no file the page cache kept from a pass before it,
        until the set runs out. Empty lists for other points and for a site's own dataset."""
        if point.trace is None or point.fixed_time_s <= 0 or self.dataset is not None:
            return [[] for _ in range(point.jobs)]
        replicas, fileset = self.study.fileset(point.fileset).replicas, point.fileset or ""
        return [[replica_name(point.layout, r, fileset) for r in range(j + point.jobs, replicas, point.jobs)]
                for j in range(point.jobs)]  # fmt: skip

    def read(self, point: Point) -> list[str]:
        """Every file the point's jobs read: each job's first, and its later passes'."""
        return [*self.files(point), *(f for files in self.passes(point) for f in files)]

    def tree(self, point: Point) -> str:
        """The object the point's jobs read: the dataset's, else the one its file set holds."""
        return self.dataset.tree if self.dataset is not None else self.study.tree_of(point.fileset)

    def object_format(self, point: Point) -> str | None:
        """The format of the object the point's jobs read, where the study knows it (its own
        files: the layout's); None for a site's own dataset, whose jobs find it out."""
        if self.dataset is not None:
            return None
        return RNTUPLE if point.layout in RNTUPLE_LAYOUTS else TTREE

    def formats(self, points: Iterable[Point]) -> tuple[str, ...]:
        """The object formats (TTree, RNTuple) the points' jobs read, in the vocabulary's
        order: a layout's, or every format for a site's own dataset (its files may hold
        either)."""
        if self.dataset is not None:
            return FORMATS
        read = {self.object_format(p) for p in points}
        return tuple(f for f in FORMATS if f in read)


@dataclass
class Plan:
    todo: list[tuple[Point, str]]  # (point, key) to measure: each point's next repetition
    keys: set[str]  # every point of the study's sections, up to its cap: what the tables show
    files: list[Path]  # the input files the points to measure need
    inputs: Inputs  # what the points read: the study's file sets or the site's own dataset
    already: int = 0  # points measured before
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> points
    substituted: dict[str, int] = field(default_factory=dict)  # what ran instead -> points
    by_section: dict[str, dict[str, int]] = field(default_factory=dict)  # section -> skipped
    series: dict[str, Series] = field(default_factory=dict)  # key -> its point's repetitions
    ramp: Ramp | None = None  # where the load ramp stopped (from the records measured before)


def _series(study: Study, points: list[Point], keys: list[str]) -> Iterator[Series]:
    """A section's points grouped into their repetitions (expand puts them together)."""
    start = 0
    for i, point in enumerate(points):
        last = i + 1 == len(points) or replace(points[i + 1], repetition=0) != replace(
            point, repetition=0
        )
        if last:
            rule = study.rule_of(point.fileset, point.section)
            yield Series(rule, points[start : i + 1], keys[start : i + 1], study.expensive_s)
            start = i + 1


def _measured(table: pd.DataFrame) -> dict[str, list[dict]]:
    """Each measured point's job records (its latest complete measurement)."""
    if table.empty:
        return {}
    return {str(k): rows.to_dict("records") for k, rows in table.groupby("point_key")}


def plan(opts: SweepOptions, site: SiteConfig, dataset: Dataset | None = None) -> Plan:
    """What to measure, what is already measured, what is skipped and why, the files needed.
    ``dataset``: a site with its own dataset's description, surveyed before planning
    (``instore.site.real.site_dataset``): planning itself does no network I/O."""
    if (site.dataset is None) != (dataset is None):
        raise InstoreError(
            f"site {site.name}: planned with{'out' if dataset is None else ''} a dataset "
            f"description, but its site file {'names' if site.dataset else 'names no'} dataset",
            "survey the site's dataset before planning: instore.site.real.site_dataset",
        )
    study, store = opts.study, RecordStore(opts.results, site.name)
    measured = {} if opts.force else _measured(store.table())
    inputs = Inputs(study, dataset)
    result = Plan([], set(), [], inputs, ramp=Ramp(site.load))
    needed: set[str] = set()
    for section in opts.sections:
        result.by_section[section] = {}
        points = points_on(study, section, site)
        for p in points:
            if p.substitutes is not None and p.repetition == 0:
                note = substitution_note(p)
                result.substituted[note] = result.substituted.get(note, 0) + 1
        files = [dataset.key() if dataset else study.fileset(p.fileset).key() for p in points]
        keys = [p.key(site.name, f) for p, f in zip(points, files, strict=True)]
        result.keys.update(keys)
        for series in _series(study, points, keys):
            for r, key in enumerate(series.keys):
                if key in measured:
                    series.runs[r] = run_of(measured[key], series.points[r].fixed_time_s > 0)
                    result.ramp.observe(series.points[r], measured[key])
            result.already += len(series.runs)
            point = series.points[0]
            reason = skip_reason(study, point, site, dataset)
            nxt = series.next()
            if nxt is None:
                continue
            if reason:  # known before the site is brought up: a section may need no site
                due = max(series.rule.min - len(series.runs), 1)  # the repetitions still due
                result.skipped[reason] = result.skipped.get(reason, 0) + due
                mine = result.by_section.setdefault(section, {})
                mine[reason] = mine.get(reason, 0) + 1
                continue
            result.todo.append(nxt)
            result.series.update(dict.fromkeys(series.keys, series))
    result.todo = _unstopped(result.ramp, ramp_order(result.todo), result.skipped)
    for point, _ in result.todo:
        needed.update(() if dataset else inputs.read(point))
    result.files = [opts.data / name for name in sorted(needed)]
    _require_traces(opts, {p.trace for p, _ in result.todo if p.trace is not None})
    missing = [p for p in result.files if not p.exists()]
    if missing:
        raise InstoreError(
            f"{len(missing)} input file(s) missing, e.g. {missing[0]}",
            _generate_hint(study, missing[0], opts.data),
        )
    return result


def _unstopped(
    ramp: Ramp, todo: list[tuple[Point, str]], skipped: dict[str, int]
) -> list[tuple[Point, str]]:
    """The points to measure: those a load ramp stopped before (from the records measured
    earlier) are counted in ``skipped`` with its reason."""
    kept = []
    for point, key in todo:
        reason = ramp.skip_reason(point)
        if reason is None:
            kept.append((point, key))
        else:
            skipped[reason] = skipped.get(reason, 0) + 1
    return kept


def _require_traces(opts: SweepOptions, names: set[str]) -> None:
    """Every trace the points replay was recorded (make study records them first)."""
    for name in sorted(names):
        spec, trace = opts.study.trace(name), opts.trace(name)
        if not (trace / "trace.json").is_file():
            fileset = axis_value("fileset", spec.fileset) or ""
            file = opts.data / replica_name(spec.layout, 0, fileset)
            raise InstoreError(
                f"trace {name} was not recorded: no {trace / 'trace.json'}",
                f"record it: instore record --site {spec.site} --file {file} --out {trace} "
                f"-- python {spec.analysis} --tree {opts.study.tree_of(fileset or None)} "
                "(or `make study`, which records every trace)",
            )


def _generate_hint(study: Study, missing: Path, data: Path) -> str:
    """The `instore generate` command that writes the missing file's set."""
    name = next((n for n in study.filesets if missing.name.startswith(f"{n}-")), None)
    f = study.fileset(name)
    if name and f.repeats:
        source, copies = study.repeated_from(name) or (f.repeats, 0)
        made_from = data / missing.name.replace(f"{name}-", f"{source}-", 1)
        return (f"run: instore generate --repeat {made_from} --copies {copies} --fileset {name} "
                f"--out {data} (or `make study`, which generates every set)")  # fmt: skip
    like = f" --like {f.like} --fileset {name}" if f.like else ""
    return (f"run: instore generate{like} --size-mb {f.size_mb} --replicas {f.replicas} --seed {f.seed} "
            f"--cluster-mb {f.cluster_mb} --out {data} (or `make study`, which generates every set)")  # fmt: skip


def points_on(study: Study, section: str, site: SiteConfig) -> list[Point]:
    """A section's points as this site runs them: a knob that changes the site (its link, its
    disk) which the site cannot set, and the section does not need, left at the site's own
    value; a grid whose protocols the site offers none of run over the site's most direct one,
    each point saying which it stands in for. Points that then coincide are one."""
    grid, needs = study.sections.get(section, {}), section_needs(study, section)
    offered = any(p in site.protocols for p in grid.get("protocol", [Point("").protocol]))
    fallback = None if offered else site.fallback_protocol()
    points: dict[Point, None] = {}
    for point in expand(study, section):
        points.setdefault(on_site(point, site, needs, fallback))
    return list(points)


def on_site(point: Point, site: SiteConfig, needs: tuple[str, ...], fallback: str | None) -> Point:
    """One point as the site runs it (see points_on)."""
    own = {knob: None for knob, need in CONDITION_NEEDS.items()
           if getattr(point, knob) is not None and need not in needs and site.lacks(need)}  # fmt: skip
    if own:
        point = replace(point, **own)
    if fallback is not None and point.protocol not in site.protocols:
        point = replace(point, protocol=fallback, substitutes=point.protocol, cache_state=None)
    return point


def substitution_note(point: Point) -> str:
    """What the sweep's log and the page say of a point run over another protocol."""
    return (f"section {point.section} runs over {point.protocol} in place of {point.substitutes}: "
            f"the site offers none of the protocols its grid names")  # fmt: skip


def skip_reason(
    study: Study, point: Point, site: SiteConfig, dataset: Dataset | None = None
) -> str | None:
    """Why the point is not measured on this site (None: it is); ``dataset``: the site's own
    files, which may lack the point's layout or the branches its pattern names."""
    return (
        section_skip_reason(study, point, site)
        or site_skip_reason(point, site)
        or (dataset.skip_reason(point) if dataset is not None else None)
        or engine_skip_reason(study, point)
        or threads_skip_reason(point, site.cores)
        or clients_skip_reason(point, site.load)
    )


def threads_skip_reason(point: Point, cores: int) -> str | None:
    """Why a point's jobs cannot have their threads (None: they can): an engine without
    threads of its own, or more threads than a worker's cores (a slot cannot be larger than
    its node)."""
    return engine_of(point).threads_reason(point) or too_many_threads(point.threads, cores)


def section_skip_reason(study: Study, point: Point, site: SiteConfig) -> str | None:
    """Why the study keeps a section off this site (None: the section runs here): the site
    lacks what the section needs, or it is one of the profile's own sites and the section's
    budget_sites leaves it out (a site the profile does not name runs every section it can)."""
    section = point.section
    lack = next(((need, lack) for need in section_needs(study, section)
                 if (lack := site.lacks(need)) is not None), None)  # fmt: skip
    if lack is not None:
        return f"section {section} needs {lack[0]}: {lack[1]}"
    budget = section_budget(study, section)
    if budget is not None and site.name in study.own_sites and site.name not in budget:
        return (f"section {section} runs on {', '.join(budget)} only of profile "
                f"{study.profile}'s own sites (its budget_sites)")  # fmt: skip
    return None


def site_skip_reason(point: Point, site: SiteConfig) -> str | None:
    """Why the site's file alone rules a point out (None: it can run there): a protocol it does
    not offer or a capability its knobs need that it lacks, then what it rules out for the
    point's engine."""
    reason = site.rules_out(point.protocol, point.needs)
    return reason or engine_of(point).site_reason(point, site)


def engine_skip_reason(study: Study, point: Point) -> str | None:
    """Why the point's engine does not read it (None: it does): the study's grid leaves it out
    for that engine, or the engine cannot read its layout over its protocol here."""
    return engine_of(point).skip_reason(point, study)


def cluster_skip_reason(point: Point, workers: int, cores: int | None = None) -> str | None:
    """Why the cluster the sweep got cannot run the point (known once its workers are up);
    ``cores``: the fewest any worker may run on (its CPU affinity)."""
    if point.nodes > workers:
        return f"needs {point.nodes} nodes, the cluster has {workers}"
    return None if cores is None else too_many_threads(point.threads, cores)


def traces_replayed(study: Study, site: SiteConfig) -> set[str]:
    """The recorded analyses a site's sweep replays: those of the points it runs (the site's
    own dataset aside, which the sweep asks about once it is surveyed)."""
    return {
        point.trace
        for section in study.sections
        for point in points_on(study, section, site)
        if point.trace is not None and skip_reason(study, point, site) is None
    }


def recording_site(study: Study, trace: str, sites: Mapping[str, SiteConfig]) -> str:
    """Where a trace is recorded: its own site (``traces:``, lan-ssd: fast storage, so its gaps
    are the job's CPU) when the run brings up an emulated site anyway (which needs root);
    otherwise on the first of the run's sites that replays it and reads over xrootd (the
    recorder sees XrdCl's requests only), so a run of real sites alone needs no root. The gaps
    a closed-loop replay reproduces are the job's own CPU wherever it was recorded."""
    spec = study.trace(trace)
    if any(site.emulated for site in sites.values()):
        return spec.site
    replaying = (name for name, site in sites.items()
                 if XROOTD in site.protocols and trace in traces_replayed(study, site))  # fmt: skip
    return next(replaying, spec.site)

"""A dry run: what a study will do to a site before it does anything there.

Read from the study file, the site file and the records already measured, with no network
I/O and nothing started: the bytes uploaded to the site, the files written on it (the
uploaded copies, fio's test file under ``calibration.posix_dir``), the sections and points it
will measure and those it skips with why, the most clients at once (and the site's
``load:`` limits), and an estimate of the sweep's time from the study's reference run
(``docs/data/reference/points.csv``: the median wall time of a point's job and its
repetitions, by site and section where the reference measured the site, else by section,
plus the time a sweep spends around each measurement). ``instore plan``, ``instore sweep --dry-run``
and ``make study DRY_RUN=1`` print it and stop; ``make study`` prints it for a real site first.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from instore.configfile import REPO_ROOT
from instore.errors import InstoreError
from instore.filenames import DEFAULT_FILESET, replica_names
from instore.site import SiteConfig
from instore.site.live import FIO_MAX_MB, FIO_QUEUE_DEPTH
from instore.study import SECTIONS, Point, Study
from instore.study.config import Repetitions
from instore.sweep.plan import points_on, skip_reason, substitution_note
from instore.sweep.ramp import Ramp
from instore.sweep.store import RecordStore
from instore.vocabulary import LAYOUTS

REFERENCE = REPO_ROOT / "docs" / "data" / "reference" / "points.csv"
# What a sweep spends around each measurement (caches dropped, jobs launched, records
# written, the site brought up): the run of 43b4bd1's wan sweep took 899 s for 87 measurements
# whose jobs' median walls add up to 702 s, 2.3 s each.
OVERHEAD_S = 2.3


def study_files(study: Study, data: Path | None = None) -> list[tuple[str, float, bool]]:
    """Every generated file the study uploads to a site that asks for them (the pipeline's
    FILES and FILESET_FILES, workflow/rules/data.smk): (name, size in MB, generated). A file
    already generated under ``data`` counts its own size; one not yet, its target size (the
    full profile's come out 17% smaller in all: 5.60 GB against 6.72, 2026-11-28)."""
    sets = {DEFAULT_FILESET: study.files, **study.filesets}
    out = []
    for fileset, spec in sets.items():
        layouts = [lay for lay in LAYOUTS if lay in study.layouts_of(fileset)]
        prefix = "" if fileset == DEFAULT_FILESET else fileset
        for name in replica_names(layouts, spec.replicas, prefix):
            path = data / name if data is not None else None
            if path is not None and path.is_file():
                out.append((name, path.stat().st_size / 1e6, True))
            else:
                out.append((name, float(spec.size_mb), False))
    return out


@dataclass(frozen=True)
class Reference:
    """The reference run's points: by (site, section), and by section over its sites, the
    mean of the points' median job wall time (s) and of their repetitions (a sweep's time
    is their sum)."""

    walls: dict[tuple[str | None, str], float]
    repetitions: dict[tuple[str | None, str], float]

    @property
    def sites(self) -> list[str]:
        """The sites the reference run measured."""
        return sorted({site for site, _ in self.walls if site is not None})

    def with_own(self, site: str, walls: dict[str, float]) -> Reference:
        """The site's own job wall times by section (measured before: a quick profile before
        the full one), each at its section's repetitions in the reference."""
        mine = {(site, s): w for s, w in walls.items() if (None, s) in self.repetitions}
        reps = {(site, s): self.repetitions[None, s] for site, s in mine}
        return Reference({**self.walls, **mine}, {**self.repetitions, **reps})

    def of(self, site: str, section: str) -> tuple[float, float]:
        """A point's job wall time and repetitions: its site's where the reference measured
        the site, else its section's, else the median of every section's."""
        for key in ((site, section), (None, section)):
            if key in self.walls:
                return self.walls[key], self.repetitions[key]
        return statistics.median(self.walls.values()), 1.0


def own_walls(records: Iterable[dict]) -> dict[str, float]:
    """A site's own measured job wall times by section: the median of its jobs that ran."""
    walls: dict[str, list[float]] = {}
    for r in records:
        if r.get("status") == "ok" and r.get("wall_s") is not None and r.get("section"):
            walls.setdefault(r["section"], []).append(float(r["wall_s"]))
    return {section: statistics.median(w) for section, w in walls.items()}


def reference(path: Path = REFERENCE) -> Reference:
    walls: dict[tuple[str | None, str], list[float]] = {}
    reps: dict[tuple[str | None, str], list[float]] = {}
    if not path.is_file():
        raise InstoreError(f"no reference run to estimate the time from: {path} is missing",
                           "restore docs/data/reference from the repository")  # fmt: skip
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            if not row["wall_s_median"]:
                continue
            for key in ((row["site"], row["section"]), (None, row["section"])):
                walls.setdefault(key, []).append(float(row["wall_s_median"]))
                reps.setdefault(key, []).append(float(row["repetitions"]))
    return Reference({k: statistics.mean(v) for k, v in walls.items()},
                     {k: statistics.mean(v) for k, v in reps.items()})  # fmt: skip


@dataclass
class SectionPlan:
    points: int = 0  # distinct points to measure
    measurements: int = 0  # their repetitions, at each rule's minimum
    most: int = 0  # at each rule's cap (adaptive repetitions)
    already: int = 0  # repetitions measured before
    seconds: float = 0.0  # the estimate, at the rules' minimum
    # a site the reference did not measure: the same estimate at each reference site's times
    at_reference: dict[str, float] = field(default_factory=dict)
    clients: int = 0  # the most jobs of one point
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> points
    substituted: dict[str, int] = field(default_factory=dict)  # what it says -> points


@dataclass
class DryRun:
    """What a study will do to one site."""

    site: SiteConfig
    study: Study
    calibrate: bool
    sections: dict[str, SectionPlan]
    upload: list[tuple[str, float, bool]]  # files put on the site: (name, MB, generated)
    own: list[str] = field(default_factory=list)  # sections its own earlier jobs timed

    @property
    def upload_mb(self) -> float:
        return sum(mb for _, mb, _ in self.upload)

    def upload_text(self) -> str:
        """``108 files, 5.60 GB``; where some are not generated yet, ``about`` and why."""
        pending = sum(not generated for _, _, generated in self.upload)
        size = f"{self.upload_mb / 1e3:.2f} GB"
        if pending:
            size = (f"about {size} (the target sizes of the {pending} not generated yet: "
                    "generated files differ from them)")  # fmt: skip
        return f"{len(self.upload)} files, {size}"

    @property
    def clients(self) -> int:
        return max((s.clients for s in self.sections.values()), default=0)

    @property
    def seconds(self) -> float:
        return sum(s.seconds for s in self.sections.values())

    def span(self) -> list[tuple[float, str]]:
        """For a site the reference run did not measure: the sweep's estimate at the fastest
        and the slowest reference site's job times ((seconds, site), fastest first). A real
        site faster than all of them takes less (a loopback site serving its page cache ran
        in 4.7 min where the estimate said 16, 2026-11-28)."""
        at: dict[str, float] = {}
        for plan in self.sections.values():
            for name, seconds in plan.at_reference.items():
                at[name] = at.get(name, 0.0) + seconds
        ranked = sorted((seconds, name) for name, seconds in at.items())
        return [ranked[0], ranked[-1]] if len(ranked) > 1 else []

    def writes(self) -> list[str]:
        """The files the study writes on the site."""
        out = []
        if self.upload:
            out.append(f"{len(self.upload)} uploaded files (upload: true)")
        posix_dir = self.site.calibration.posix_dir
        if self.calibrate and posix_dir and not self.site.emulated:
            out.append(f"fio's test file of up to {FIO_MAX_MB} MB, {posix_dir}/instore-fio.dat "
                       "(calibration.posix_dir), read with O_DIRECT, one read at a time, then "
                       f"{FIO_QUEUE_DEPTH} at once")  # fmt: skip
        return out

    def lines(self) -> list[str]:
        site, guard = self.site, self.site.load
        kind = "emulated: instore builds it" if site.emulated else "real"
        out = [
            f"what the study (profile {self.study.profile}) will do to site {site.name} ({kind}):"
        ]
        if site.emulated:
            out.append("  upload: none (the site's own disk gets the files at bring-up)")
        elif self.upload:
            out.append(f"  upload: {self.upload_text()}, behind its endpoints (equal copies "
                       "already there are skipped)")  # fmt: skip
        else:
            out.append("  upload: none (upload: false)")
        out.append(f"  files written on the site: {'; '.join(self.writes()) or 'none'}")
        measured = {n: s for n, s in self.sections.items() if s.points}
        total = sum(s.measurements for s in measured.values())
        most = sum(s.most for s in measured.values())
        out.append(f"  sections: {len(measured)} measured, {total} measurements of "
                   f"{sum(s.points for s in measured.values())} points"
                   + (f" (up to {most} with adaptive repetitions)" if most > total else "")
                   + f", {sum(s.already for s in self.sections.values())} measured before")  # fmt: skip
        for name, s in self.sections.items():
            if s.points:
                out.append(f"    {name}: {s.points} points, {s.measurements} measurements, "
                           f"up to {_clients(s.clients)}, about {_duration(s.seconds)}")  # fmt: skip
            for note, n in s.substituted.items():
                out.append(f"    {name}: {n} points: {note.removeprefix(f'section {name} ')}")
            for reason, n in s.skipped.items():
                out.append(f"    {name}: {n} points skipped: {reason}")
        out.append(
            f"  most clients at once: {self.clients}; the site's load limits: {guard.text()}"
        )
        mine = (f"this site's own jobs measured before in {', '.join(self.own)}, else "
                if self.own else "")  # fmt: skip
        out.append(f"  estimated time of the sweep: about {_duration(self.seconds)} (from {mine}the "
                   "reference run's job times and repetitions by site and section"
                   f"{self._span_text()}; the load ramp may stop sooner)")  # fmt: skip
        return out

    def _span_text(self) -> str:
        span = self.span()
        if not span:
            return ""
        (fast, fastest), (slow, slowest) = span
        return (f"; a site it did not measure: {_duration(fast)} at {fastest}'s, "
                f"{_duration(slow)} at {slowest}'s")  # fmt: skip

    def text(self) -> str:
        return "\n".join(self.lines())


def _clients(n: int) -> str:
    return f"{n} client{'s' if n != 1 else ''}"


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f} s" if minutes < 2 else f"{minutes:.0f} min"


def runs_at_most(rule: Repetitions, wall_s: float) -> int:
    """The most runs the rule can make of a point whose jobs take ``wall_s``: its cap, or
    fewer where its budget of job time runs out first."""
    if rule.budget_s is None or wall_s <= 0:
        return rule.max
    return min(rule.max, max(rule.min, math.ceil(rule.budget_s / wall_s)))


def _seconds(point: Point, site: str, ref: Reference, todo: tuple[int, int]) -> float:
    """A point's measurements still due (``todo``: at least, at most): as many as the
    reference run made of its section's points (within those bounds), each its reference job
    time (a fixed-time point's own time) plus the sweep's time around it."""
    wall, reps = ref.of(site, point.section)
    job = point.fixed_time_s if point.fixed_time_s > 0 else wall
    return min(max(reps, todo[0]), todo[1]) * (job + OVERHEAD_S)


def dry_run(
    study: Study,
    site: SiteConfig,
    results: Path = Path("results"),
    sections: Iterable[str] | None = None,
    calibrate: bool = True,
    data: Path | None = None,
) -> DryRun:
    """What the study will do to the site, from its files and the records in ``results``
    (and the generated files' sizes where they are under ``data`` already)."""
    ref = reference()
    # a site the reference did not measure: also estimated at each reference site's times,
    # and at its own where it measured a section before
    elsewhere = [] if site.name in ref.sites else ref.sites
    store = RecordStore(results, site.name)
    records = store.records()  # read once: a real site's log grows with every run
    done = store.done_keys(records)
    own = own_walls(records) if elsewhere else {}
    if own:
        ref = ref.with_own(site.name, own)
    chosen = [s for s in SECTIONS if s in study.sections and (sections is None or s in sections)]
    plans = {}
    ramp = Ramp(site.load)
    for section in chosen:
        plan = plans[section] = SectionPlan()
        for point in points_on(study, section, site):  # as the sweep plans them
            if point.repetition:
                continue
            reason = skip_reason(study, point, site) or ramp.skip_reason(point)
            if reason:
                plan.skipped[reason] = plan.skipped.get(reason, 0) + 1
                continue
            if point.substitutes is not None:
                note = substitution_note(point)
                plan.substituted[note] = plan.substituted.get(note, 0) + 1
            rule = study.rule_of(point.fileset, section)
            files = study.fileset(point.fileset).key()
            already = sum(
                replace(point, repetition=r).key(site.name, files) in done for r in range(rule.max)
            )
            plan.already += already
            todo = max(rule.min - already, 0)
            if not todo:
                continue
            plan.points += 1
            plan.measurements += todo
            most = max(runs_at_most(rule, ref.of(site.name, section)[0]) - already, 0)
            plan.most += most
            due = (todo, most)
            at = {name: _seconds(point, name, ref, due) for name in elsewhere}
            for name, seconds in at.items():
                plan.at_reference[name] = plan.at_reference.get(name, 0.0) + seconds
            # a site the reference did not measure: the mean of its sites' estimates, so it
            # lies within their span (pooling their points let the sites with more points
            # pull it to an end); its own time where it measured the section before
            own_time = (site.name, section) in ref.walls
            plan.seconds += (statistics.mean(at.values()) if at and not own_time
                             else _seconds(point, site.name, ref, due))  # fmt: skip
            plan.clients = max(plan.clients, point.jobs)
    upload = (study_files(study, data)
              if site.upload and not site.emulated and not site.dataset else [])  # fmt: skip
    timed = [s for s in chosen if s in own and plans[s].points]
    return DryRun(site, study, calibrate, plans, upload, timed)

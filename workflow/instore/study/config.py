"""Load and validate config/study.yaml, resolved to one profile, and a run's --config keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from instore.configfile import CONFIG_DIR, read_yaml, validate
from instore.errors import InstoreError
from instore.filenames import DEFAULT_FILESET

DEFAULT_STUDY = CONFIG_DIR / "study.yaml"
DEFAULT_TARGET = 0.05  # an adaptive rule's interval half-width, relative to the median


@dataclass(frozen=True)
class Repetitions:
    """How often a point is measured: ``min`` times, then again while the interval of its
    median is wider than ``target`` (its half-width over the median), up to ``max`` times; a
    plain count N in the study file is min = max = N (instore.sweep.adaptive applies it)."""

    min: int
    max: int
    target: float = DEFAULT_TARGET
    # beyond min, no further run once the point's runs have taken this much job time (the sum
    # of each run's longest job): a cheap point may go on to max, a costly one stops sooner
    budget_s: float | None = None

    @property
    def adaptive(self) -> bool:
        return self.max > self.min

    def text(self) -> str:
        """What records say in ``repetitions_rule``: ``fixed 2``, ``2-5 to 5%`` or
        ``2-24 to 5% within 8 s``."""
        if not self.adaptive:
            return f"fixed {self.min}"
        budget = "" if self.budget_s is None else f" within {self.budget_s:g} s"
        return f"{self.min}-{self.max} to {self.target * 100:g}%{budget}"


def repetitions_from(value: int | Mapping[str, Any], path: Path, field_name: str) -> Repetitions:
    """The rule a (schema-valid) ``repetitions:`` value says; a minimum above the cap is one
    line naming the field."""
    if isinstance(value, int):
        return Repetitions(value, value)
    budget = value.get("budget_s")
    rule = Repetitions(int(value["min"]), int(value["max"]),
                       float(value.get("target", DEFAULT_TARGET)),
                       None if budget is None else float(budget))  # fmt: skip
    if rule.min > rule.max:
        raise InstoreError(
            f"{path}: field {field_name}: min {rule.min} is more than max {rule.max}",
            f"give max at least min, e.g. {{min: {rule.min}, max: {rule.min + 3}, target: {rule.target:g}}}",
        )
    return rule


@dataclass(frozen=True)
class FilesSpec:
    size_mb: float
    replicas: int
    seed: int = 1
    cluster_mb: float = 8.0
    like: str | None = None  # a template: the set's schema is a real file's (filesets only)
    repetitions: Repetitions | None = None  # None: the section's or the profile's
    # Replicas as byte copies of replica 0: distinct files on the disk with the same offsets,
    # so many clients replaying one trace each read a file of their own (filesets only)
    identical: bool | None = None
    # Made as copies of another set's files (its name), merged without recompression until
    # size_mb: the same baskets, pages and clusters, in seconds instead of minutes (filesets only)
    repeats: str | None = None

    def key(self) -> dict[str, Any]:
        """What identifies the files in a point's key (fields left unset stay out, so the
        keys of points measured before a field existed do not change)."""
        return {k: v for k, v in asdict(self).items() if v is not None and k != "repetitions"}


@dataclass(frozen=True)
class TraceSpec:
    """An analysis recorded once (``instore record``) and replayed by the points naming it."""

    analysis: str  # the script, relative to the project
    fileset: str  # it reads replica 0 of this set
    layout: str = "ordered"
    site: str = "lan-ssd"  # recorded there: fast storage, so its gaps are the job's own CPU


@dataclass(frozen=True)
class Study:
    path: Path
    profile: str
    tree: str
    sites: tuple[str, ...]
    files: FilesSpec
    repetitions: Repetitions
    timeout_s: float
    retries: int
    sections: Mapping[str, Mapping[str, list[Any]]] = field(default_factory=dict)
    backoff_s: float = 2.0  # first wait before a retry; doubles with each further attempt
    filesets: Mapping[str, FilesSpec] = field(default_factory=dict)
    traces: Mapping[str, TraceSpec] = field(default_factory=dict)
    baseline: Path | None = None  # an earlier run's results: reports compare with it
    # a point whose first repetition's longest job took longer is measured once (None: none is)
    expensive_s: float | None = None
    # the profile's own sites (its `sites:`, whatever a run overrides): a section's
    # budget_sites limits these only; any other site runs every section it can
    own_sites: tuple[str, ...] = ()

    def trace(self, name: str) -> TraceSpec:
        try:
            return self.traces[name]
        except KeyError:
            raise InstoreError(
                f"{self.path}: no trace named {name!r} in profile {self.profile}",
                f"add it under traces:, or use one of: {', '.join(self.traces) or '(none defined)'}",
            ) from None

    def fileset(self, name: str | None) -> FilesSpec:
        """The files a point reads: a named set, or the profile's own (None or "default")."""
        if name in (None, DEFAULT_FILESET):
            return self.files
        try:
            return self.filesets[name]
        except KeyError:
            raise InstoreError(
                f"{self.path}: no file set named {name!r} in profile {self.profile}",
                f"add it under filesets:, or use one of: {', '.join([DEFAULT_FILESET, *self.filesets])}",
            ) from None

    def repeated_from(self, fileset: str) -> tuple[str, int] | None:
        """(source set, copies) where the set's files are copies of another's, else None."""
        if self.fileset(fileset).repeats is None:
            return None
        return copies_of(self.filesets, fileset)

    def tree_of(self, fileset: str | None) -> str:
        """The tree (or RNTuple) name a set's files hold: a template's, else the study's."""
        spec = self.fileset(fileset)
        if spec.like is None:
            return self.tree
        from instore.generate.template import load_template  # the generator imports this package

        return load_template(spec.like).tree_name

    def layouts_of(self, fileset: str) -> set[str]:
        """The layouts a set is read in: its sections' (ordered always: sections without a
        layout axis read it)."""
        used = {"ordered"}
        for grid in self.sections.values():
            if fileset in grid.get("fileset", [DEFAULT_FILESET]):
                used.update(grid.get("layout", ["ordered"]))
        used.update(t.layout for t in self.traces.values() if t.fileset == fileset)
        return used

    def rule_of(self, fileset: str | None, section: str | None = None) -> Repetitions:
        """A file set's own repetitions, else its section's, else the profile's."""
        grid = self.sections.get(section, {}) if section else {}
        own = self.fileset(fileset).repetitions
        if own is not None:
            return own
        if grid.get("repetitions") is not None:
            return repetitions_from(
                grid["repetitions"], self.path, f"sections.{section}.repetitions"
            )
        return self.repetitions

    def repetitions_of(self, fileset: str | None, section: str | None = None) -> int:
        """The most repetitions a point may get: its rule's cap (a fixed count's count)."""
        return self.rule_of(fileset, section).max


def load_study(path: Path = DEFAULT_STUDY, overrides: Mapping[str, Any] | None = None) -> Study:
    """Read the study, apply overrides (``profile``, ``sites``) and return the chosen profile."""
    data = read_yaml(path)
    if isinstance(data, dict):
        data = {**data, **{k: v for k, v in (overrides or {}).items() if v is not None}}
    validate(data, "study", path)
    name = data["profile"]
    if name not in data["profiles"]:
        raise InstoreError(
            f"{path}: field profile: no profile named {name!r}",
            f"choose one of {', '.join(data['profiles'])}",
        )
    prof = data["profiles"][name]
    _check_filesets(path, name, prof)
    _check_traces(path, name, prof)
    at = f"profiles.{name}"
    for section, grid in prof["sections"].items():  # checked here, read per point later
        if grid.get("repetitions") is not None:
            repetitions_from(grid["repetitions"], path, f"{at}.sections.{section}.repetitions")
    return Study(
        path=path,
        profile=name,
        tree=data.get("tree", "events"),
        sites=tuple(data.get("sites") or prof["sites"]),
        own_sites=tuple(prof["sites"]),
        files=FilesSpec(**prof["files"]),
        repetitions=repetitions_from(prof.get("repetitions", 1), path, f"{at}.repetitions"),
        timeout_s=float(prof.get("timeout_s", 900)),
        retries=int(prof.get("retries", 2)),
        backoff_s=float(prof.get("backoff_s", 2.0)),
        sections=prof["sections"],
        filesets={
            fs: _fileset(spec, path, f"{at}.filesets.{fs}")
            for fs, spec in prof.get("filesets", {}).items()
        },
        traces={name: TraceSpec(**spec) for name, spec in prof.get("traces", {}).items()},
        expensive_s=prof.get("expensive_s"),
        baseline=Path(data["baseline"]) if data.get("baseline") else None,
    )


def _fileset(spec: Mapping[str, Any], path: Path, field_name: str) -> FilesSpec:
    """A file set with its own repetitions read as a rule."""
    reps = spec.get("repetitions")
    rule = None if reps is None else repetitions_from(reps, path, f"{field_name}.repetitions")
    return FilesSpec(**{**spec, "repetitions": rule})


def _check_filesets(path: Path, profile: str, prof: Mapping[str, Any]) -> None:
    """Every `fileset` a section names is one the profile defines; a set that `repeats`
    another can be made from it."""
    known = [DEFAULT_FILESET, *prof.get("filesets", {})]
    for name, spec in prof.get("filesets", {}).items():
        if spec.get("repeats") is not None:
            copies_of(prof["filesets"], name, f"{path}: profile {profile}, file set {name}")
    for section, grid in prof["sections"].items():
        for name in grid.get("fileset", []):
            if name not in known:
                raise InstoreError(
                    f"{path}: profile {profile}, section {section}: no file set named {name!r}",
                    f"define it under the profile's filesets:, or use one of: {', '.join(known)}",
                )


def copies_of(filesets: Mapping[str, Any], name: str, where: str = "") -> tuple[str, int]:
    """(source set, copies) of a set that `repeats` another: its files are the source's,
    merged that many times. The source must be a drawn set of the same template and cluster
    size, with a replica for each of this set's, and size_mb a whole multiple of the source's."""
    spec = _as_dict(filesets[name])
    source_name = spec["repeats"]
    where = where or f"file set {name}"
    source = filesets.get(source_name)
    if source is None or source_name == name:
        raise InstoreError(f"{where}: repeats {source_name!r}, which is not another file set",
                           f"name one of: {', '.join(n for n in filesets if n != name)}")  # fmt: skip
    source = _as_dict(source)
    copies = round(float(spec["size_mb"]) / float(source["size_mb"]))
    problems = [
        (source.get("repeats") is not None, f"{source_name} itself repeats another set"),
        (copies < 2 or abs(copies * float(source["size_mb"]) - float(spec["size_mb"]))
         > 0.02 * float(spec["size_mb"]),
         f"size_mb {spec['size_mb']} is not a whole multiple (2 or more) of {source_name}'s "
         f"{source['size_mb']}"),
        (source.get("like") != spec.get("like"), f"its template is not {source_name}'s"),
        (source.get("cluster_mb", 8) != spec.get("cluster_mb", 8),
         f"its cluster_mb is not {source_name}'s"),
        (int(source["replicas"]) < int(spec["replicas"]),
         f"{source_name} has fewer replicas than it"),
    ]  # fmt: skip
    for bad, why in problems:
        if bad:
            raise InstoreError(f"{where}: cannot be made from {source_name}: {why}",
                               "make the two sets agree, or drop repeats: to draw the set")  # fmt: skip
    return source_name, copies


def _as_dict(spec: Any) -> dict[str, Any]:
    return asdict(spec) if isinstance(spec, FilesSpec) else dict(spec)


def _check_traces(path: Path, profile: str, prof: Mapping[str, Any]) -> None:
    """Every trace reads a file set the profile defines; every `trace` a section names is one
    the profile records."""
    known = [DEFAULT_FILESET, *prof.get("filesets", {})]
    traces = prof.get("traces", {})
    for name, spec in traces.items():
        if spec["fileset"] not in known:
            raise InstoreError(
                f"{path}: profile {profile}, trace {name}: no file set named {spec['fileset']!r}",
                f"define it under the profile's filesets:, or use one of: {', '.join(known)}",
            )
    for section, grid in prof["sections"].items():
        for name in grid.get("trace", []):
            if name not in traces:
                raise InstoreError(
                    f"{path}: profile {profile}, section {section}: no trace named {name!r}",
                    f"define it under the profile's traces:, or use one of: "
                    f"{', '.join(traces) or '(none defined)'}",
                )

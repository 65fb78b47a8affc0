"""A run of the workflow: the Snakemake ``--config`` keys, the study they select and every
site it measures, all validated before any rule runs. Above both the study and the site
packages, which import neither this module nor each other for it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from instore.configfile import validate
from instore.site.config import SiteConfig, load_site
from instore.study.config import DEFAULT_STUDY, Study, load_study
from instore.study.runs import results_of

RUNTIME_ENV = "INSTORE_CONTAINER_RUNTIME"
TRUE_WORDS = frozenset({"true", "yes", "on", "1"})


@dataclass(frozen=True)
class RunOptions:
    """The Snakemake ``--config`` keys of one run, validated (config.schema.json)."""

    study: Path = DEFAULT_STUDY
    profile: str | None = None
    sites: tuple[str, ...] | None = None
    runtime: str = "auto"
    calibrate: bool = True
    run: str | None = None  # a run label: results/runs/<label> (instore.study.runs)
    baseline: str | None = None  # an earlier run's label or results directory


@dataclass(frozen=True)
class Run:
    """Everything a workflow run is configured with, checked before any rule runs."""

    options: RunOptions
    study: Study
    sites: Mapping[str, SiteConfig]


def _normalized(config: Mapping[str, Any]) -> dict[str, Any]:
    """Undo the command line's shapes: ``key=`` (None) is unset; ``sites=a,b`` is a list."""
    data = {k: v for k, v in config.items() if v is not None}
    if isinstance(data.get("sites"), str):
        data["sites"] = [s.strip() for s in data["sites"].split(",") if s.strip()]
    for key in ("run", "baseline"):  # names, though `run=2` reads as a number
        if isinstance(data.get(key), int | float) and not isinstance(data[key], bool):
            data[key] = str(data[key])
    return data


def run_options(config: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> RunOptions:
    """Validate the ``--config`` keys: a misspelt key or a value like ``ture`` is an error."""
    data = _normalized(config)
    validate(data, "config", "--config")
    sites = data.get("sites")
    return RunOptions(
        study=Path(data.get("study", DEFAULT_STUDY)),
        profile=data.get("profile"),
        sites=tuple(sites) if sites else None,
        # The environment's choice is checked where it is used (select_runtime names it).
        runtime=data.get("runtime") or environ.get(RUNTIME_ENV) or "auto",
        calibrate=str(data.get("calibrate", True)).lower() in TRUE_WORDS,
        run=data.get("run"),
        baseline=data.get("baseline"),
    )


def load_run(config: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> Run:
    """The options, the study they select and every site it measures, all validated."""
    options = run_options(config, environ)
    sites = list(options.sites) if options.sites else None  # the schema's arrays are lists
    study = load_study(options.study, {"profile": options.profile, "sites": sites})
    if options.baseline:  # the run's own word over the study file's
        study = replace(study, baseline=results_of(options.baseline))
    return Run(options, study, {name: load_site(name) for name in study.sites})

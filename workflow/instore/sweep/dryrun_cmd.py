"""``instore plan``: the dry run of a study, site by site (instore.sweep.dryrun), with the
words ``make study`` takes (``profile=quick sites=[mysite] run=after-upgrade``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from instore.configfile import yaml_value
from instore.run import load_run
from instore.study.runs import RESULTS, run_dir


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "plan",
        help="a dry run: what the study will do to each site, and nothing done",
        description="Print what the study will do to each site before anything is uploaded, "
        "started or measured: the bytes uploaded, the files written on the site (the uploaded "
        "copies, fio's test file under calibration.posix_dir), the sections and points to "
        "measure and those skipped with why, the most clients at once with the site's load: "
        "limits, and an estimate of the sweep's time from the study's reference run. Takes "
        "the words `make study CONFIG=...` takes, and site names: `instore plan mysite`, "
        "`instore plan profile=quick sites=[mysite] run=after-upgrade` (`make study DRY_RUN=1` "
        "runs this).",
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="SITE|KEY=VALUE",
        help="sites to plan for, and the run's keys (study, profile, sites, run, calibrate)",
    )
    p.add_argument("--data", type=Path, default=Path("data/files"),
                   help="the generated files, whose sizes the upload counts where they exist "
                   "(default: data/files; else their target sizes)")  # fmt: skip
    p.set_defaults(func=run)


def run_config(words: list[str]) -> dict[str, Any]:
    """The words as Snakemake's --config reads them (values as YAML); bare words are sites."""
    config: dict[str, Any] = {}
    sites: list[str] = []
    for word in words:
        key, eq, value = word.partition("=")
        if not eq:
            sites.append(word)
            continue
        config[key] = yaml_value(value, key) if value else None
    if sites:
        listed = config.get("sites") or []
        config["sites"] = [*([listed] if isinstance(listed, str) else listed), *sites]
    return config


def run(args: argparse.Namespace) -> int:
    from instore.sweep.dryrun import dry_run  # Dask and pandas only once the words are good

    study_run = load_run(run_config(args.words))
    results = run_dir(RESULTS, study_run.options.run)
    for site in study_run.sites.values():
        plan = dry_run(study_run.study, site, Path(results),
                       calibrate=study_run.options.calibrate, data=args.data)  # fmt: skip
        print(plan.text())
    print(f"instore plan: dry run: nothing uploaded, started or measured (results: {results})")
    return 0

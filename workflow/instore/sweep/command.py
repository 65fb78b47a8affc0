"""``instore sweep``: measure a site's study sections, resumably, into Parquet."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from instore.cliutil import comma_choices, log_progress
from instore.errors import InstoreError
from instore.site import load_site
from instore.study import SECTIONS, load_study
from instore.study.config import DEFAULT_STUDY
from instore.study.runs import run_dir
from instore.sweep.cluster import ClusterSpec
from instore.sweep.options import LAUNCHES, SweepOptions, SweepSummary
from instore.sweep.runner import run_site
from instore.sweep.store import records_older_than
from instore.vocabulary import RUNTIME_SETTINGS

log = logging.getLogger(__name__)

FAILED_POINTS = 1  # exit status when some points' jobs failed (they are in the tables)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "sweep",
        help="measure a site: run the study's sections, one point at a time, into Parquet",
        description="Run the grid of each section for one site. A point's jobs start together on "
        "Dask workers (one worker = one node); points never overlap. Records are appended to "
        "results/<site>/records.jsonl as each point finishes and the tables "
        "results/<site>/<section>.parquet are rebuilt; a rerun measures only missing points.",
    )
    p.add_argument(
        "--site", required=True, help="site name (config/sites/<name>.yaml) or path to a site file"
    )
    p.add_argument(
        "--sections",
        type=comma_choices(SECTIONS, "section", all_word="all"),
        default=list(SECTIONS),
        help="comma-separated sections, or all (default: all)",
    )
    p.add_argument(
        "--study", type=Path, default=DEFAULT_STUDY, help="study file (default: config/study.yaml)"
    )
    p.add_argument(
        "--profile", help="study profile, e.g. quick or full (default: the study file's)"
    )
    p.add_argument(
        "--data",
        type=Path,
        default=Path("data/files"),
        help="generated files (default: data/files)",
    )
    p.add_argument(
        "--traces",
        type=Path,
        nargs="*",
        default=(),
        metavar="DIR",
        help="the recorded traces the replay points replay, each by its directory's name "
        "(default: each as recorded on its study site, <data>/traces/<site>/<name>)",
    )
    p.add_argument(
        "--results", type=Path, default=Path("results"), help="results directory (default: results)"
    )
    p.add_argument(
        "--scratch",
        type=Path,
        default=Path("data/scratch"),
        help="stage-in scratch directory (default: data/scratch)",
    )
    p.add_argument("--force", action="store_true", help="remeasure points already measured")
    p.add_argument(
        "--run",
        metavar="LABEL",
        help="a run label: results go to <results>/runs/LABEL, apart from other runs' (a new "
        "label measures everything again)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print what the sweep will do to the site (uploads, files written, points, most "
        "clients at once, estimated time: as `instore plan`) and stop",
    )
    p.add_argument(
        "--resume-if-current",
        nargs="+",
        type=Path,
        default=[],
        metavar="FILE",
        help="remeasure (as --force) when the sections' records are older than one of these "
        "files (site file, data, calibration: the conditions they were measured under); "
        "otherwise resume",
    )
    p.add_argument(
        "--failed-points-ok",
        action="store_true",
        help="exit 0 when some points' jobs failed (they are recorded in the tables); "
        f"default: exit {FAILED_POINTS}",
    )
    p.add_argument(
        "--runtime",
        default="none",
        choices=list(RUNTIME_SETTINGS),
        help="run each job in this container runtime (default: none, the host venv)",
    )
    p.add_argument(
        "--launch",
        default="fork",
        choices=LAUNCHES,
        help="how each job starts: fork (default: a fresh child of one warm payload per worker, "
        "which imported ROOT and compiled the event loops once) or exec (a new process, and "
        "container, per job: about 5 s of start-up each)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler", help="address of an existing Dask scheduler (tcp://host:port)"
    )
    where.add_argument(
        "--slurm",
        action="store_true",
        help="start workers as SLURM jobs (dask-jobqueue SLURMCluster)",
    )
    p.add_argument(
        "--nodes",
        type=int,
        default=1,
        help="Dask workers (nodes) to start (default: the site's node count)",
    )
    p.add_argument("--slurm-queue", help="SLURM partition for --slurm")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def force_measure(args: argparse.Namespace) -> bool:
    """--force, or --resume-if-current with records measured before one of its files."""
    if args.force:
        return True
    stale = bool(args.resume_if_current) and records_older_than(
        args.results, load_site(args.site).name, args.sections, args.resume_if_current
    )
    if stale:
        log.info("records older than %s: remeasuring", ", ".join(map(str, args.resume_if_current)))
    return stale


def exit_status(summary: SweepSummary, failed_points_ok: bool) -> int:
    """0, or FAILED_POINTS when some points failed (recorded), unless that is declared fine."""
    if summary.failed_points and not failed_points_ok:
        return FAILED_POINTS
    return 0


def run(args: argparse.Namespace) -> int:
    log_progress("instore sweep: ")
    if args.nodes < 1:
        raise InstoreError(f"--nodes {args.nodes} is not a node count", "give --nodes 1 or more")
    study = load_study(args.study, {"profile": args.profile})
    args.results = run_dir(args.results, args.run)
    if args.dry_run:
        from instore.sweep.dryrun import dry_run

        print(dry_run(study, load_site(args.site), args.results, args.sections,
                      data=args.data).text())  # fmt: skip
        print("instore sweep: dry run: nothing started or measured")
        return 0
    kind = "address" if args.scheduler else "slurm" if args.slurm else "local"
    opts = SweepOptions(
        study=study,
        site=args.site,
        sections=args.sections,
        data=args.data,
        traces=tuple(args.traces),
        results=args.results,
        scratch=args.scratch,
        force=force_measure(args),
        runtime=args.runtime,
        cluster=ClusterSpec(
            kind=kind, address=args.scheduler, nodes=args.nodes, slurm_queue=args.slurm_queue
        ),
        progress=not args.no_progress,
        launch=args.launch,
    )
    summary = run_site(opts)
    print(summary.line())
    for reason, n in summary.skipped.items():
        print(f"  skipped {n}: {reason}")
    for note, n in summary.substituted.items():
        print(f"  {n} point(s): {note}")
    for section, path in summary.tables.items():
        print(f"  {section}: {path}")
    return exit_status(summary, args.failed_points_ok)

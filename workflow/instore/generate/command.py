"""``instore generate``: write the study's ROOT files."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from instore.cliutil import comma_choices, log_progress
from instore.errors import InstoreError
from instore.generate.layouts import DEFAULT_LAYOUTS, generate_files
from instore.generate.spec import RNTUPLE_DEFAULTS
from instore.generate.template import load_template, named_templates
from instore.vocabulary import LAYOUTS

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "generate",
        help="write deterministic analysis-like ROOT files in the study's layouts",
        description="Write the same events in each layout: TTree (unordered, by-branch, ordered) "
        "or RNTuple (rntuple: ROOT's default write options; rntuple-small: small clusters and "
        "pages). The same seed gives the same event values in every layout; replicas get "
        "distinct seeds.",
    )
    size = p.add_mutually_exclusive_group()
    size.add_argument("--size-mb", type=float, help="target compressed size of each file, in MB")
    size.add_argument("--events", type=int, help="number of events per file")
    p.add_argument(
        "--layouts",
        type=comma_choices(LAYOUTS, "layout"),
        default=list(DEFAULT_LAYOUTS),
        help=f"comma-separated, of {','.join(LAYOUTS)} (default: {','.join(DEFAULT_LAYOUTS)})",
    )
    p.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="files per layout, each with its own seed (default: 1)",
    )
    p.add_argument(
        "--replica",
        type=int,
        metavar="K",
        help="write replica K only (0-based; the files are those --replicas K+1 would write)",
    )
    p.add_argument("--seed", type=int, default=1, help="base seed (default: 1)")
    p.add_argument(
        "--cluster-mb",
        type=float,
        default=8.0,
        help="autoflush cluster size for clustered layouts (default: 8)",
    )
    p.add_argument(
        "--compression",
        type=int,
        help="ROOT compression setting, e.g. 101 zlib-1, 505 zstd-5, 404 lz4-4 (default: the "
        "template's with --like, else 101)",
    )
    p.add_argument(
        "--like",
        metavar="TEMPLATE",
        help="write files like a real one: a ROOT file with a flat TTree (a NanoAOD), a template "
        f"JSON, or a shipped template ({', '.join(named_templates())}); default: the study's "
        "own analysis-like schema",
    )
    p.add_argument(
        "--fileset",
        default="",
        help="a name prefixed to the file names (<fileset>-<layout>-r<k>.root), so file sets of "
        "several sizes or templates share a directory",
    )
    p.add_argument(
        "--save-template",
        type=Path,
        metavar="JSON",
        help="with --like FILE.root: also save the derived template there (reused with "
        "--like JSON; the project keeps what it derived, not the file)",
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="with --like: write a file of the template's entry count and report, per branch, "
        "compressed bytes per event against the template's (a CSV beside the files)",
    )
    p.add_argument(
        "--rntuple-cluster-mb",
        type=float,
        help="approximate compressed RNTuple cluster size, in MB (default: ROOT's 128 MiB for "
        f"rntuple, {RNTUPLE_DEFAULTS['rntuple-small'][0]:g} for rntuple-small)",
    )
    p.add_argument(
        "--rntuple-page-kb",
        type=float,
        help="maximum uncompressed RNTuple page size, in KiB (default: ROOT's 1024 for rntuple, "
        f"{RNTUPLE_DEFAULTS['rntuple-small'][1]:g} for rntuple-small)",
    )
    p.add_argument(
        "--repeat",
        type=Path,
        metavar="FILE",
        help="write a larger file as copies of FILE (one instore generate wrote): its events "
        "--copies times, merged without recompression as hadd merges, named for --fileset in "
        "FILE's layout and replica (seconds instead of minutes for a 1 GB set)",
    )
    p.add_argument("--copies", type=int, metavar="K", help="with --repeat: how many copies")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("data/files"),
        help="output directory (default: data/files)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    log_progress("instore generate: ")
    start = time.monotonic()
    if args.repeat is not None:
        return _repeat(args, start)
    if args.copies is not None:
        raise InstoreError("--copies needs --repeat", "add --repeat FILE, or drop --copies")
    if args.like:
        template = load_template(args.like)
        if args.save_template:
            template.name = args.save_template.stem
            template.save(args.save_template)
            log.info("saved template %s (%d branches) to %s", template.name,
                         len(template.branches), args.save_template)  # fmt: skip
        if args.compare:
            from instore.generate.compare import compare_to_template

            return compare_to_template(template, args.out, args.seed, args.compression)
    elif args.save_template or args.compare:
        raise InstoreError("--save-template and --compare need --like", "add --like FILE")
    if args.size_mb is None and args.events is None:
        if args.save_template:
            return 0
        raise InstoreError("no file size given", "give --size-mb MB or --events N")
    written = generate_files(
        args.out,
        args.layouts,
        args.replicas,
        args.seed,
        args.size_mb,
        args.events,
        args.cluster_mb,
        args.compression,
        args.rntuple_cluster_mb,
        args.rntuple_page_kb,
        args.like,
        args.fileset,
        args.replica,
    )
    for path in written.values():
        print(f"{path}\t{path.stat().st_size / 1e6:.1f} MB")
    log.info("wrote %d file(s) in %.1f s", len(written), time.monotonic() - start)
    return 0


def _repeat(args: argparse.Namespace, start: float) -> int:
    """``--repeat FILE --copies K --fileset NAME``: a set's file made from a smaller set's."""
    from instore.generate.repeat import repeat_file

    given = [f for f, v in (("--size-mb", args.size_mb), ("--events", args.events),
                            ("--like", args.like)) if v is not None]  # fmt: skip
    if given:
        raise InstoreError(f"--repeat takes its events and schema from the file, not {given[0]}",
                           f"drop {', '.join(given)}")  # fmt: skip
    if args.copies is None or not args.fileset:
        raise InstoreError("--repeat needs --copies K and --fileset NAME",
                           "e.g. --repeat data/files/nano256-ordered-r0.root --copies 4 --fileset nano1g")  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    path = repeat_file(args.repeat, args.copies, args.fileset, args.out)
    print(f"{path}\t{path.stat().st_size / 1e6:.1f} MB")
    log.info("wrote %s (%d copies of %s) in %.1f s", path.name, args.copies, args.repeat.name,
                 time.monotonic() - start)  # fmt: skip
    return 0

"""``instore generate``: write the study's ROOT files."""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

from instore.cliutil import comma_choices
from instore.generate.layouts import DEFAULT_LAYOUTS, LAYOUTS, RNTUPLE_DEFAULTS, generate_files


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "generate",
        help="write deterministic analysis-like ROOT files in the study's layouts",
        description="Write the same events in each layout: TTree (unordered, by-branch, ordered) "
        "or RNTuple (rntuple: ROOT's default write options; rntuple-small: small clusters and "
        "pages). The same seed gives the same event values in every layout; replicas get "
        "distinct seeds.",
    )
    size = p.add_mutually_exclusive_group(required=True)
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
        default=101,
        help="ROOT compression setting, e.g. 101 zlib-1, 505 zstd-5, 404 lz4-4 (default: 101)",
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
        "--out",
        type=Path,
        default=Path("data/files"),
        help="output directory (default: data/files)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="instore generate: %(message)s")
    start = time.monotonic()
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
    )
    for path in written.values():
        print(f"{path}\t{path.stat().st_size / 1e6:.1f} MB")
    logging.info("wrote %d file(s) in %.1f s", len(written), time.monotonic() - start)
    return 0

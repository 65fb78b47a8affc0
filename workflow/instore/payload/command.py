"""``instore read``: the measuring payload. One job, one JSON run record on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from instore.payload.engine_uproot import UprootKnobs
from instore.payload.pattern import ENTRY_MODES, Pattern
from instore.payload.runner import ENGINES, STAGE_IN_TOOLS, ReadOptions, run_read
from instore.payload.specs import MT_MODES
from instore.vocabulary import FORMATS

_D = UprootKnobs()


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "read",
        help="read one ROOT file as an analysis job would, and print its run record",
        description="Read a ROOT file (path, file://, root://, http://) with ROOT's event loop or "
        "uproot, and print one JSON run record: wall and CPU time, CPU-queue wait, bytes read, "
        "read calls, read sizes, bytes needed, errors and provenance. Exit status 1 when the read "
        "failed (the record still says why).",
    )
    p.add_argument("url", help="the file: a path, file://, root:// or http(s):// URL")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="root",
        help="root (C++ event loop) or uproot (columnar); default root",
    )
    p.add_argument(
        "--tree",
        "--object",
        dest="tree",
        help="the TTree or RNTuple to read: its name, or its path in the file (analysis/nominal); "
        "default: the largest TTree or RNTuple, TDirectories searched",
    )
    p.add_argument(
        "--format",
        dest="object_format",
        choices=FORMATS,
        help="the object's format, when the caller knows it: with --tree giving its path, the "
        "job opens the file once, on its clock, as an analysis job does (default: the file is "
        "first opened before the clock to find the object)",
    )
    pat = p.add_argument_group("access pattern")
    pat.add_argument(
        "--branches",
        default="all",
        help='"all", "fraction:F" (an evenly spread fraction), a named set (agc-2.7, agc-4, '
        'agc-15, agc-25, agc-50: the Analysis Grand Challenge\'s NanoAOD sets) or "a,b,Jet_*" '
        "(names and globs; counters are added) (default: all)",
    )
    pat.add_argument(
        "--entries", type=float, default=1.0, help="fraction of entries to process (default: 1)"
    )
    pat.add_argument(
        "--entry-mode",
        choices=ENTRY_MODES,
        default="stride",
        help="stride: every k-th entry; range: the first part (default: stride)",
    )
    pat.add_argument(
        "--cpu-us",
        type=float,
        default=0.0,
        help="synthetic CPU time per event in microseconds (default: 0)",
    )
    knobs = p.add_argument_group("client knobs")
    knobs.add_argument(
        "--cache-mb",
        type=float,
        help="TTreeCache size in MB; 0 turns it off (default: ROOT's default). On an RNTuple: "
        "0 turns the cluster cache off, any other value on (default: on)",
    )
    knobs.add_argument(
        "--readahead-kb",
        type=int,
        help="ROOT TFile readahead (coalescing) size in KiB (default: ROOT's, 256 KB)",
    )
    knobs.add_argument(
        "--uproot-gap-kb",
        type=int,
        default=_D.max_range_gap // 1024,
        help="uproot: merge ranges closer than this (KiB)",
    )
    knobs.add_argument(
        "--uproot-request-mb",
        type=float,
        default=_D.max_request_bytes / 2**20,
        help="uproot: max bytes per request (MiB)",
    )
    knobs.add_argument(
        "--uproot-step-mb",
        type=float,
        default=_D.step_bytes / 2**20,
        help="uproot: uncompressed MiB per step when the file has one cluster",
    )
    knobs.add_argument(
        "--timeout",
        type=float,
        default=_D.timeout,
        help="uproot: seconds to wait for a remote request (default: 60)",
    )
    job = p.add_argument_group("job")
    job.add_argument(
        "--warm",
        action="store_true",
        help="do not drop the local file's page cache first (default: cold)",
    )
    job.add_argument(
        "--stage-in",
        choices=STAGE_IN_TOOLS,
        help="copy the file to --scratch first (copy time counts in wall time)",
    )
    job.add_argument("--scratch", type=Path, help="scratch directory for --stage-in")
    job.add_argument(
        "--start-at",
        type=float,
        help="wall-clock time (Unix seconds) to start measuring, after start-up: aligns concurrent jobs",
    )
    job.add_argument(
        "--fixed-time",
        type=float,
        default=0.0,
        help="HEPiX method: re-read the file until this many seconds have passed (default: 0, read once)",
    )
    job.add_argument(
        "--access-log", type=Path, help="write every physical read (offset, length) to this CSV"
    )
    job.add_argument(
        "--threads",
        type=int,
        default=1,
        help="threads of the job, at most the worker's cores; its CPU efficiency is CPU over "
        "wall x threads, as a batch system accounts a multi-core slot (default: 1)",
    )
    job.add_argument(
        "--mt-mode",
        choices=MT_MODES,
        help="how a job of several threads uses them. root engine: cluster (the entries split by "
        "cluster, each thread with its own file, tree and cache, as RDataFrame does; the "
        "default) or implicit (ROOT's EnableImplicitMT under TTree::GetEntry: branches unzipped "
        "in parallel; RNTuple: pages unzipped in parallel). uproot: executors (its decompression "
        "and interpretation executors; the only mode)",
    )
    p.set_defaults(func=run)


def options_from_args(args: argparse.Namespace) -> ReadOptions:
    return ReadOptions(
        url=args.url,
        engine=args.engine,
        tree=args.tree,
        object_format=args.object_format,
        pattern=Pattern(args.branches, args.entries, args.entry_mode, args.cpu_us),
        cache_bytes=None if args.cache_mb is None else int(args.cache_mb * 2**20),
        readahead_bytes=None if args.readahead_kb is None else args.readahead_kb * 1024,
        uproot=UprootKnobs(
            max_range_gap=args.uproot_gap_kb * 1024,
            max_request_bytes=int(args.uproot_request_mb * 2**20),
            step_bytes=int(args.uproot_step_mb * 2**20),
            timeout=args.timeout,
        ),
        cold=not args.warm,
        stage_in=args.stage_in,
        scratch=args.scratch,
        fixed_time_s=args.fixed_time,
        start_at=args.start_at,
        threads=args.threads,
        mt_mode=args.mt_mode,
    )


def run(args: argparse.Namespace) -> int:
    result = run_read(options_from_args(args))
    if args.access_log:
        args.access_log.parent.mkdir(parents=True, exist_ok=True)
        lines = "".join(f"{o},{n}\n" for o, n in result.reads)
        args.access_log.write_text("offset,length\n" + lines)
    print(json.dumps(result.as_dict()))
    if result.error:
        print(f"instore read: error: {result.url}: {result.error}", file=sys.stderr)
        return 1
    return 0

"""`instore record` and `instore replay`."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from instore.access import XROOTD
from instore.errors import InstoreError


def register(subparsers: Any) -> None:
    rec = subparsers.add_parser(
        "record",
        help="run an analysis with XRootD's recorder on; write a trace of its reads",
        description="Run COMMAND (any analysis: a ROOT macro, an RDataFrame or uproot script) "
        "with XRootD's recorder on in ROOT's and PyPI xrootd's clients, and write a trace: the "
        "recorder's CSV of its root:// requests plus its wall and CPU time, events, exit code "
        "and provenance, with every credential removed. Local and http(s) reads are not "
        "recorded. The job's stdout is passed on unchanged; the events it processed are "
        '--events N, otherwise the "events" of the last line it prints on stdout that is a '
        'JSON object with an integer "events" key (as analyses/agc_ttbar_*.py print their '
        "result); neither: unknown, and replays give no events per second.",
    )
    rec.add_argument("--out", type=Path, default=None,
                     help="trace directory to write (default: trace-YYYYmmdd-HHMMSS)")  # fmt: skip
    rec.add_argument("--events", type=int, default=None, metavar="N",
                     help="the events the job processes (default: the integer \"events\" of the "
                     "last JSON-object line the job prints on stdout; none: unknown)")  # fmt: skip
    rec.add_argument("--warm-up", type=int, default=0, metavar="N",
                     help="run the command N times first, unrecorded (its output to stderr), so "
                     "its software is warm as on a worker node that ran it before: a cold first "
                     "run adds its software's loading to the recorded think times (default: 0; "
                     "make study records with 1)")  # fmt: skip
    on = rec.add_argument_group(
        "on a site",
        "record against a site's files: the site (an emulated one is brought up "
        "for the recording) serves each --file, and their URLs are added to the command's end",
    )
    on.add_argument("--site", help="a site name or file")
    on.add_argument("--protocol", default=XROOTD,
                    help=f"the protocol the job reads over (default: {XROOTD}; only root:// "
                    "reads are recorded)")  # fmt: skip
    on.add_argument("--file", dest="files", action="append", type=Path, default=[],
                    metavar="PATH", help="a file the job reads (repeat for more)")  # fmt: skip
    on.add_argument("--results", dest="site_results", type=Path, default=Path("results"),
                    help="results directory with the site's calibration (default: results)")  # fmt: skip
    rec.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")
    rec.set_defaults(func=_record)

    rep = subparsers.add_parser(
        "replay",
        help="replay a trace closed-loop on a storage; predict the job's CPU efficiency there",
        description="Replay a trace's requests closed-loop (each when the previous one of its "
        "stream has completed plus the recorded think time) through instore's sources, and print "
        "a run record: wall, bytes, read calls, vector reads, read latencies, and the recorded "
        "job's predicted CPU efficiency on that storage (its recorded CPU over the replay's wall, per "
        "core it kept busy, at most 100%: above, it would be CPU-bound there). A "
        "multi-threaded job's streams (its threads' files, told apart by the recorder's file "
        "objects and their timestamps) are replayed side by side, so what overlapped in the job "
        "overlaps in the replay; the record says how many streams and overlapping requests.",
    )
    rep.add_argument("trace", type=Path, help="a trace directory (or a recorder CSV)")
    where = rep.add_mutually_exclusive_group(required=True)
    where.add_argument("--url-map", action="append", metavar="OLD=NEW",
                       help="replace the URL prefix OLD by NEW (a URL or a directory); repeatable")  # fmt: skip
    where.add_argument("--site", help="a site name or file: its URL for each trace file's name")
    where.add_argument("--target", action="append", metavar="URL",
                       help="where the trace's files are, in the trace's order (a URL or a path); "
                       "repeat for each file")  # fmt: skip
    rep.add_argument("--protocol", default=None,
                     help="with --site: posix, fuse, xrootd, xcache or http (default: xrootd)")  # fmt: skip
    rep.add_argument("--results", type=Path, default=Path("results"),
                     help="results directory an emulated site was brought up with")  # fmt: skip
    rep.add_argument("--timeout", type=float, default=60.0, help="per request, seconds")
    rep.add_argument("--fixed-time", type=float, default=0.0, metavar="S",
                     help="HEPiX method: replay the trace again and again until this many seconds "
                     "have passed (default: 0, replay once); the record counts the passes and "
                     "the events they stand for")  # fmt: skip
    rep.add_argument("--pass-target", action="append", default=[], metavar="URL",
                     help="with --fixed-time, a one-file trace: the file a later pass reads "
                     "instead (repeat; pass 2 reads the first, cycling), so no pass re-reads "
                     "what the page cache kept from the one before")  # fmt: skip
    rep.add_argument("--serialise", action="store_true",
                     help="issue every request after the previous one has completed, the "
                     "trace's streams one after another instead of side by side (what a replay "
                     "that ignores the job's threads predicts)")  # fmt: skip
    rep.add_argument("--xrdreplay", action="store_true",
                     help="also run Debian's xrdreplay (open loop, root:// only) and record it")  # fmt: skip
    rep.add_argument("--out", type=Path, default=None, help="also write the record (JSON) here")
    rep.add_argument("--start-at", type=float, default=None, metavar="UNIX_TIME",
                     help="start the clock then (replays started together, as a sweep's jobs)")  # fmt: skip
    rep.add_argument("--no-check", action="store_true",
                     help="do not check first (in a child process) that every trace file is at "
                     "its target: a sweep has checked them, and 64 replays starting at once "
                     "each pay for that child")  # fmt: skip
    rep.add_argument("--record-only", action="store_true",
                     help="print the record as one JSON line and no summary (as `instore read` "
                     "prints its record; what a sweep's job runs)")  # fmt: skip
    rep.set_defaults(func=_replay)


def _record(args: argparse.Namespace) -> int:
    from instore.replay.record_cmd import check_counts, record

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    out = args.out or Path(time.strftime("trace-%Y%m%d-%H%M%S"))
    if args.files and not args.site:
        raise InstoreError("--file names a file a site serves", "give --site S with it")
    check_counts(args.events, args.warm_up)
    if args.site:
        code, trace_dir = _record_on_site(args, command, out)
    else:
        code, trace_dir = record(command, out, events=args.events, warm_up=args.warm_up)
    meta = json.loads((trace_dir / "trace.json").read_text())
    events = "events unknown" if meta["events"] is None else f"{meta['events']} events"
    print(
        f"instore record: {trace_dir}: {meta['operations']} XRootD operations, wall "
        f"{meta['wall_s']:.2f} s, CPU {meta['cpu_s']:.2f} s, {events}, exit code {code}; recorders "
        f"loaded: {', '.join(Path(p).name for p in meta['recorder']['loaded']) or 'none'}",
        file=sys.stderr,
    )
    if not meta["operations"]:
        print("instore record: no XRootD request was recorded (" + meta["not_recorded"] + ")",
              file=sys.stderr)  # fmt: skip
    return code


def _record_on_site(args: argparse.Namespace, command: list[str], out: Path) -> tuple[int, Path]:
    """Record ``command`` reading ``--file``s from the site, their URLs appended to it."""
    from instore.replay.record_cmd import record
    from instore.site.config import load_site
    from instore.site.session import using_site

    if not args.files:
        raise InstoreError("--site needs the files the job reads", "add --file PATH for each")
    missing = [f for f in args.files if not f.exists()]
    if missing:
        raise InstoreError(f"no file {missing[0]}", "generate it first (instore generate)")
    cfg = load_site(args.site)
    if args.protocol not in cfg.protocols:
        raise InstoreError(f"site {cfg.name} does not offer {args.protocol}",
                           f"record with --protocol one of {', '.join(cfg.protocols)}")  # fmt: skip
    with using_site(cfg, args.site_results, args.files) as live:
        urls = [live.url(args.protocol, f.name) for f in args.files]
        where = {"site": cfg.name, "protocol": args.protocol, "files": [f.name for f in args.files]}
        return record([*command, *urls], out, where=where, events=args.events,
                      warm_up=args.warm_up)  # fmt: skip


def _replay(args: argparse.Namespace) -> int:
    from instore.replay.closed_loop import replay
    from instore.replay.targets import by_site, by_target, by_url_map
    from instore.replay.trace import load_trace

    if args.protocol and not args.site:
        raise InstoreError("--protocol chooses among a site's protocols",
                           "give --site S with it, or map URLs with --url-map")  # fmt: skip
    trace = load_trace(args.trace)
    if args.site:
        targets = by_site(trace.files, args.site, args.protocol, args.results)
    elif args.target:
        targets = by_target(trace.files, args.target)
    else:
        targets = by_url_map(trace.files, args.url_map)
    if args.pass_target and not args.fixed_time:
        raise InstoreError("--pass-target names the files of later passes",
                           "give --fixed-time S with it (one pass reads only the targets)")  # fmt: skip
    targets = targets.with_pass_urls(args.pass_target)
    if args.xrdreplay:
        from instore.replay.xrdreplay import xrdreplay_binary

        xrdreplay_binary(targets)
    record = replay(trace, targets, args.timeout, args.start_at, check=not args.no_check,
                    fixed_time_s=args.fixed_time, serialise=args.serialise)  # fmt: skip
    if record.serialise_reason and not args.serialise:  # streams not told apart: one line
        print(f"instore replay: {args.trace}: {record.serialise_reason}", file=sys.stderr)
    if args.xrdreplay and record.error is None:
        from instore.replay.xrdreplay import run_xrdreplay

        record.xrdreplay = run_xrdreplay(trace, targets, max(600.0, 10 * record.wall_s))
    text = json.dumps(record.as_dict(), indent=None if args.record_only else 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    if args.record_only:
        return 1 if record.error else 0
    eff = record.predicted_cpu_efficiency
    done, total = record.requests_done, record.requests_total
    requests = f"{done}/{total} requests"
    if args.fixed_time:
        requests = (
            f"{record.passes:.2f} passes in {args.fixed_time:g} s, {done} requests ({total} a pass)"
        )
    rate = record.events_per_s or 0.0
    events = "" if record.events is None else f", {record.events:.0f} events ({rate:.1f}/s)"
    streams = (
        "one after another" if record.streams == 1 else f"{record.streams} streams side by side"
    )
    if record.overlapping_side_by_side:
        streams += f", {record.overlapping_side_by_side} sent while others were in flight"
    print(
        f"instore replay: {requests} ({streams}), "
        f"{record.bytes_read} bytes in {record.read_calls} reads ({record.vector_reads} vector), "
        f"wall {record.wall_s:.3f} s (recorded {record.recorded.get('wall_s') or 0:.3f} s), "
        f"predicted CPU efficiency {'n/a' if eff is None else f'{eff:.1%}'}{events}"
        + (f"; stopped: {record.error}" if record.error else ""),
        file=sys.stderr,
    )
    return 1 if record.error else 0

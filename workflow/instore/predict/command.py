"""`instore predict`: a trace's wall, CPU efficiency and time breakdown on a site, from the
site's profile, with no site up; ``--fit SITE`` writes the profile, ``--validate`` compares
the prediction with every measured replay and load point, ``--all`` predicts every recorded
trace on every site with a profile."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from instore.errors import InstoreError

PARTS_LABEL = {"think": "think", "round_trips": "round trips", "server": "server",
               "disk": "disk", "disk_queue": "disk queue", "transfer": "transfer"}  # fmt: skip


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "predict",
        help="predict a trace's wall and CPU efficiency on a site from its profile (no site up)",
        description="Predict a recorded trace's wall time, CPU efficiency, events/s and where "
        "its time goes (think, round trips, server, disk, disk queue, transfer) on a site, "
        "from the site's profile (results/<site>/profile.json, fitted after its sweeps, or a "
        "hand-written profile's path; docs/predict.md), with what-ifs: another RTT, link, "
        "IOPS, an XCache, more clients. No site is brought up.",
    )
    p.add_argument("trace", nargs="?", type=Path,
                   help="a trace directory (instore record's), its trace.json or a bare CSV")  # fmt: skip
    p.add_argument("--site", help="a site with results/<site>/profile.json, or a profile's path")
    p.add_argument("--results", type=Path, default=Path("results"), help="default: results")
    p.add_argument("--traces", type=Path, default=Path("data/files/traces"),
                   help="the study's recorded traces, for --all and --validate "
                   "(default: data/files/traces)")  # fmt: skip
    w = p.add_argument_group("what if")
    w.add_argument("--rtt-ms", type=float, help="another round trip, ms")
    w.add_argument("--bandwidth-mbit", type=float, help="another link, Mbit/s")
    w.add_argument("--iops", type=float, help="another disk: random reads per second")
    w.add_argument("--tcp-window-kb", type=float, help="a TCP window that binds, kB")
    w.add_argument("--xcache", choices=("cold", "warm"), help="read through the site's XCache")
    w.add_argument("--clients", type=int, default=1, help="jobs reading the site at once")
    w.add_argument("--jobs-per-node", type=int,
                   help="jobs sharing a node's cores (their think time stretches beyond them)")  # fmt: skip
    w.add_argument("--cpu-speed", type=float,
                   help="a worker whose CPU runs the job this many times as fast as the one it "
                   "was recorded on (think time and CPU divided by it)")  # fmt: skip
    w.add_argument("--protocol", help="the access protocol (default: xrootd)")
    m = p.add_argument_group("modes").add_mutually_exclusive_group()
    m.add_argument("--fit", metavar="SITE",
                   help="fit SITE's profile from its calibration and payload sections and "
                   "write results/SITE/profile.json")  # fmt: skip
    m.add_argument("--all", action="store_true",
                   help="every recorded trace on every site with a profile")  # fmt: skip
    m.add_argument("--validate", action="store_true",
                   help="predict every measured replay and load point (and the caching "
                   "section's held-out RTTs) and compare with the measured wall")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print JSON (for scripts)")
    p.set_defaults(func=_predict)


def _what_if(args: argparse.Namespace) -> dict[str, float]:
    keys = ("rtt_ms", "bandwidth_mbit", "iops", "tcp_window_kb")
    return {k: getattr(args, k) for k in keys if getattr(args, k) is not None}


def _line(pred: Any) -> str:
    parts = ", ".join(f"{PARTS_LABEL[k]} {v:.3f}" for k, v in pred.breakdown.items() if v > 0)
    events = f", {pred.events_per_s:,.0f} events/s" if pred.events_per_s else ""
    cache = f" ({pred.xcache} XCache)" if pred.xcache else ""
    return (f"{pred.trace} on {pred.site} over {pred.protocol}{cache}, {pred.clients} client(s): "
            f"wall {pred.wall_s:.3f} s, CPU efficiency {pred.cpu_efficiency:.1%} "
            f"({pred.cpu_efficiency_per_core:.1%} per core of {pred.threads}){events}; "
            f"time (s): {parts}; waits most on {PARTS_LABEL[pred.waits_on]}")  # fmt: skip


def _recorded_on(compiled_meta: dict[str, Any], results: Path) -> Any:
    """The profile of the site the trace was recorded on, where it has one."""
    from instore.predict.profile import profile_path, read_profile

    site = (compiled_meta.get("recorded_on") or {}).get("site")
    if site and profile_path(results, site).is_file():
        return read_profile(profile_path(results, site))
    return None


def _one(args: argparse.Namespace) -> int:
    from instore.predict.compiled import compile_trace
    from instore.predict.model import predict
    from instore.predict.profile import site_profile
    from instore.predict.scenario import Scenario
    from instore.replay.trace import load_trace

    if args.trace is None or args.site is None:
        raise InstoreError("instore predict: a trace and --site are needed",
                           "give TRACE --site SITE, or --all, --validate or --fit SITE")  # fmt: skip
    trace = load_trace(args.trace)
    profile = site_profile(args.results, args.site)
    changes = _what_if(args)
    sc = Scenario(protocol=args.protocol, xcache=args.xcache, clients=args.clients,
                  jobs_per_node=args.jobs_per_node, cpu_speed=args.cpu_speed,
                  recorded_on=_recorded_on(trace.meta, args.results))  # fmt: skip
    pred = predict(compile_trace(trace), profile.with_changes(**changes), sc)
    pred.what_if = {
        **changes,
        **({"jobs_per_node": args.jobs_per_node} if args.jobs_per_node else {}),
        **({"cpu_speed": args.cpu_speed} if args.cpu_speed is not None else {}),
    }
    print(json.dumps(pred.as_dict(), indent=1) if args.json else _line(pred))
    return 0


def _profiles(results: Path) -> list[Any]:
    from instore.predict.profile import FILE_NAME, read_profile

    return [read_profile(p) for p in sorted(Path(results).glob(f"*/{FILE_NAME}"))]


def _all(args: argparse.Namespace) -> int:
    from instore.predict.compiled import compile_trace
    from instore.predict.model import predict
    from instore.predict.scenario import Scenario
    from instore.replay.trace import load_trace

    profiles = _profiles(args.results)
    traces = _all_recordings(args.traces)
    if not profiles or not traces:
        raise InstoreError(
            f"instore predict --all: {len(traces)} trace(s) under {args.traces}, "
            f"{len(profiles)} profile(s) under {args.results}",
            "record the study's traces and fit each site's profile (`make study` does both; "
            "`instore predict --fit SITE` after a site's sweeps)",
        )
    out = []
    for label, path in traces:
        trace = load_trace(path)
        compiled = replace(compile_trace(trace), name=label)
        for profile in profiles:
            name, _ = profile.protocol(args.protocol)
            sc = Scenario(protocol=name, clients=args.clients, jobs_per_node=args.jobs_per_node,
                          cpu_speed=args.cpu_speed,
                          recorded_on=_recorded_on(trace.meta, args.results))  # fmt: skip
            out.append(predict(compiled, profile.with_changes(**_what_if(args)), sc))
    if args.json:
        print(json.dumps([p.as_dict() for p in out], indent=1))
    else:
        for pred in out:
            print(_line(pred))
    return 0


def _all_recordings(traces: Path) -> list[tuple[str, Path]]:
    """Every recording of every trace, labelled by its name, and by the site it was
    recorded on where it has been recorded on more than one."""
    from instore.filenames import recorded_traces

    return [(name if len(recordings) == 1 else f"{name} (recorded on {site or 'unknown'})", path)
            for name, recordings in sorted(recorded_traces(traces).items())
            for site, path in sorted(recordings.items())]  # fmt: skip


def _fit(args: argparse.Namespace) -> int:
    from instore.predict.fit import fit_site
    from instore.predict.profile import write_profile

    profile = fit_site(args.results, args.fit)
    path = write_profile(args.results, profile)
    if args.json:
        print(json.dumps(profile.as_dict(), indent=1))
        return 0
    q = profile.fit_quality or {}
    err = q.get("median_abs_error")
    quality = (f"{q['points']} payload points, median error {err:.1%}, "
               f"{q['within_10pct']:.0%} within 10%") if err is not None else "no payload points"  # fmt: skip
    print(f"{path}: RTT {profile.rtt_ms.value:g} ms, link {profile.bandwidth_mbit.value:g} Mbit/s, "
          f"disk {profile.disk_seq_mb_per_s.value:.0f} MB/s and {profile.disk_iops or 0:.0f} IOPS, "
          f"protocols {', '.join(profile.protocols)}; fit: {quality}")  # fmt: skip
    return 0


def _validate(args: argparse.Namespace) -> int:
    from instore.predict.validate import summary, validate_results
    from instore.vocabulary import HELD_OUT_SECTION

    if not [p for p in _profiles(args.results) if args.site in (None, p.site)]:
        raise InstoreError(f"instore predict --validate: no profile under {args.results}",
                           "fit them first: `instore predict --fit SITE`")  # fmt: skip
    checks, skipped = validate_results(args.results, args.traces, args.site)
    parts = {"replay and load": [c for c in checks if c.section != HELD_OUT_SECTION],
             "held out": [c for c in checks if c.section == HELD_OUT_SECTION]}  # fmt: skip
    result = {"summary": summary(checks), "checks": [c.as_dict() for c in checks],
              "summaries": {k: summary(v) for k, v in parts.items()}, "skipped": skipped}  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    for c in checks:
        cache = f" ({c.xcache})" if c.xcache else ""
        print(f"{c.site} {c.section} {c.trace} {c.protocol}{cache} x{c.clients}: measured "
              f"{c.measured_wall_s:.3f} s, predicted {c.predicted_wall_s:.3f} s ({c.error:+.1%})")  # fmt: skip
    for name, s in result["summaries"].items():
        if s["points"]:
            print(f"{name}: {s['points']} points, {s['points_within_10pct']} "
                  f"({s['within_10pct']:.0%}) within 10%, median |error| "
                  f"{s['median_abs_error']:.1%}, 90th percentile {s['p90_abs_error']:.1%}")  # fmt: skip
    for line in skipped:
        print(f"skipped: {line}", file=sys.stderr)
    return 0


def _predict(args: argparse.Namespace) -> int:
    if args.fit:
        return _fit(args)
    if args.all:
        return _all(args)
    if args.validate:
        return _validate(args)
    return _one(args)

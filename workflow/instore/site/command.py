"""``instore site up|down|status|calibrate|preflight|upload|fault``: emulated sites from the command line,
and the checks a real site's admin runs before a study."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from instore import access, credentials
from instore.cliutil import log_progress
from instore.errors import InstoreError
from instore.site import calibrate as calib
from instore.site import emulated
from instore.site.config import SiteConfig, load_site, site_name
from instore.site.emulated import faults
from instore.site.emulated.names import SiteNames
from instore.site.emulated.system import cmdline
from instore.site.real import RealLive, purge_xcache
from instore.site.session import site_as_it_is, using_site

# How the preflight's progress lines begin on stderr: a script that reads its failure lines
# (one per endpoint, between the credential's line and the verdict) skips these.
PROGRESS = "instore site: "


def _up(args: argparse.Namespace) -> int:
    cfg = load_site(args.name)
    if not cfg.emulated:
        raise InstoreError(f"site {cfg.name} is real: there is nothing to bring up",
                           f"use `instore site preflight {cfg.name}`")  # fmt: skip
    live = emulated.bring_up(cfg, [Path(f) for f in args.files], Path(args.results))
    live.state.release()  # this process exits now; the site stays up until `site down`
    print(json.dumps(live.conditions(), indent=2))
    print(f"site {cfg.name} is up; `instore site down {cfg.name}` removes it", file=sys.stderr)
    return 0


def _down(args: argparse.Namespace) -> int:
    if args.all == bool(args.name):
        raise InstoreError("give a site name or --all, not both or neither",
                           "e.g. `instore site down lan-hdd` or `instore site down --all`")  # fmt: skip
    left = (
        emulated.teardown_all() if args.all else emulated.teardown(SiteNames(site_name(args.name)))
    )
    for item in left:
        print(f"left behind: {item}", file=sys.stderr)
    return 1 if left else 0


def _status_of(name: str, results: Path) -> dict[str, Any]:
    names = SiteNames(name)
    found = emulated.existing(names)
    status: dict[str, Any] = {"site": name, "resources": found}
    try:
        live = emulated.attach(name, results)
    except InstoreError:
        status["up"] = False
        return status
    pids = live.state.pids()
    status["processes"] = {role: bool(cmdline(pid)) for role, pid in pids.items()}
    status["up"] = all(status["processes"].values())
    # Left by a process that died: the next bring-up (or `site down`) removes it.
    status["abandoned"] = live.state.owner_gone()
    status["conditions"] = live.conditions()
    return status


def _status(args: argparse.Namespace) -> int:
    # A name that is no site, or a real one, is said so, not "up: false"; what a crashed run
    # left is reported whatever its site file (it may have been a temporary path).
    name = site_name(args.name) if args.name else None
    if name and not emulated.existing(SiteNames(name)):
        cfg = load_site(args.name)
        if not cfg.emulated:
            raise InstoreError(f"site {cfg.name} is real: nothing of it runs here to report on",
                               f"check its endpoints with `instore site preflight {cfg.name}`")  # fmt: skip
    names = [name] if name else sorted(emulated.known_sites())
    report = [_status_of(n, Path(args.results)) for n in names]
    print(json.dumps(report, indent=2))
    return 0 if all(r["up"] for r in report) else 1


def _preflight_dataset(live: RealLive, results: Path) -> int:
    """A site with its own dataset: every file behind every endpoint, each opened and listed
    (what it holds, the layout the study calls it); the listing kept for the sweep."""
    from instore.site import dataset as datasets

    cfg = live.config
    found, failures = datasets.survey(live)
    for line in failures:
        print(line, file=sys.stderr)
    if found is None:
        print(f"site {cfg.name}: FAILED", file=sys.stderr)
        return 1
    for f in found.files:
        print(f.line())
    where = datasets.path_of(results, cfg.name)
    datasets.save(found, where)
    print(f"site {cfg.name}: ok; dataset: {len(found.files)} file(s) holding {found.tree} "
          f"({found.holds()}), listed in {where}", file=sys.stderr)  # fmt: skip
    return 0


def _preflight(args: argparse.Namespace) -> int:
    # what the check reads before its wait (every copy checksummed: minutes for a full profile)
    log_progress(PROGRESS)
    cfg = load_site(args.name)
    live = site_as_it_is(cfg, Path(args.results))
    if not cfg.emulated:
        print(f"credentials: {credentials.held()}", file=sys.stderr)
    if isinstance(live, RealLive) and cfg.dataset is not None:
        if args.file or args.all:
            raise InstoreError(f"site {cfg.name} reads its own dataset: there are no test files "
                               "to check", "leave out --file and --all")  # fmt: skip
        return _preflight_dataset(live, Path(args.results))
    files = [Path(args.data) / f for f in args.file] or (
        sorted(Path(args.data).glob("*.root")) if args.all
        else [Path(args.data) / cfg.calibration.file] if cfg.calibration.file else [])  # fmt: skip
    failures = live.check(files)
    for line in live.notes if isinstance(live, RealLive) else []:
        print(line, file=sys.stderr)
    if not cfg.emulated and not files:
        print("no file to check: only TCP checked (give --file NAME, --all, or set "
              "calibration.file)", file=sys.stderr)  # fmt: skip
    for line in failures:
        print(line, file=sys.stderr)
    print(f"site {cfg.name}: {'FAILED' if failures else 'ok'}", file=sys.stderr)
    return 1 if failures else 0


def _calibrate(args: argparse.Namespace) -> int:
    cfg = load_site(args.name)
    results = Path(args.results)
    with using_site(cfg, results) as live:
        record = calib.calibrate(live, results)
    print(json.dumps(record, indent=2))
    return 0


def _upload(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from instore.site import upload

    cfg = load_site(args.name)
    files = [Path(f) for f in args.files] or sorted(Path(args.data).glob("*.root"))
    if not files:
        raise InstoreError(f"no files to upload in {args.data}",
                           "run the data step (make data) or give --files")  # fmt: skip
    total = sum(f.stat().st_size for f in files if f.is_file()) * len(upload.targets(cfg))
    with tqdm(total=total, unit="B", unit_scale=True, disable=not args.progress,
              desc=f"upload {cfg.name}") as bar:  # fmt: skip
        ledger = Path(args.results) / cfg.name / upload.LEDGER
        record = upload.upload(cfg, files, bar.update, ledger, replace=args.replace)
    marker = Path(args.marker or Path(args.results) / cfg.name / "upload.json")
    upload.write_marker(record, marker)
    for line in upload.notes(record):
        print(line, file=sys.stderr)
    print(upload_summary(cfg.name, record, args.replace, marker), file=sys.stderr)
    stale = after_replacing(cfg, record)
    if stale:
        print(stale, file=sys.stderr)
    return 0


def after_replacing(cfg: SiteConfig, record: dict[str, object]) -> str | None:
    """Where the upload replaced copies behind a site whose XCache may hold the old ones (a
    same-size stale copy passes any size check, and its bytes are another file's): empty the
    cache with its purge command, or say that it must be. The line to print, None: nothing."""
    replaced = sum(f["action"] == "replaced" for f in record["files"])  # type: ignore[attr-defined]
    if not replaced or access.XCACHE not in cfg.endpoints:
        return None
    if not cfg.tuning.xcache_purge:
        return (f"site {cfg.name}: its XCache may still hold the {replaced} copies the upload "
                "replaced at its origin: have it emptied (or name its purge command in the site "
                "file's tuning.xcache_purge) before the study reads through it")  # fmt: skip
    purge_xcache(cfg)
    return (f"site {cfg.name}: emptied its XCache with tuning.xcache_purge: it may have held the "
            f"{replaced} copies the upload replaced at its origin")  # fmt: skip


def upload_summary(site: str, record: dict[str, object], replace: bool, marker: Path) -> str:
    """The upload's last line: what was copied, replaced (and why it could be) and found equal,
    counted per copy: a file behind two endpoints is two copies (the second is found equal
    where both serve one store)."""
    files = record["files"]
    actions = Counter(f["action"] for f in files)  # type: ignore[attr-defined]
    names = len({f["name"] for f in files})  # type: ignore[attr-defined]
    endpoints = len(record.get("endpoints") or {}) or 1  # type: ignore[attr-defined]
    why = ("copies of the same name that differed, as --replace asked" if replace
           else "an earlier upload's files of the same name")  # fmt: skip
    replaced = f", {actions['replaced']} replaced ({why})" if actions["replaced"] else ""
    return (f"site {site}, {names} file(s) behind {endpoints} endpoint(s), counted per copy: "
            f"{actions['copied']} copied{replaced}, {actions['present']} already there and "
            f"equal (size, adler32); {marker}")  # fmt: skip


def _fault(args: argparse.Namespace) -> int:
    if args.seconds <= 0:
        raise InstoreError(f"--seconds must be positive, not {args.seconds:g}",
                           "e.g. --seconds 10")  # fmt: skip
    print(faults.cause(emulated.attach(args.name), args.fault, args.seconds), file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `instore site ...`."""
    site = subparsers.add_parser("site", help="bring up, check and calibrate storage sites")
    sub = site.add_subparsers(dest="site_command", metavar="ACTION", required=True)

    up = sub.add_parser("up", help="bring up an emulated site and leave it running")
    up.add_argument("name", help="site name (config/sites/NAME.yaml) or path")
    up.add_argument("--files", nargs="*", default=[], help="files to put on the site's disk")
    up.add_argument("--results", default="results",
                    help="results directory whose calibration the conditions show "
                         "(default: results)")  # fmt: skip
    up.set_defaults(func=_up)

    down = sub.add_parser("down", help="remove an emulated site (also after a crash)")
    down.add_argument(
        "name", nargs="?", help="site name, or the path of its file (as `site up` takes it)"
    )
    down.add_argument("--all", action="store_true", help="remove every instore- leftover")
    down.set_defaults(func=_down)

    status = sub.add_parser("status", help="what of a site (or of all) exists and runs")
    status.add_argument("name", nargs="?", help="site name (default: every site found)")
    status.add_argument("--results", default="results",
                        help="results directory whose calibration the conditions show "
                             "(default: results)")  # fmt: skip
    status.set_defaults(func=_status)

    pre = sub.add_parser("preflight", help="check the credential, that every endpoint answers "
                         "and, for a real site, that the test files there equal the local copies "
                         "(size, adler32) and open with the jobs' credentials; one line per "
                         f"failing endpoint, naming the cause (lines that begin '{PROGRESS.strip()}' say what "
                         "it checks, before the wait). A site with its own dataset: "
                         "each of its files found behind every endpoint, opened and listed")  # fmt: skip
    pre.add_argument("name", help="site name or path")
    pre.add_argument("--file", action="append", default=[], metavar="NAME",
                     help="a test file to check behind every endpoint (repeatable; default: the "
                          "site's calibration.file); compared with DATA/NAME where that exists")  # fmt: skip
    pre.add_argument("--all", action="store_true", help="check every DATA/*.root")
    pre.add_argument("--data", default="data/files", help="the local copies (default: data/files)")
    pre.add_argument("--results", default="results",
                     help="a site with its own dataset: its listing goes to "
                          "RESULTS/<site>/dataset.json, where the sweep finds it (default: results)")  # fmt: skip
    pre.set_defaults(func=_preflight)

    cal = sub.add_parser("calibrate", help="measure disk, protocol throughput and RTT")
    cal.add_argument("name", help="site name or path")
    cal.add_argument("--results", default="results",
                     help="results directory to write <site>/calibration.json in "
                          "(default: results, in the current directory)")  # fmt: skip
    cal.set_defaults(func=_calibrate)

    upl = sub.add_parser("upload", help="put the study's files behind every endpoint of a real "
                         "site, verified by size and adler32; equal copies are skipped")  # fmt: skip
    upl.add_argument("name", help="site name or path")
    upl.add_argument("--files", nargs="*", default=[], help="files to upload (default: "
                     "DATA/*.root)")  # fmt: skip
    upl.add_argument("--data", default="data/files", help="default: data/files")
    upl.add_argument("--results", default="results",
                     help="the marker goes to RESULTS/<site>/upload.json (default: results)")  # fmt: skip
    upl.add_argument("--marker", help="write the marker here instead")
    upl.add_argument("--replace", action="store_true",
                     help="replace copies that differ although no upload in RESULTS placed them "
                          "(this study's files from a checkout since removed); without it such "
                          "a copy stops the upload")  # fmt: skip
    upl.add_argument("--no-progress", dest="progress", action="store_false",
                     help="no progress bar")  # fmt: skip
    upl.set_defaults(func=_upload)

    fault = sub.add_parser(
        "fault",
        help="cause a fault on a running emulated site (rehearse how a study survives it)",
        description="kill-server: SIGKILL the XRootD server (a sweep restarts it before its next "
        "point); link-down: the worker link down for --seconds; stall: every packet held for "
        "--seconds (a latency spike; needs a site with network.rtt_ms).",
    )
    fault.add_argument("name", help="name of a site brought up with `instore site up`")
    fault.add_argument("fault", choices=faults.FAULTS)
    fault.add_argument("--seconds", type=float, default=10.0,
                       help="how long link-down and stall last (default: 10)")  # fmt: skip
    fault.set_defaults(func=_fault)

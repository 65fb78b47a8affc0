"""``instore container build | status | run -- ARGS``: the payload image from the command line."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

from instore.container import export, hashing, image, podman
from instore.container.measure import measure_startup, run_payload
from instore.container.project import find_project
from instore.container.runtime import SETTINGS, Access, Bind, built_apptainer, select_runtime
from instore.errors import InstoreError

RUNTIME_ENV = "INSTORE_CONTAINER_RUNTIME"
PATH_OPTIONS = {
    "--bind": "a host path the payload reads (read-only, same path inside)",
    "--bind-rw": "a host path the payload writes",
    "--fuse-dir": "a FUSE mount dir (read-only, mounts propagate); adds /dev/fuse",
}


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "container", help="build the payload image and run payload commands in it"
    )
    commands = parser.add_subparsers(dest="container_command", metavar="ACTION", required=True)
    _register_build(commands)
    _register_status(commands)
    _register_run(commands)


def _add_runtime(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runtime",
        choices=SETTINGS,
        default=os.environ.get(RUNTIME_ENV, "auto"),
        help=f"where the payload runs (default: ${RUNTIME_ENV} or auto: apptainer, podman, none)",
    )


def _register_build(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("build", help="build the image if its inputs changed")
    parser.add_argument(
        "--base",
        help="a base image to pull instead of the mmdebstrap Debian base (needs a registry)",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if nothing changed")
    parser.add_argument(
        "--oci-archive", action="store_true", help="also write build/container/payload.oci.tar"
    )
    parser.add_argument("--sif", action="store_true", help="also build the Apptainer SIF")
    parser.set_defaults(func=_build)


def _build(args: argparse.Namespace) -> int:
    project = find_project()
    record = image.build(project, base=args.base, force=args.force)
    if args.oci_archive:
        export.save_oci_archive(project, record)
    if args.sif:
        record = export.build_sif(project, record, force=args.force)
    print(json.dumps(record, indent=2))
    return 0


def _register_status(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("status", help="which runtime would run, and is the image current")
    _add_runtime(parser)
    parser.set_defaults(func=_status)


def _status(args: argparse.Namespace) -> int:
    project = find_project()
    choice = select_runtime(args.runtime)
    record = image.read_record(project)
    current = hashing.current_hash(project, (record or {}).get("base"))
    present = (
        record is not None
        and shutil.which("podman") is not None
        and podman.image_exists(project.store(), record.get("image", ""))
    )
    status = {
        "runtime": choice.runtime.value,
        "runtime_reason": choice.reason,
        "podman": shutil.which("podman"),
        "apptainer": shutil.which("apptainer") or built_apptainer(),
        "image": (record or {}).get("image"),
        "image_digest": (record or {}).get("image_digest"),
        "image_present": present,
        "rebuild_needed": hashing.rebuild_reason(record, current, present),
    }
    print(json.dumps(status, indent=2))
    return 0


def _register_run(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "run",
        help="run a payload command in the container; print its run record with the "
        "runtime, image digest and container start-up cost",
    )
    _add_runtime(parser)
    for flag, what in PATH_OPTIONS.items():
        parser.add_argument(flag, action="append", type=Path, default=[], metavar="PATH", help=what)
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME[=VALUE]",
        help="pass this variable (only named variables reach the payload)",
    )
    parser.add_argument(
        "--startup-runs",
        type=int,
        default=5,
        metavar="N",
        help="start the container N times to measure start-up (0: skip)",
    )
    parser.add_argument("payload", nargs=argparse.REMAINDER, help="-- the payload command")
    parser.set_defaults(func=_run)


def parse_env(items: list[str], environ: Mapping[str, str]) -> dict[str, str]:
    """``NAME=VALUE`` as given, ``NAME`` from the caller's environment (must be set)."""
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            if name not in environ:
                raise InstoreError(f"--env {name}: not set here", f"pass --env {name}=VALUE")
            value = environ[name]
        env[name] = value
    return env


def access_from(args: argparse.Namespace, environ: Mapping[str, str]) -> Access:
    """The binds, named variables and FUSE access the run options ask for."""
    binds = [
        *(Bind(p.resolve()) for p in args.bind),
        *(Bind(p.resolve(), writable=True) for p in args.bind_rw),
        *(Bind(p.resolve(), propagate=True) for p in args.fuse_dir),
    ]
    return Access(tuple(binds), parse_env(args.env, environ), fuse=bool(args.fuse_dir))


def _run(args: argparse.Namespace) -> int:
    payload = args.payload[1:] if args.payload[:1] == ["--"] else args.payload
    if not payload:
        raise InstoreError(
            "no payload command given", "put it after `--`, e.g. -- instore --version"
        )
    choice = select_runtime(args.runtime)
    print(f"instore container: {choice.reason}", file=sys.stderr)
    target = image.target_for(choice.runtime)
    access = access_from(args, os.environ)
    startup = None
    if args.startup_runs > 0:
        startup = measure_startup(target, access, runs=args.startup_runs).median_s
    record = run_payload(target, payload, access, startup_s=startup)
    print(json.dumps(record))
    return 0 if record["exit_status"] == 0 else 1


__all__ = ["register"]

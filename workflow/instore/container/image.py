"""Build the payload image: mmdebstrap base -> ``podman import`` -> ``podman build``.

No image registry is reachable on the study machines, so the base is a Debian root file system
from the apt mirror. The image lives in the project's own podman storage (not the host's), is
rebuilt only when the content hash of what goes into it (recipe, lock, package sources, the
packaging part of pyproject.toml, base; see ``hashing``) changes, not on a README, notebook or
test edit, and its digest is recorded in ``build/container/payload.json`` for every run record
to carry. The record is written and read here, and ``target_for`` turns it into the image a
runtime runs. This module is the build itself and what it leaves behind; the checkout's paths
are in ``project``, the hashed inputs in ``hashing``, podman calls in ``podman`` and the
OCI/SIF export in ``export``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from instore.container.hashing import (
    BASE_SUITE,
    MMDEBSTRAP_OPTIONS,
    base_spec,
    content_hash,
    context,
    current_hash,
    rebuild_reason,
)
from instore.container.podman import (
    _podman_version,
    image_exists,
    inspect,
    logged,
    require_podman,
)
from instore.container.project import Project, find_project
from instore.container.runtime import PodmanStore, Runtime, Target, ulimit_args
from instore.errors import InstoreError

log = logging.getLogger(__name__)

IMAGE_NAME = "localhost/instore-payload"
HOST_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
SYSTEM_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")  # Debian's (ca-certificates)
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CA_IN_BUILD = "/run/instore-host-ca.crt"
# Where the build mounts the host's uv cache (the Containerfile's uv is pointed at it): a path
# of its own, which no step of the recipe removes (a step's `rm -rf /root/.cache` emptied it
# once, mounted there).
UV_CACHE_IN_BUILD = "/run/instore-uv-cache"


def read_record(project: Project) -> dict | None:
    try:
        return json.loads(project.record_path.read_text())
    except FileNotFoundError:
        return None
    except json.JSONDecodeError as err:
        raise InstoreError(
            f"{project.record_path} is not valid JSON ({err.msg})",
            "delete it and run: instore container build",
        ) from err


def base_tag(spec: str) -> str:
    return f"localhost/instore-base:{BASE_SUITE}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"


def build_base(project: Project, store: PodmanStore, spec: str) -> str:
    """Make the Debian base with mmdebstrap and import it, unless the store already has it."""
    tag = base_tag(spec)
    if image_exists(store, tag):
        return tag
    if shutil.which("mmdebstrap") is None:
        raise InstoreError("mmdebstrap is not installed", "run `make system` as root")
    tarball = project.build_dir / "base.tar"
    argv = ["mmdebstrap", *MMDEBSTRAP_OPTIONS, BASE_SUITE, str(tarball), *_mirror()]
    log.info("building the Debian base: %s", " ".join(argv))
    logged("mmdebstrap", argv, project.log_path, "check that the apt mirror is reachable")
    try:
        logged(
            "podman import",
            [*store.argv(), "import", str(tarball), tag],
            project.log_path,
            "check free disk space under build/",
            env=store.env(),
        )
    finally:
        tarball.unlink(missing_ok=True)
    return tag


def _mirror() -> list[str]:
    """The host's apt sources (the mirror it can reach), else Debian's default mirror."""
    return [str(HOST_SOURCES)] if HOST_SOURCES.is_file() else [DEFAULT_MIRROR]


def host_ca_bundle() -> Path | None:
    """The CA bundle the host trusts for HTTPS (an intercepting proxy's CA may be in it): the
    one its environment names, else the system's (a login shell of another user, as `runuser
    -l` gives, names none, and pip in the build then trusted no proxy the host trusts)."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return SYSTEM_CA_BUNDLE if SYSTEM_CA_BUNDLE.is_file() else None


def stage_context(files: Mapping[str, bytes], dest: Path) -> None:
    """Write exactly the hashed files into a fresh context dir, so nothing else reaches the build."""
    shutil.rmtree(dest, ignore_errors=True)
    for name, data in files.items():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def build_args(project: Project, base_ref: str, tag: str, pull: bool) -> list[str]:
    """The ``podman build`` arguments: host network, host limits, the CA bundle mounted read-only."""
    args = [
        "build",
        "--network=host",
        f"--pull={'missing' if pull else 'never'}",
        *ulimit_args(),
        "--build-arg",
        f"BASE={base_ref}",
        "--file",
        str(project.build_dir / "context" / "containers" / "Containerfile"),
        "--tag",
        tag,
    ]
    ca = host_ca_bundle()
    if ca is not None:
        args += ["--volume", f"{ca}:{CA_IN_BUILD}:ro", "--build-arg", f"PIP_CERT={CA_IN_BUILD}"]
    cache = host_uv_cache()
    if cache is not None:
        args += ["--volume", f"{cache}:{UV_CACHE_IN_BUILD}"]
    return [*args, str(project.build_dir / "context")]


def host_uv_cache() -> Path | None:
    """The uv cache `make venv` filled on the host (uv's own lookup: ``UV_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/uv``, else ``~/.cache/uv``), if there is one: mounted into the build, the
    lock's wheels are not downloaded a second time (about a minute of a fresh build here)."""
    named = os.environ.get("UV_CACHE_DIR")
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache = Path(named) if named else (Path(xdg) if xdg else Path.home() / ".cache") / "uv"
    return cache if cache.is_dir() else None


def build(project: Project, *, base: str | None = None, force: bool = False) -> dict:
    """Build the payload image if its inputs changed (or ``force``); return the build record."""
    require_podman()
    project.build_dir.mkdir(parents=True, exist_ok=True)
    store = project.store()
    spec = base_spec(base)
    files = context(project)
    current = content_hash(files, spec)
    record = read_record(project)
    present = record is not None and image_exists(store, record.get("image", ""))
    reason = "forced" if force else rebuild_reason(record, current, present)
    if reason is None:
        log.info("payload image %s is current", record["image"])
        return record
    log.info("building the payload image: %s", reason)
    return _build(project, store, files, current, spec, base, record)


def _build(
    project: Project,
    store: PodmanStore,
    files: Mapping[str, bytes],
    current: str,
    spec: str,
    base: str | None,
    previous: dict | None,
) -> dict:
    started = time.monotonic()
    project.log_path.write_text("")
    base_ref = base or build_base(project, store, spec)
    stage_context(files, project.build_dir / "context")
    tag = f"{IMAGE_NAME}:{current[:12]}"
    logged(
        "podman build",
        [*store.argv(), *build_args(project, base_ref, tag, pull=bool(base))],
        project.log_path,
        "fix the recipe or the lock, then rerun",
        env=store.env(),
    )
    record = {
        "image": tag,
        **inspect(store, tag),
        "content_hash": current,
        "base": spec,
        "build_s": round(time.monotonic() - started, 1),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "podman": _podman_version(store),
    }
    _write_record(project, record)
    _drop_previous(store, previous, tag)
    return record


def _write_record(project: Project, record: dict) -> None:
    tmp = project.record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    tmp.replace(project.record_path)


def _drop_previous(store: PodmanStore, previous: dict | None, current_tag: str) -> None:
    """Untag the image this build replaces, so the store does not grow with every change."""
    old = (previous or {}).get("image")
    if old and old != current_tag and image_exists(store, old):
        argv = [*store.argv(), "rmi", old]
        subprocess.run(argv, env=store.env(), capture_output=True, check=False)


def target_for(runtime: Runtime, project: Project | None = None) -> Target:
    """The image a runtime runs, with its recorded digest; refuses a missing or stale image."""
    if runtime is Runtime.NONE:
        return Target(Runtime.NONE)
    project = project or find_project()
    record = read_record(project)
    if record is None:
        raise InstoreError("no payload image has been built", "run: instore container build")
    current = current_hash(project, record.get("base"))
    if record.get("content_hash") != current:
        raise InstoreError(
            "the payload image is older than the recipe, lock or package sources",
            "rebuild it: instore container build",
        )
    if runtime is Runtime.APPTAINER:
        return _apptainer_target(record)
    return Target(Runtime.PODMAN, record["image"], record["image_digest"], project.store())


def _apptainer_target(record: dict) -> Target:
    sif = record.get("sif")
    if (
        not sif
        or record.get("sif_content_hash") != record["content_hash"]
        or not Path(sif).is_file()
    ):
        raise InstoreError(
            "no SIF matches the current payload image", "build it: instore container build --sif"
        )
    return Target(Runtime.APPTAINER, sif, record["image_digest"])

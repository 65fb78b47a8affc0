"""Build the payload image: mmdebstrap base -> ``podman import`` -> ``podman build``.

No image registry is reachable on the study machines, so the base is a Debian root file system
from the apt mirror. The image lives in the project's own podman storage (not the host's), is
rebuilt only when the content hash of what goes into it (recipe, lock, package sources, the
packaging part of pyproject.toml, base) changes, not on a README, notebook or test edit,
and its digest is recorded in ``build/container/payload.json`` for every run record to carry.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import instore
from instore.container.runtime import PodmanStore, Runtime, Target, last_line, ulimit_args
from instore.errors import InstoreError

log = logging.getLogger(__name__)

IMAGE_NAME = "localhost/instore-payload"
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "python3-venv", "ca-certificates")
# Keep the base lean: no recommends, no docs, man pages or translations.
MMDEBSTRAP_OPTIONS = (
    "--variant=apt",
    f"--include={','.join(BASE_PACKAGES)}",
    '--aptopt=APT::Install-Recommends "false"',
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
)
HOST_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CA_IN_BUILD = "/run/instore-host-ca.crt"
# Files of the package tree that are build by-products, not sources.
IGNORED_PARTS = ("__pycache__", ".egg-info", ".pytest_cache")
# The pyproject.toml tables ``pip install`` reads; the rest configures tests and linters.
PACKAGING_TABLES = ("build-system", "project", "tool.setuptools")
_TABLE_HEADER = re.compile(r"^\[{1,2}\s*([A-Za-z0-9_.-]+)\s*\]{1,2}\s*(#.*)?$")
# The package metadata names README.md; the image gets this instead of the real one, so
# editing the README does not rebuild the image (and rerun every sweep and report).
README_STAND_IN = b"instore payload image: the README is in the instore repository.\n"


PODMAN_RUNROOT_MAX = 50  # "the specified runroot is longer than 50 characters"


@dataclass(frozen=True)
class Project:
    """Where the recipe, the lock and the build outputs of one checkout live."""

    root: Path

    @property
    def build_dir(self) -> Path:
        return self.root / "build" / "container"

    @property
    def containerfile(self) -> Path:
        return self.root / "containers" / "Containerfile"

    @property
    def definition(self) -> Path:
        return self.root / "containers" / "payload.def"

    @property
    def containers_conf(self) -> Path:
        return self.root / "containers" / "containers.conf"

    @property
    def record_path(self) -> Path:
        return self.build_dir / "payload.json"

    @property
    def oci_archive(self) -> Path:
        return self.build_dir / "payload.oci.tar"

    @property
    def sif(self) -> Path:
        return self.build_dir / "payload.sif"

    @property
    def log_path(self) -> Path:
        return self.build_dir / "build.log"

    def store(self) -> PodmanStore:
        """The project's podman storage; run state goes to a tmpfs-like dir keyed by it."""
        root = self.build_dir / "storage"
        key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
        run = Path(os.environ.get("XDG_RUNTIME_DIR") or "/run") / "instore-podman" / key
        if len(str(run / "storage")) > PODMAN_RUNROOT_MAX:  # podman refuses a longer runroot
            run = Path("/run") / "instore-podman" / key
        return PodmanStore(root, run / "storage", run / "libpod", self.containers_conf)


def find_project(start: Path | None = None) -> Project:
    """The checkout holding containers/Containerfile: INSTORE_PROJECT_DIR, the package's, or cwd."""
    candidates = [
        Path(os.environ["INSTORE_PROJECT_DIR"]) if "INSTORE_PROJECT_DIR" in os.environ else None,
        start,
        Path(instore.__file__).resolve().parents[2],
        Path.cwd(),
    ]
    for candidate in candidates:
        if candidate is not None and (candidate / "containers" / "Containerfile").is_file():
            return Project(candidate.resolve())
    raise InstoreError(
        "cannot find the instore checkout (containers/Containerfile)",
        "run from the repository root or set INSTORE_PROJECT_DIR",
    )


def context_files(project: Project) -> dict[str, Path]:
    """The files the Containerfile copies as they are (recipe, lock, package sources), by
    their path in the build context: an edit to any of them can change the image."""
    files = {
        "containers/Containerfile": project.containerfile,
        "envs/requirements.lock": project.root / "envs" / "requirements.lock",
    }
    package = project.root / "workflow" / "instore"
    for path in sorted(_package_sources(package)):
        files[path.relative_to(project.root).as_posix()] = path
    return files


def _package_sources(package: Path) -> Iterator[Path]:
    for path in package.rglob("*"):
        ignored = any(part.endswith(IGNORED_PARTS) for part in path.parts)
        if path.is_file() and not ignored and path.suffix != ".pyc":
            yield path


def packaging_metadata(pyproject: Path) -> bytes:
    """pyproject.toml without the tables pip never reads (pytest, ruff settings), so a change
    to how the project is tested or linted leaves the image as it is."""
    kept, keep = [], True
    for line in pyproject.read_text().splitlines(keepends=True):
        header = _TABLE_HEADER.match(line)
        if header:
            keep = header.group(1).startswith(PACKAGING_TABLES)
        if keep:
            kept.append(line)
    return "".join(kept).encode()


def context(project: Project) -> dict[str, bytes]:
    """Everything the build context holds, by path: the copied files, the packaging part of
    pyproject.toml and a fixed stand-in for the README the package metadata names."""
    out = {name: path.read_bytes() for name, path in context_files(project).items()}
    out["pyproject.toml"] = packaging_metadata(project.root / "pyproject.toml")
    out["README.md"] = README_STAND_IN
    return out


def content_hash(files: Mapping[str, bytes], base: str) -> str:
    """sha256 over the base and each file's name and bytes: equal hash, equal image inputs."""
    digest = hashlib.sha256(f"base\0{base}\0".encode())
    for name in sorted(files):
        data = files[name]
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def current_hash(project: Project, base: str | None = None) -> str:
    """The content hash of the image this checkout would build on ``base``."""
    return content_hash(context(project), base or base_spec(None))


def rebuild_reason(record: dict | None, current_hash: str, image_present: bool) -> str | None:
    """Why the image must be (re)built, or None when the recorded image is current."""
    if record is None:
        return "no image has been built"
    if record.get("content_hash") != current_hash:
        return "recipe, lock or package sources changed"
    if not image_present:
        return f"image {record.get('image')} is missing from the project's podman storage"
    return None


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


def base_spec(base: str | None) -> str:
    """What the base is: a named image, or the mmdebstrap recipe (part of the content hash)."""
    if base:
        return base
    return " ".join(["mmdebstrap", BASE_SUITE, *MMDEBSTRAP_OPTIONS])


def base_tag(spec: str) -> str:
    return f"localhost/instore-base:{BASE_SUITE}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"


def logged(what: str, argv: Sequence[str], log_path: Path, fix: str, **kwargs) -> None:
    """Run a long build step with its output appended to the build log; on failure raise
    naming the step and the log's last line (the error a person would look for first)."""
    with log_path.open("a") as sink:
        sink.write(f"$ {' '.join(argv)}\n")
        sink.flush()
        proc = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False, **kwargs)
    if proc.returncode != 0:
        tail = last_line(log_path.read_text())
        raise InstoreError(f"{what} failed: {tail}", f"see {log_path}; {fix}")


def podman(store: PodmanStore, args: Sequence[str]) -> str:
    """Run a short podman query on the project store; return stdout or raise with its error."""
    argv = [*store.argv(), *args]
    proc = subprocess.run(argv, env=store.env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise InstoreError(
            f"podman {args[0]} failed: {last_line(proc.stderr)}",
            "check the podman installation (make system) and `instore container status`",
        )
    return proc.stdout


def require_podman() -> None:
    if shutil.which("podman") is None:
        raise InstoreError(
            "podman is not installed", "run `make system` as root, or use --runtime none"
        )


def image_exists(store: PodmanStore, ref: str) -> bool:
    argv = [*store.argv(), "image", "exists", ref]
    return subprocess.run(argv, env=store.env(), capture_output=True, check=False).returncode == 0


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
    """The CA bundle the host trusts for HTTPS (an intercepting proxy's CA may be in it)."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        value = os.environ.get(name)
        if value and Path(value).is_file():
            return Path(value)
    return None


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
    return [*args, str(project.build_dir / "context")]


def inspect(store: PodmanStore, ref: str) -> dict:
    """The image's ID (its config digest: the same after save/load) and size."""
    out = podman(store, ["image", "inspect", "--format", "{{json .}}", ref])
    data = json.loads(out)
    data = data[0] if isinstance(data, list) else data
    image_id = data["Id"]
    return {
        "image_digest": image_id if image_id.startswith("sha256:") else f"sha256:{image_id}",
        "size_bytes": int(data.get("Size", 0)),
    }


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


def _podman_version(store: PodmanStore) -> str:
    return podman(store, ["version", "--format", "{{.Client.Version}}"]).strip()


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


def save_oci_archive(project: Project, record: dict) -> Path:
    """Write the image as an OCI archive, the input Apptainer builds the SIF from."""
    archive = project.oci_archive
    archive.unlink(missing_ok=True)
    store = project.store()
    argv = ["save", "--format", "oci-archive", "--output", str(archive), record["image"]]
    logged(
        "podman save",
        [*store.argv(), *argv],
        project.log_path,
        "check free disk space",
        env=store.env(),
    )
    return archive


def build_sif(project: Project, record: dict) -> dict:
    """Build the SIF from containers/payload.def (which reads the OCI archive)."""
    if shutil.which("apptainer") is None:
        raise InstoreError(
            "apptainer is not installed",
            "build the SIF on a host that has it (containers/README.md)",
        )
    save_oci_archive(project, record)
    argv = ["apptainer", "build", "--force", str(project.sif), str(project.definition)]
    logged(
        "apptainer build", argv, project.log_path, "check containers/payload.def", cwd=project.root
    )
    record = {**record, "sif": str(project.sif), "sif_content_hash": record["content_hash"]}
    _write_record(project, record)
    return record


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

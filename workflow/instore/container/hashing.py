"""What goes into the payload image, and the content hash that decides when to rebuild it.

Its own module because the hash is read far more often than the image is built (every
``instore container status``, every Snakemake parse, every run target check) and must not
pull in the build: it needs only the checkout's files and the base recipe, which is why the
mmdebstrap recipe and ``base_spec`` live here too (the recipe is one of the hashed inputs).
Only the recipe, the lock, the package sources and the packaging part of pyproject.toml
count; a README, notebook, test or linter-setting edit leaves the hash as it is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from instore.container.project import Project

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
# Files of the package tree that are build by-products, not sources.
IGNORED_PARTS = ("__pycache__", ".egg-info", ".pytest_cache")
# The pyproject.toml tables ``pip install`` reads; the rest configures tests and linters.
PACKAGING_TABLES = ("build-system", "project", "tool.setuptools")
_TABLE_HEADER = re.compile(r"^\[{1,2}\s*([A-Za-z0-9_.-]+)\s*\]{1,2}\s*(#.*)?$")
# The package metadata names README.md; the image gets this instead of the real one, so
# editing the README does not rebuild the image (and rerun every sweep and report).
README_STAND_IN = b"instore payload image: the README is in the instore repository.\n"


def context_files(project: Project) -> dict[str, Path]:
    """The files the Containerfile copies as they are (recipe, lock, package sources), by
    their path in the build context: an edit to any of them can change the image."""
    files = {
        "containers/Containerfile": project.containerfile,
        "envs/requirements-bootstrap.lock": project.root / "envs" / "requirements-bootstrap.lock",
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


def base_spec(base: str | None) -> str:
    """What the base is: a named image, or the mmdebstrap recipe (part of the content hash)."""
    if base:
        return base
    return " ".join(["mmdebstrap", BASE_SUITE, *MMDEBSTRAP_OPTIONS])


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

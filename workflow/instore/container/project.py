"""Where one checkout keeps the image's recipe, lock and build outputs.

Its own module because every other part of the container package (hashing, building,
exporting, picking a run target) starts from these paths and none of them should have to
import the build to get them; the podman store paths are derived here too, since they hang
off the checkout's build directory.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import instore
from instore.container.runtime import PodmanStore
from instore.errors import InstoreError

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
        xdg = os.environ.get("XDG_RUNTIME_DIR")
        run = Path(xdg) / "instore-podman" / key if xdg else None
        if run is None or len(str(run / "storage")) > PODMAN_RUNROOT_MAX:  # podman's limit
            run = _own_run_dir() / key
        return PodmanStore(root, run / "storage", run / "libpod", self.containers_conf)


def _own_run_dir() -> Path:
    """Where podman's run state goes without a usable XDG_RUNTIME_DIR: /run for root; for
    another user (a batch job, `runuser`, `su` have no login session) a directory of their own
    under the temporary directory, since /run is root's."""
    if os.geteuid() == 0:
        return Path("/run") / "instore-podman"
    return Path(tempfile.gettempdir()) / f"instore-podman-{os.getuid()}"


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

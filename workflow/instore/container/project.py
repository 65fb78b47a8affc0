"""Where one checkout keeps the image's recipe, lock and build outputs.

Its own module because every other part of the container package (hashing, building,
exporting, picking a run target) starts from these paths and none of them should have to
import the build to get them; the podman store paths are derived here too, since they hang
off the checkout's build directory.
"""

from __future__ import annotations

import hashlib
import os
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

    @property
    def runroot_record(self) -> Path:
        return self.build_dir / "storage.runroot"

    def store(self) -> PodmanStore:
        """The project's podman storage, with its run state where it was first put.

        podman writes the run directory into the store and refuses the store under another
        ("database configuration mismatch"): a login shell (XDG_RUNTIME_DIR set) and a batch
        job, `su` or `runuser` (unset) would choose differently. So it is chosen once, in a
        directory every session of this user can make, and kept beside the store."""
        root = self.build_dir / "storage"
        try:
            run = Path(self.runroot_record.read_text().strip())
        except FileNotFoundError:
            run = _first_run_dir(root)
            try:
                self.runroot_record.parent.mkdir(parents=True, exist_ok=True)
                self.runroot_record.write_text(f"{run}\n")
            except OSError:  # a checkout this user may not write: nothing is built here either
                pass
        return PodmanStore(root, run / "storage", run / "libpod", self.containers_conf)


def _first_run_dir(root: Path) -> Path:
    """The run directory a store gets: its own user's, keyed by the store; a store made
    before the choice was kept keeps the rule it was made with (the session's
    XDG_RUNTIME_DIR where set and short enough)."""
    key = hashlib.sha256(str(root).encode()).hexdigest()[:12]
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if (
        root.exists()
        and xdg
        and len(str(Path(xdg) / "instore-podman" / key / "storage")) <= PODMAN_RUNROOT_MAX
    ):
        return Path(xdg) / "instore-podman" / key
    return _own_run_dir() / key


def _own_run_dir() -> Path:
    """Where podman's run state goes: /run for root; for another user, whose sessions may
    have no /run/user directory (a batch job, `runuser`, `su`), a directory of their own
    under /tmp, named by their uid (not $TMPDIR, which a batch system sets per job)."""
    if os.geteuid() == 0:
        return Path("/run") / "instore-podman"
    return Path("/tmp") / f"instore-podman-{os.getuid()}"


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

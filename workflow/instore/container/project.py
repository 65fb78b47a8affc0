"""Where one checkout keeps the image's recipe, lock and build outputs.

Its own module because every other part of the container package (hashing, building,
exporting, picking a run target) starts from these paths and none of them should have to
import the build to get them; the podman store paths are derived here too, since they hang
off the checkout's build directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import instore
from instore.container.runtime import PodmanStore
from instore.errors import InstoreError

PODMAN_RUNROOT_MAX = 50  # "the specified runroot is longer than 50 characters"
# podman 4.3 gives a user who is not root its vfs driver, which copies the 2.3 GB image for
# every container: 54-64 s to start one here (2026-11-28), where the kernel's own rootless
# overlay, asked for, works. Root's stores keep podman's own choice (overlay).
ROOTLESS_DRIVER = "overlay"


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

    @property
    def driver_record(self) -> Path:
        return self.build_dir / "storage.driver"

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
        store = PodmanStore(root, run / "storage", run / "libpod", self.containers_conf)
        return replace(store, driver=self._driver(store))

    def _driver(self, store: PodmanStore) -> str:
        """The store's storage driver ("": podman's own choice), chosen once and kept beside
        it, as its run directory is: podman refuses a store under another driver. The record
        describes the store: once the store is removed, the driver is chosen again."""
        if store.root.exists():
            try:
                return self.driver_record.read_text().strip()
            except FileNotFoundError:
                pass
        driver = _first_driver(store)
        try:
            self.driver_record.parent.mkdir(parents=True, exist_ok=True)
            self.driver_record.write_text(f"{driver}\n")
        except OSError:
            pass
        return driver


def _first_driver(store: PodmanStore) -> str:
    """Root: podman's own choice. Another user: the driver a store made before the choice was
    kept has; for a new store, the kernel's rootless overlay where podman can run it here,
    else podman's own choice (vfs: slow to start a container, but it works everywhere)."""
    if os.geteuid() == 0:
        return ""
    for made in ("overlay", "vfs"):
        if (store.root / f"{made}-images").is_dir():
            return made
    return ROOTLESS_DRIVER if _podman_runs(ROOTLESS_DRIVER, store) else ""


def _podman_runs(driver: str, store: PodmanStore) -> bool:
    """Whether podman opens a new store with ``driver`` on this machine (a scratch one)."""
    if shutil.which("podman") is None:
        return False
    with tempfile.TemporaryDirectory(
        prefix="instore-podman-probe-", ignore_cleanup_errors=True
    ) as scratch:
        argv = ["podman", "--root", f"{scratch}/root", "--runroot", f"{scratch}/run",
                "--storage-driver", driver, "info", "--format", "{{.Store.GraphDriverName}}"]  # fmt: skip
        try:
            proc = subprocess.run(argv, env=store.env(), capture_output=True, text=True,
                                  timeout=60, check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return False
    return proc.returncode == 0 and proc.stdout.strip() == driver


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

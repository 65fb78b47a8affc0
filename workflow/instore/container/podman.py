"""Podman plumbing: run a build step into the build log, query the project's podman store.

Its own module so that the build, the export and the status command share one way of
calling podman (and of turning its failure into a one-line error), without any of them
importing the others.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from instore.container.runtime import PodmanStore, last_line
from instore.errors import InstoreError

# A failing line that names its own cause overrides the step's usual fix: a step that
# usually fails for want of disk space must not send a permission error there.
CAUSE_FIXES = (
    (
        "permission denied",
        "a file or directory that line names is not writable by this user: run as its owner, "
        "or remove it so that it is made again",
    ),
    ("no space left on device", "free disk space on the file system that line names"),
    (
        "graph driver",  # before the run directory's mismatch: podman says both the same way
        "the project's podman store was made with another storage driver (podman picks vfs "
        "for a user who is not root; a storage.conf may name overlay): run "
        "`make clean-container` and build again (the driver is then chosen anew)",
    ),
    (
        "database configuration mismatch",
        "the project's podman store was made with another run directory (a run with and one "
        "without a login session's XDG_RUNTIME_DIR): run `make clean-container` and build "
        "again",
    ),
    ("disk quota exceeded", "free space within your quota, or build on another file system"),
)


def fix_for(tail: str, fix: str) -> str:
    """The fix for a failed step: the one its failing line names, else the step's own."""
    lowered = tail.lower()
    return next((named for cause, named in CAUSE_FIXES if cause in lowered), fix)


def logged(what: str, argv: Sequence[str], log_path: Path, fix: str, **kwargs) -> None:
    """Run a long build step with its output appended to the build log; on failure raise
    naming the step and the log's last line (the error a person would look for first)."""
    with log_path.open("a") as sink:
        sink.write(f"$ {' '.join(argv)}\n")
        sink.flush()
        proc = subprocess.run(argv, stdout=sink, stderr=subprocess.STDOUT, check=False, **kwargs)
    if proc.returncode != 0:
        tail = last_line(log_path.read_text())
        raise InstoreError(f"{what} failed: {tail}", f"see {log_path}; {fix_for(tail, fix)}")


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


def _podman_version(store: PodmanStore) -> str:
    return podman(store, ["version", "--format", "{{.Client.Version}}"]).strip()

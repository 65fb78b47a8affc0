"""Export the built payload image: an OCI archive, and from it an Apptainer SIF.

Its own module because exporting is an optional step after the build (``instore container
build --oci-archive | --sif``) with its own tools and failure modes; the SIF it makes is
noted in the build record, which ``target_for`` checks before running in it. The SIF is
converted from the image's OCI archive, and its Python packages are then compared with the
podman image's (``pip freeze`` in each): a SIF whose software differs is refused.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from pathlib import Path

from instore.container.image import _write_record
from instore.container.podman import logged
from instore.container.project import Project
from instore.container.runtime import (
    NO_ACCESS,
    Access,
    Runtime,
    Target,
    apptainer_env,
    last_line,
    launch,
)
from instore.errors import InstoreError

FREEZE = ("/opt/instore/bin/python", "-m", "pip", "freeze", "--all")


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


# The SIF's squashfs is left uncompressed: mksquashfs's gzip was a tenth of a fresh CI run's CPU
# (2026-11-29: about 3 of its 40 CPU-minutes; the build took 398 s beside the tests), jobs then
# read its files with no decompression (as grid jobs read the unpacked images of
# /cvmfs/unpacked.cern.ch), and any kernel or squashfuse mounts it, whatever compressors it has.
UNCOMPRESSED = "-noI -noD -noF -noX"


def sif_is_current(project: Project, record: dict) -> bool:
    """Whether the recorded SIF was built from this image and is still there."""
    return (
        record.get("sif_content_hash") == record["content_hash"]
        and record.get("sif") == str(project.sif)
        and project.sif.is_file()
    )


def build_sif(project: Project, record: dict, *, force: bool = False) -> dict:
    """Build the SIF from containers/payload.def (which reads the OCI archive), check that it
    holds the image's package versions, and note it in the build record; a no-op when the
    recorded SIF is current (unless ``force``)."""
    if not force and sif_is_current(project, record):
        return record
    env = apptainer_env()
    if shutil.which("apptainer", path=env["PATH"]) is None:
        raise InstoreError(
            "apptainer is not installed",
            "build it: make apptainer (envs/build-apptainer.sh), or build the SIF on a host "
            "that has it (containers/README.md)",
        )
    started = time.monotonic()
    save_oci_archive(project, record)
    # --notest: the definition's %test would run as root with every capability (see
    # runtime._apptainer_argv); the package check below runs Python in the SIF instead.
    argv = ["apptainer", "build", "--force", "--notest", "--mksquashfs-args", UNCOMPRESSED,
            str(project.sif), str(project.definition)]  # fmt: skip
    logged(
        "apptainer build",
        argv,
        project.log_path,
        "check containers/payload.def",
        cwd=project.root,
        env=env,
    )
    podman = Target(Runtime.PODMAN, record["image"], record["image_digest"], project.store())
    sif = Target(Runtime.APPTAINER, str(project.sif), record["image_digest"])
    packages = same_packages(podman, sif)
    record = {
        **record,
        "sif": str(project.sif),
        "sif_content_hash": record["content_hash"],
        "sif_packages_sha256": packages,
        "sif_build_s": round(time.monotonic() - started, 1),
    }
    _write_record(project, record)
    return record


def package_list(target: Target, access: Access = NO_ACCESS) -> str:
    """``pip freeze --all`` of the payload's venv in this target's image."""
    command = launch(target, FREEZE, access)
    proc = subprocess.run(
        command.argv, env=command.env, capture_output=True, text=True, check=False, timeout=300
    )
    if proc.returncode != 0:
        raise InstoreError(
            f"pip freeze in the {target.runtime} image failed: {last_line(proc.stderr)}",
            "rebuild the images: instore container build --force --sif",
        )
    return proc.stdout


def same_packages(image: Target, sif: Target) -> str:
    """The hash of the package list both images hold; raises naming the first difference."""
    ours, theirs = package_list(image), package_list(sif)
    if ours != theirs:
        only = sorted(set(theirs.splitlines()) ^ set(ours.splitlines()))
        raise InstoreError(
            f"the SIF's packages differ from the podman image's ({', '.join(only[:3])})",
            "rebuild both from the same image: instore container build --force --sif",
        )
    return hashlib.sha256(ours.encode()).hexdigest()

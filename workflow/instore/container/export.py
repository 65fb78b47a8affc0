"""Export the built payload image: an OCI archive, and from it an Apptainer SIF.

Its own module because exporting is an optional step after the build (``instore container
build --oci-archive | --sif``) with its own tools and failure modes; the SIF it makes is
noted in the build record, which ``target_for`` checks before running in it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from instore.container.image import _write_record
from instore.container.podman import logged
from instore.container.project import Project
from instore.errors import InstoreError


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

"""Apptainer for real: the SIF made from the payload image holds the same packages, a job in it
reads what the same job reads on the host and in podman, a job forked from a warm payload
inside ``apptainer exec`` does too, a user who is not root runs both (unprivileged user
namespaces, as grid jobs do), and a sweep with ``--runtime apptainer`` measures every point.

Apptainer is a site's own on PATH, else built from source by envs/build-apptainer.sh (in the
background from the start of the session: tests/conftest.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pandas as pd
import pytest
from instore.container import export, image, warm
from instore.container.measure import run_payload
from instore.container.project import find_project
from instore.container.runtime import (
    Access,
    Bind,
    Launch,
    Runtime,
    Target,
    built_apptainer,
    launch,
)

from tests.cli import Cli
from tests.conftest import APPTAINER_BUILD_LOG, wait_for_apptainer_build
from tests.integration.conftest import sweep_args

pytestmark = pytest.mark.integration

COUNTS = ("bytes_read", "read_calls", "vector_reads", "events")
NOBODY = ("setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--")


@pytest.fixture(scope="session")
def sif_target(payload_image: dict) -> Target:
    """The SIF of the session's payload image, built (or found current) with this Apptainer."""
    status = wait_for_apptainer_build()
    if status not in (None, 0):
        log = APPTAINER_BUILD_LOG.read_text().strip().splitlines()
        pytest.fail(f"envs/build-apptainer.sh failed: {log[-1] if log else '(no output)'}")
    if shutil.which("apptainer") is None and built_apptainer() is None:
        pytest.skip("no apptainer, and none was built (envs/build-apptainer.sh needs Go)")
    project = find_project()
    export.build_sif(project, image.build(project))
    return image.target_for(Runtime.APPTAINER)


@pytest.fixture(scope="module")
def data() -> Iterator[Path]:
    """An ordered TTree file and an RNTuple in a directory every user may read (pytest's own
    are private to root), for the runs as a user who is not root."""
    out = Path(tempfile.mkdtemp(prefix="instore-apptainer-"))
    out.chmod(0o755)
    argv = [str(Path(sys.executable).parent / "instore"), "generate", "--size-mb", "9"]
    for layout in ("ordered", "rntuple"):
        subprocess.run([*argv, "--layouts", layout, "--replicas", "1", "--seed", "3",
                        "--out", str(out)], check=True, capture_output=True)  # fmt: skip
    for f in out.iterdir():
        f.chmod(0o644)
    yield out
    shutil.rmtree(out, ignore_errors=True)


def read_argv(path: Path, engine: str) -> list[str]:
    return ["instore", "read", str(path), "--engine", engine, "--cache-mb", "10"]


def test_the_sif_holds_the_podman_images_package_versions(payload_image, sif_target):
    project = find_project()
    record = image.read_record(project)
    assert record["sif_content_hash"] == payload_image["content_hash"]
    podman = image.target_for(Runtime.PODMAN)
    listed = export.package_list(sif_target)
    assert "uproot==" in listed and listed == export.package_list(podman)
    assert sif_target.image_digest == payload_image["image_digest"]


@pytest.mark.parametrize("engine", ["root", "uproot"])
def test_a_job_in_apptainer_counts_what_it_counts_on_the_host_and_in_podman(
    sif_target, data, engine
):
    access = Access((Bind(data),))
    path = data / ("rntuple-r0.root" if engine == "uproot" else "ordered-r0.root")
    runs = {
        "none": run_payload(Target(Runtime.NONE), read_argv(path, engine)),
        "podman": run_payload(image.target_for(Runtime.PODMAN), read_argv(path, engine), access),
        "apptainer": run_payload(sif_target, read_argv(path, engine), access),
    }
    for where, record in runs.items():
        assert record["error"] is None, (where, record["error"])
        assert record["runtime"] == where
    assert runs["none"]["events"] > 0
    for key in COUNTS:
        assert runs["apptainer"][key] == runs["none"][key] == runs["podman"][key], key
    assert runs["apptainer"]["provenance"]["versions"] == runs["podman"]["provenance"]["versions"]
    assert runs["apptainer"]["image_digest"] == runs["podman"]["image_digest"]


def test_a_job_forked_from_a_warm_payload_in_apptainer_counts_what_a_cold_one_does(
    sif_target, data
):
    access = Access((Bind(data),))
    argv = read_argv(data / "ordered-r0.root", "root")
    cold = run_payload(sif_target, argv, access)
    payload = warm.WarmPayload.start(sif_target, access, "root", formats=["ttree"])
    try:
        forked = [payload.run(argv, {}, timeout=120) for _ in range(3)]
    finally:
        payload.close()
    assert cold["error"] is None, cold["error"]
    for record, container in forked:
        assert record.get("error") is None, record.get("error")
        assert (container.runtime, container.launch) == ("apptainer", "fork")
        assert container.image_digest == sif_target.image_digest
        assert 0 < container.launch_s < 2.0
        for key in COUNTS:
            assert record[key] == cold[key], key


def as_nobody(target: Target, argv: list[str], data: Path) -> Launch:
    """The launch of ``argv`` in the SIF for the user nobody (the host venv is root's: the
    payload runs from the SIF alone)."""
    command = launch(target, argv, Access((Bind(data),)))
    return Launch(command.runtime, [*NOBODY, *command.argv], command.env)


def next_message(stream: IO[str]) -> dict:
    """The next JSON line the warm payload writes (other lines are not its protocol's)."""
    for line in stream:
        with contextlib.suppress(ValueError):
            return json.loads(line)
    return {}


def warm_job_as_nobody(target: Target, argv: list[str], data: Path) -> dict:
    """One job through a warm payload that nobody runs in ``apptainer exec``, spoken to as
    ``warm.WarmPayload`` does: the ready line, one request, its reply."""
    command = as_nobody(target, [*warm.WARM_ARGV, "root", "--formats", "ttree"], data)
    proc = subprocess.Popen(command.argv, env=command.env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd="/tmp")  # fmt: skip
    try:
        assert proc.stdin is not None and proc.stdout is not None
        ready = next_message(proc.stdout)
        assert ready.get("ready"), proc.stderr.read() if proc.stderr else ""
        request = {"id": "1", "argv": argv, "env": {}, "timeout": 120, "engine": "root"}
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        reply = next_message(proc.stdout)
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        proc.wait(60)
    return {"ready": ready, "reply": reply}


def test_a_user_who_is_not_root_runs_jobs_cold_and_warm_forked(sif_target, data):
    """As grid jobs run: an unprivileged user, Apptainer built without setuid (user
    namespaces), the SIF mounted with squashfuse."""
    if os.geteuid() != 0:
        pytest.skip("switching to an unprivileged user needs root (the suite runs as root)")
    argv = read_argv(data / "ordered-r0.root", "root")
    as_root = run_payload(sif_target, argv, Access((Bind(data),)))
    assert as_root["error"] is None, as_root["error"]
    command = as_nobody(sif_target, ["sh", "-c", "id -u; exec " + " ".join(argv)], data)
    cold = subprocess.run(command.argv, env=command.env, capture_output=True, text=True,
                          timeout=300, cwd="/tmp")  # fmt: skip
    assert cold.returncode == 0, cold.stderr[-2000:]
    uid, *_, last = cold.stdout.strip().splitlines()
    assert uid == "65534"
    forked = warm_job_as_nobody(sif_target, argv, data)
    assert forked["reply"]["exit_status"] == 0, forked["reply"].get("stderr", "")[-2000:]
    record = json.loads(forked["reply"]["stdout"].strip().splitlines()[-1])
    for key in COUNTS:
        assert json.loads(last)[key] == record[key] == as_root[key], key


def test_a_sweep_with_runtime_apptainer_measures_every_point_in_the_sif(
    sif_target, study_env: dict[str, Path], cli: Cli, tmp_path: Path
):
    tables = {}
    for runtime in ("apptainer", "none"):
        results = tmp_path / f"results-{runtime}"
        proc = cli(*sweep_args(study_env, results, "--runtime", runtime, "--sections", "layout"),
                   timeout=900)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        tables[runtime] = pd.read_parquet(results / "local" / "layout.parquet")
    table = tables["apptainer"]
    assert len(table) == 4 and set(table["status"]) == {"ok"}, table["error"].tolist()
    assert set(table["runtime"]) == {"apptainer"}
    assert set(table["launch"]) == {"fork"}
    assert set(table["image_digest"]) == {sif_target.image_digest}
    keys = ["point_key", "job"]
    both = table.merge(tables["none"], on=keys, suffixes=("", "_host"))
    assert len(both) == 4
    for key in COUNTS:
        assert (both[key] == both[f"{key}_host"]).all(), key

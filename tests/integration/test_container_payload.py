"""The payload image for real: build it (once per session), run in it, read a ROOT file in it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from instore.container import image, podman
from instore.container.measure import run_payload
from instore.container.project import find_project
from instore.container.runtime import NO_ACCESS, Access, Bind, Runtime, Target, launch

pytestmark = pytest.mark.integration

INSTORE = str(Path(sys.executable).parent / "instore")


@pytest.fixture(scope="session")
def podman_target(payload_image: dict) -> Target:
    return image.target_for(Runtime.PODMAN)


@pytest.fixture(scope="session")
def ordered_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("container-data")
    argv = [INSTORE, "generate", "--layouts", "ordered", "--size-mb", "20", "--replicas", "1"]
    subprocess.run([*argv, "--seed", "1", "--out", str(out)], check=True, capture_output=True)
    return out / "ordered-r0.root"


def run(target: Target, argv: list[str], access: Access = NO_ACCESS) -> subprocess.CompletedProcess:
    command = launch(target, argv, access)
    return subprocess.run(
        command.argv, env=command.env, capture_output=True, text=True, timeout=300
    )


def read_argv(path: Path, engine: str) -> list[str]:
    return ["instore", "read", str(path), "--engine", engine, "--cache-mb", "10"]


def _image_keys(record: dict) -> dict:
    return {k: v for k, v in record.items() if not k.startswith("sif")}


def test_build_records_the_digest_and_is_not_repeated(payload_image, podman_target):
    assert payload_image["image_digest"].startswith("sha256:")
    assert podman_target.image_digest == payload_image["image_digest"]
    started = time.monotonic()
    again = image.build(find_project())
    # the image's record; a SIF made from it (test_apptainer.py) adds its own sif_* keys
    assert _image_keys(again) == _image_keys(payload_image)
    assert time.monotonic() - started < 30
    inspected = podman.inspect(podman_target.store, payload_image["image"])
    assert inspected["image_digest"] == payload_image["image_digest"]


def test_root_fs_is_read_only_and_binds_are_as_asked(podman_target, tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    binds = Access((Bind(data), Bind(out, writable=True)))
    assert run(podman_target, ["touch", "/opt/instore/x"], binds).returncode != 0
    assert run(podman_target, ["touch", str(data / "x")], binds).returncode != 0
    assert run(podman_target, ["touch", str(out / "x")], binds).returncode == 0
    assert (out / "x").exists()


def test_only_named_variables_reach_the_container(podman_target, monkeypatch):
    monkeypatch.setenv("INSTORE_SECRET", "not-for-the-payload")
    proc = run(podman_target, ["env"], Access(env={"XRD_REQUESTTIMEOUT": "30"}))
    assert "XRD_REQUESTTIMEOUT=30" in proc.stdout.splitlines()
    assert "INSTORE_SECRET" not in proc.stdout


def test_startup_is_excluded_from_the_jobs_wall_time(payload_image, ordered_file):
    argv = [INSTORE, "container", "run", "--runtime", "podman", "--startup-runs", "3"]
    argv += ["--bind", str(ordered_file.parent), "--", *read_argv(ordered_file, "root")]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)
    assert record["error"] is None
    assert (record["runtime"], record["image_digest"]) == ("podman", payload_image["image_digest"])
    assert 0 < record["container_startup_s"] < 10
    # The payload times its own wall inside its process: container start-up is outside it.
    assert record["outer_wall_s"] - record["wall_s"] >= 0.8 * record["container_startup_s"]


@pytest.mark.parametrize("engine", ["root", "uproot"])
def test_same_read_inside_and_outside_the_container(podman_target, ordered_file, engine):
    host = run_payload(Target(Runtime.NONE), read_argv(ordered_file, engine))
    inside = run_payload(
        podman_target, read_argv(ordered_file, engine), Access((Bind(ordered_file.parent),))
    )
    assert host["error"] is None and inside["error"] is None, (host["error"], inside["error"])
    assert host["events"] > 0
    for key in ("bytes_read", "read_calls", "vector_reads", "events"):
        assert inside[key] == host[key], key
    assert inside["provenance"]["versions"] == host["provenance"]["versions"]
    assert (inside["runtime"], host["runtime"]) == ("podman", "none")


def test_stage_in_with_xrdcp_works_inside_the_image(podman_target, ordered_file, tmp_path):
    """The protocols section's stage-in copies with xrdcp: the image must have it."""
    argv = [*read_argv(ordered_file, "uproot"), "--stage-in", "xrdcp", "--scratch", str(tmp_path)]
    access = Access((Bind(ordered_file.parent), Bind(tmp_path, writable=True)))
    staged = run_payload(podman_target, argv, access)
    direct = run_payload(
        podman_target, read_argv(ordered_file, "uproot"), Access((Bind(ordered_file.parent),))
    )
    assert staged["error"] is None, staged["error"]
    assert staged["stage_in_s"] > 0 and staged["events"] == direct["events"] > 0


def test_worker_addresses_are_named_inside_the_container(podman_target):
    """XRootD's login looks up a name for each of the worker's addresses (IPv4 ones in their
    IPv4-mapped form); inside the container the hosts file must answer, not the VM's DNS (64
    clients at once lost queries there and opened in 15 s)."""
    from instore.container.hosts import own_address_entries

    entries = own_address_entries()
    assert any(address.startswith("::ffff:") for _, address in entries)
    script = (
        "import json, socket, sys\n"
        "out = {}\n"
        "for a in sys.argv[1:]:\n"
        "    out[a] = socket.getnameinfo((a, 0), socket.NI_NAMEREQD)[0]\n"
        "print(json.dumps(out))\n"
    )
    proc = run(podman_target, ["python3", "-c", script, *(a for _, a in entries)])
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {address: name for name, address in entries}

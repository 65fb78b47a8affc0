"""Runtime selection and the command lines built for podman, apptainer and the host venv."""

from __future__ import annotations

import logging
import resource
import sys
from pathlib import Path

import pytest
from instore.container.runtime import (
    PODMAN_NPROC_CEILING,
    Access,
    Bind,
    PodmanStore,
    Runtime,
    Target,
    launch,
    select_runtime,
    ulimit_args,
)
from instore.errors import InstoreError

STORE = PodmanStore(
    Path("/p/storage"), Path("/run/x/storage"), Path("/run/x/libpod"), Path("/p/c.conf")
)
PODMAN = Target(Runtime.PODMAN, "localhost/instore-payload:abc", "sha256:1234", STORE)
APPTAINER = Target(Runtime.APPTAINER, "/p/payload.sif", "sha256:1234")


def which_from(*installed: str):
    return lambda name: f"/usr/bin/{name}" if name in installed else None


@pytest.mark.parametrize(
    ("installed", "expected"),
    [
        (("apptainer", "podman"), Runtime.APPTAINER),
        (("podman",), Runtime.PODMAN),
        (("apptainer",), Runtime.APPTAINER),
        ((), Runtime.NONE),
    ],
)
def test_auto_prefers_apptainer_then_podman_then_none(installed, expected):
    assert select_runtime("auto", which=which_from(*installed)).runtime is expected


def test_auto_logs_its_choice(caplog):
    with caplog.at_level(logging.INFO, logger="instore.container.runtime"):
        choice = select_runtime("auto", which=which_from("podman"))
    assert "auto chose podman" in choice.reason
    assert "auto chose podman" in caplog.text


def test_explicit_runtime_must_be_installed():
    with pytest.raises(InstoreError) as err:
        select_runtime("apptainer", which=which_from("podman"), built=lambda: None)
    assert "apptainer is not installed" in str(err.value)
    assert "\n" not in str(err.value)


def test_none_needs_nothing_installed():
    assert select_runtime("none", which=which_from()).runtime is Runtime.NONE


def test_unknown_setting_names_the_choices():
    with pytest.raises(InstoreError, match="podman, apptainer, none"):
        select_runtime("docker")


def test_podman_command_uses_project_store_host_network_and_read_only():
    cmd = launch(PODMAN, ["instore", "read", "root://h//f.root"])
    assert cmd.argv[:7] == [
        "podman",
        "--root",
        "/p/storage",
        "--runroot",
        "/run/x/storage",
        "--tmpdir",
        "/run/x/libpod",
    ]
    assert cmd.argv[7:9] == ["run", "--rm"]
    for flag in ("--network=host", "--read-only", "--pull=never"):
        assert flag in cmd.argv
    assert cmd.argv[-4:] == ["localhost/instore-payload:abc", "instore", "read", "root://h//f.root"]
    assert cmd.env["CONTAINERS_CONF"] == "/p/c.conf"


def test_podman_binds_are_same_path_and_read_only_unless_writable():
    binds = [
        Bind(Path("/data")),
        Bind(Path("/out"), writable=True),
        Bind(Path("/mnt/fuse"), propagate=True),
    ]
    argv = launch(PODMAN, ["true"], Access(binds)).argv
    volumes = [argv[i + 1] for i, a in enumerate(argv) if a == "--volume"]
    assert volumes == ["/data:/data:ro", "/out:/out:rw", "/mnt/fuse:/mnt/fuse:ro,rslave"]


def test_podman_fuse_adds_the_device_only_when_asked():
    assert "/dev/fuse" not in launch(PODMAN, ["true"]).argv
    argv = launch(PODMAN, ["true"], Access(fuse=True)).argv
    assert argv[argv.index("--device") + 1] == "/dev/fuse"


def test_only_named_variables_reach_the_container(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "do-not-pass")
    cmd = launch(PODMAN, ["true"], Access(env={"XRD_READAHEAD": "0"}))
    envs = [cmd.argv[i + 1] for i, a in enumerate(cmd.argv) if a == "--env"]
    assert envs == ["HOME=/tmp", "XRD_READAHEAD=0"]
    assert "SECRET_TOKEN" not in " ".join(cmd.argv)
    assert "SECRET_TOKEN" not in cmd.env
    cmd = launch(APPTAINER, ["true"], Access(env={"XRD_READAHEAD": "0"}))
    named = {k: v for k, v in cmd.env.items() if k.startswith("APPTAINERENV_")}
    assert named == {"APPTAINERENV_HOME": "/tmp", "APPTAINERENV_XRD_READAHEAD": "0"}
    assert "SECRET_TOKEN" not in " ".join(cmd.argv)
    assert "SECRET_TOKEN" not in cmd.env


def test_apptainer_values_with_commas_reach_the_payload_whole():
    """apptainer's own --env splits NAME=a,b at the comma: values go through APPTAINERENV_."""
    cmd = launch(APPTAINER, ["true"], Access(env={"XRD_PLUGINCONFDIR": "/a,/b"}))
    assert cmd.env["APPTAINERENV_XRD_PLUGINCONFDIR"] == "/a,/b"
    assert "--env" not in cmd.argv


def test_apptainer_asked_by_name_is_found_in_the_checkouts_own_build():
    """`make apptainer` installs into build/apptainer: --runtime apptainer finds it there, while
    auto takes only a site's own apptainer on PATH (this machine's study stays on podman)."""
    built = "/repo/build/apptainer/bin/apptainer"
    choice = select_runtime("apptainer", which=which_from(), built=lambda: built)
    assert choice.runtime is Runtime.APPTAINER
    auto = select_runtime("auto", which=which_from("podman"), built=lambda: built)
    assert auto.runtime is Runtime.PODMAN
    with pytest.raises(InstoreError, match="make apptainer"):
        select_runtime("apptainer", which=which_from(), built=lambda: None)


def test_podman_passes_host_hard_limits():
    argv = launch(PODMAN, ["true"]).argv
    limits = [argv[i + 1] for i, a in enumerate(argv) if a == "--ulimit"]
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    assert limits[0] == f"nofile={nofile}:{nofile}"
    nproc = int(limits[1].split("=")[1].split(":")[0])
    assert 0 < nproc <= PODMAN_NPROC_CEILING
    assert ulimit_args() == ["--ulimit", limits[0], "--ulimit", limits[1]]


def test_apptainer_runs_the_sif_with_a_clean_environment():
    cmd = launch(APPTAINER, ["instore", "--version"], Access((Bind(Path("/data")),)))
    assert cmd.argv[:3] == ["apptainer", "exec", "--cleanenv"]
    assert "--no-home" in cmd.argv
    assert cmd.argv[cmd.argv.index("--bind") + 1] == "/data:/data:ro"
    assert cmd.argv[-3:] == ["/p/payload.sif", "instore", "--version"]


def test_none_runs_this_venvs_instore_with_only_named_env(monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", "do-not-pass")
    cmd = launch(Target(Runtime.NONE), ["instore", "read", "x"], Access(env={"A": "1"}))
    assert cmd.argv == [str(Path(sys.executable).parent / "instore"), "read", "x"]
    assert set(cmd.env) == {"PATH", "HOME", "A"}
    assert cmd.env["PATH"].startswith(str(Path(sys.executable).parent))


def test_missing_image_or_empty_command_is_an_error():
    with pytest.raises(InstoreError, match="instore container build"):
        launch(Target(Runtime.PODMAN), ["true"])
    with pytest.raises(InstoreError, match="empty payload command"):
        launch(PODMAN, [])

"""The content hash and the rebuild decision, on a throw-away copy of a project tree."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from instore.container import hashing, image, podman
from instore.container import project as project_module
from instore.container.project import PODMAN_RUNROOT_MAX, Project
from instore.container.runtime import Runtime
from instore.errors import InstoreError


@pytest.fixture
def project(tmp_path: Path) -> Project:
    files = {
        "containers/Containerfile": "FROM base\n",
        "envs/requirements-bootstrap.lock": "uv==0.13.9\n",
        "envs/requirements.lock": "root==0.1a12\n",
        "pyproject.toml": "[project]\nname='instore'\n\n[tool.ruff]\nline-length = 100\n",
        "README.md": "readme\n",
        "workflow/instore/__init__.py": "",
        "workflow/instore/cpp/payload.cxx": "int main() {}\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return Project(tmp_path)


def current_hash(project: Project) -> str:
    return hashing.current_hash(project)


def write_current_record(project: Project, **extra: str) -> dict:
    """A build record for the project as it is now, as ``instore container build`` writes it."""
    project.build_dir.mkdir(parents=True, exist_ok=True)
    record = {
        "image": "localhost/instore-payload:x",
        "image_digest": "sha256:ab",
        "content_hash": current_hash(project),
        "base": hashing.base_spec(None),
        **extra,
    }
    project.record_path.write_text(json.dumps(record))
    return record


def test_context_holds_recipe_lock_and_package_but_no_byproducts(project):
    root = project.root
    (root / "workflow/instore/__pycache__").mkdir()
    (root / "workflow/instore/__pycache__/x.cpython-311.pyc").write_bytes(b"\0")
    (root / "workflow/instore.egg-info").mkdir()
    (root / "workflow/instore.egg-info/PKG-INFO").write_text("x")
    (root / "notebooks").mkdir()
    (root / "notebooks/a.ipynb").write_text("{}")
    assert sorted(hashing.context(project)) == [
        "README.md",
        "containers/Containerfile",
        "envs/requirements-bootstrap.lock",
        "envs/requirements.lock",
        "pyproject.toml",
        "workflow/instore/__init__.py",
        "workflow/instore/cpp/payload.cxx",
    ]
    assert hashing.context(project)["README.md"] == hashing.README_STAND_IN
    assert b"tool.ruff" not in hashing.context(project)["pyproject.toml"]


@pytest.mark.parametrize(
    "changed",
    [
        "containers/Containerfile",
        "envs/requirements-bootstrap.lock",
        "envs/requirements.lock",
        "workflow/instore/cpp/payload.cxx",
    ],
)
def test_hash_changes_with_recipe_lock_or_package(project, changed):
    before = current_hash(project)
    (project.root / changed).write_text("changed\n")
    assert current_hash(project) != before


def test_hash_changes_with_a_new_package_file_and_with_the_base(project):
    before = current_hash(project)
    assert hashing.current_hash(project, "docker.io/library/debian:bookworm") != before
    (project.root / "workflow/instore/new.py").write_text("")
    assert current_hash(project) != before


def test_hash_ignores_notebooks_and_bytecode(project):
    before = current_hash(project)
    (project.root / "notebooks").mkdir()
    (project.root / "notebooks/a.ipynb").write_text("{}")
    (project.root / "workflow/instore/__pycache__").mkdir()
    (project.root / "workflow/instore/__pycache__/a.pyc").write_bytes(b"1")
    assert current_hash(project) == before


def test_hash_separates_name_from_content():
    assert hashing.content_hash({"a": b"bc"}, "") != hashing.content_hash({"ab": b"c"}, "")


@pytest.mark.parametrize(
    ("changed", "text"),
    [
        ("README.md", "a new paragraph\n"),
        ("notebooks/cache.ipynb", "{}"),
        ("tests/unit/test_x.py", "def test_x(): pass\n"),
        ("pyproject.toml", "[project]\nname='instore'\n\n[tool.ruff]\nline-length = 90\n"),
    ],
)
def test_edits_outside_the_image_leave_its_hash(project, changed, text):
    """A README, notebook, test or linter-setting edit must not rebuild the image (and so
    rerun every sweep table, summary and notebook)."""
    before = current_hash(project)
    (project.root / changed).parent.mkdir(parents=True, exist_ok=True)
    (project.root / changed).write_text(text)
    assert current_hash(project) == before


@pytest.mark.parametrize(
    ("changed", "text"),
    [
        ("workflow/instore/__init__.py", "__version__ = '0.2'\n"),
        ("pyproject.toml", "[project]\nname='instore'\nversion='0.2'\n"),
    ],
)
def test_package_source_or_metadata_edits_change_its_hash(project, changed, text):
    before = current_hash(project)
    (project.root / changed).write_text(text)
    assert current_hash(project) != before


def test_rebuild_reasons():
    record = {"content_hash": "h1", "image": "localhost/instore-payload:h1"}
    assert hashing.rebuild_reason(None, "h1", False) == "no image has been built"
    assert "changed" in hashing.rebuild_reason(record, "h2", True)
    assert "missing" in hashing.rebuild_reason(record, "h1", False)
    assert hashing.rebuild_reason(record, "h1", True) is None


def test_record_round_trip_and_bad_json(project):
    assert image.read_record(project) is None
    project.build_dir.mkdir(parents=True)
    image._write_record(project, {"image": "x", "content_hash": "h"})
    assert image.read_record(project) == {"image": "x", "content_hash": "h"}
    project.record_path.write_text("{not json")
    with pytest.raises(InstoreError, match="instore container build"):
        image.read_record(project)


def test_target_refuses_missing_and_stale_images(project):
    with pytest.raises(InstoreError, match="no payload image has been built"):
        image.target_for(Runtime.PODMAN, project)
    write_current_record(project)
    target = image.target_for(Runtime.PODMAN, project)
    assert (target.image, target.image_digest) == ("localhost/instore-payload:x", "sha256:ab")
    assert target.store == project.store()
    (project.root / "envs/requirements.lock").write_text("root==0.1a13\n")
    with pytest.raises(InstoreError, match="older than the recipe"):
        image.target_for(Runtime.PODMAN, project)


def test_apptainer_target_needs_a_sif_built_from_the_current_image(project):
    sif = project.build_dir / "payload.sif"
    record = write_current_record(project)
    with pytest.raises(InstoreError, match="--sif"):
        image.target_for(Runtime.APPTAINER, project)
    sif.write_bytes(b"sif")
    write_current_record(project, sif=str(sif), sif_content_hash=record["content_hash"])
    target = image.target_for(Runtime.APPTAINER, project)
    assert (target.image, target.image_digest) == (str(sif), "sha256:ab")


def test_none_target_needs_no_image(tmp_path):
    target = image.target_for(Runtime.NONE, Project(tmp_path))
    assert (target.runtime, target.image_digest) == (Runtime.NONE, None)


def test_project_store_is_under_the_project_and_stable(project):
    store = project.store()
    assert store.root == project.root / "build/container/storage"
    assert store.conf == project.root / "containers/containers.conf"
    assert store.runroot.parent == store.tmpdir.parent
    assert project.store() == store


def test_build_args_mount_the_ca_bundle_read_only(project, tmp_path, monkeypatch):
    ca = tmp_path / "ca.crt"
    ca.write_text("cert")
    monkeypatch.setenv("PIP_CERT", str(ca))
    args = image.build_args(
        project, "localhost/instore-base:x", "localhost/instore-payload:y", pull=False
    )
    assert args[args.index("--volume") + 1] == f"{ca}:{image.CA_IN_BUILD}:ro"
    assert f"PIP_CERT={image.CA_IN_BUILD}" in args
    assert "--network=host" in args and "--pull=never" in args
    assert args[-1] == str(project.build_dir / "context")


def test_build_args_mount_the_hosts_uv_cache_where_the_recipe_looks(project, tmp_path, monkeypatch):
    cache = tmp_path / "uv-cache"
    monkeypatch.setenv("UV_CACHE_DIR", str(cache))
    base, tag = "localhost/instore-base:x", "localhost/instore-payload:y"
    assert f"{cache}:{image.UV_CACHE_IN_BUILD}" not in image.build_args(project, base, tag, False)
    cache.mkdir()
    assert f"{cache}:{image.UV_CACHE_IN_BUILD}" in image.build_args(project, base, tag, False)
    recipe = Path(image.__file__).resolve().parents[3] / "containers" / "Containerfile"
    assert image.UV_CACHE_IN_BUILD in recipe.read_text()


def test_no_step_of_the_recipe_removes_the_mounted_uv_cache():
    """Regression: mounted at /root/.cache/uv, the host's uv cache was emptied by the recipe's
    `rm -rf /root/.cache` (the mount is in every RUN step of a build)."""
    recipe = Path(image.__file__).resolve().parents[3] / "containers" / "Containerfile"
    removed = re.findall(r"rm -rf ([^&\\\n]+)", recipe.read_text())
    paths = [p for args in removed for p in args.split()]
    assert paths, "the recipe removes nothing: this test no longer checks anything"
    inside = [p for p in paths if (image.UV_CACHE_IN_BUILD + "/").startswith(p.rstrip("*/") + "/")]
    assert not inside, inside


def test_a_user_whose_environment_names_no_ca_bundle_gets_the_systems(tmp_path, monkeypatch):
    """Regression: the Apptainer trial as siteadmin (a login shell: no PIP_CERT) built the image
    with a pip that trusted no intercepting proxy the host trusts, and stopped at 'No matching
    distribution found'."""
    for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    system = tmp_path / "ca-certificates.crt"
    system.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(image, "SYSTEM_CA_BUNDLE", system)
    assert image.host_ca_bundle() == system
    monkeypatch.setattr(image, "SYSTEM_CA_BUNDLE", tmp_path / "none.crt")
    assert image.host_ca_bundle() is None


def test_stage_context_copies_exactly_the_hashed_files(project, tmp_path):
    files = hashing.context(project)
    dest = tmp_path / "ctx"
    (dest / "stale").mkdir(parents=True)
    image.stage_context(files, dest)
    staged = {
        p.relative_to(dest).as_posix(): p.read_bytes() for p in dest.rglob("*") if p.is_file()
    }
    assert staged == files


def test_missing_tools_give_one_line_errors(project, monkeypatch):
    monkeypatch.setattr(podman.shutil, "which", lambda name: None)
    with pytest.raises(InstoreError) as err:
        image.build(project)
    assert (
        str(err.value)
        == "podman is not installed -- run `make system` as root, or use --runtime none"
    )
    project.build_dir.mkdir(parents=True)
    monkeypatch.setattr(image, "image_exists", lambda store, ref: False)
    with pytest.raises(InstoreError, match="mmdebstrap is not installed"):
        image.build_base(project, project.store(), hashing.base_spec(None))


def _failed_step(log, what: str, script: str, fix: str) -> str:
    """The one-line error of a build step that runs ``script`` and fails."""
    with pytest.raises(InstoreError) as err:
        podman.logged(what, [sys.executable, "-c", script], log, fix)
    return str(err.value)


def test_a_failed_build_step_names_the_last_log_line_in_one_line(tmp_path):
    log = tmp_path / "build.log"
    log.write_text("")
    script = "print('step 1 ok'); print('E: no such package g++'); exit(100)"
    assert (
        _failed_step(log, "podman build", script, "fix the recipe")
        == f"podman build failed: E: no such package g++ -- see {log}; fix the recipe"
    )
    assert "step 1 ok" in log.read_text()
    podman.logged("podman build", [sys.executable, "-c", "print('fine')"], log, "unused")
    assert log.read_text().endswith("fine\n")


def test_a_permission_error_is_not_sent_to_free_disk_space(tmp_path):
    """The Apptainer trial as an unprivileged user stopped at podman's 'mkdir /run/...:
    permission denied', and the message said to check free disk space."""
    log = tmp_path / "build.log"
    log.write_text("")
    script = "print('Error: mkdir /run/instore-podman/x: permission denied'); exit(125)"
    message = _failed_step(log, "podman import", script, "check free disk space under build/")
    assert "not writable by this user" in message
    assert "disk space" not in message


@pytest.mark.parametrize(
    ("tail", "named"),
    [
        ("write /x: no space left on device", "free disk space on the file system"),
        ("open /y: disk quota exceeded", "within your quota"),
        (
            'Error: database storage temporary directory (runroot) "/run/instore-podman/9a/storage"'
            ' does not match our storage temporary directory (runroot) "/tmp/instore-podman-1001/'
            '9a/storage": database configuration mismatch',
            "run `make clean-container`",
        ),
        (  # seen as a user who is not root, whose store podman had made with vfs (2026-11-28)
            'Error: database storage graph driver "vfs" does not match our storage graph driver '
            '"overlay": database configuration mismatch',
            "made with another storage driver",
        ),
        ("E: Unable to locate package g++", "the step's own fix"),
    ],
)
def test_a_failing_line_that_names_its_cause_chooses_the_fix(tail, named):
    assert named in podman.fix_for(tail, "the step's own fix")


def test_podman_runroot_stays_short_under_a_long_xdg_runtime_dir(project, monkeypatch):
    """podman refuses a runroot over 50 characters ("the specified runroot is longer than 50
    characters"): a long XDG_RUNTIME_DIR must not make every container fail to start."""
    (project.build_dir / "storage").mkdir(parents=True)  # a store made before the choice was kept
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/tmp/" + "x" * 60)
    store = project.store()
    assert len(str(store.runroot)) <= PODMAN_RUNROOT_MAX
    assert store.runroot.is_relative_to("/run/instore-podman")


def test_podmans_run_directory_is_chosen_once_per_store(project, monkeypatch):
    """Regression: the Apptainer trial as siteadmin stopped at "database configuration
    mismatch": the store was made by a session whose run state went to one directory and used
    by one whose went to another. A login shell and a batch job of the same user now share it."""
    monkeypatch.setattr(project_module, "_podman_runs", lambda driver, store: True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1001")
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    monkeypatch.setattr(os, "getuid", lambda: 1001)
    first = project.store()
    assert first.runroot.is_relative_to("/tmp/instore-podman-1001"), "not the session's own"
    assert len(str(first.runroot)) <= PODMAN_RUNROOT_MAX
    monkeypatch.delenv("XDG_RUNTIME_DIR")  # the same user in a batch job
    monkeypatch.setenv("TMPDIR", "/scratch/job-123")
    assert project.store() == first
    assert project.runroot_record.read_text() == f"{first.runroot.parent}\n"


def test_a_store_made_before_the_choice_was_kept_keeps_its_run_directory(project, monkeypatch):
    (project.build_dir / "storage").mkdir(parents=True)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/0")
    assert project.store().runroot.is_relative_to("/run/user/0/instore-podman")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert project.store().runroot.is_relative_to("/run/user/0/instore-podman")


def test_a_user_without_a_login_session_keeps_podmans_run_state_in_a_dir_of_their_own(
    project, monkeypatch
):
    """A site admin's `runuser`/`su` shell or a batch job has no XDG_RUNTIME_DIR, and /run is
    root's: seen as "mkdir /run/instore-podman/...: permission denied" when the image was
    built. Such a user's run state goes under the temporary directory, named by their uid."""
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    monkeypatch.setattr(os, "getuid", lambda: 1001)
    store = project.store()
    assert store.runroot.is_relative_to("/tmp/instore-podman-1001")
    assert len(str(store.runroot)) <= PODMAN_RUNROOT_MAX
    project.runroot_record.unlink()
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert project.store().runroot.is_relative_to("/run/instore-podman")


def _probe(monkeypatch: pytest.MonkeyPatch, runs: bool) -> list[str]:
    """Replace the scratch-store probe of a storage driver; the drivers it was asked about."""
    asked: list[str] = []

    def probe(driver: str, store: object) -> bool:
        asked.append(driver)
        return runs

    monkeypatch.setattr(project_module, "_podman_runs", probe)
    return asked


def _as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1001)
    monkeypatch.setattr(os, "getuid", lambda: 1001)


def test_root_keeps_podmans_own_storage_driver(project, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    asked = _probe(monkeypatch, True)
    store = project.store()
    assert (store.driver, asked) == ("", [])
    assert "--storage-driver" not in store.argv()


def test_a_user_who_is_not_root_gets_the_kernels_rootless_overlay_chosen_once(project, monkeypatch):
    """Regression: as a user who is not root, podman 4.3 made the store with vfs, and each
    container took 54-64 s to start (the 2.3 GB image copied for each; 2026-11-28)."""
    _as_user(monkeypatch)
    asked = _probe(monkeypatch, True)
    store = project.store()
    assert store.argv()[-2:] == ["--storage-driver", "overlay"]
    store.root.mkdir(parents=True)  # as podman makes it at its first use
    assert project.store() == store and asked == ["overlay"]  # kept, not probed again
    assert project.driver_record.read_text() == "overlay\n"


def test_a_users_store_made_with_vfs_keeps_vfs(project, monkeypatch):
    """A store podman made with vfs before the choice was kept opens only with vfs."""
    _as_user(monkeypatch)
    asked = _probe(monkeypatch, True)
    (project.build_dir / "storage" / "vfs-images").mkdir(parents=True)
    assert (project.store().driver, asked) == ("vfs", [])


def test_where_rootless_overlay_does_not_run_podman_chooses(project, monkeypatch):
    _as_user(monkeypatch)
    _probe(monkeypatch, False)
    store = project.store()
    assert store.driver == "" and "--storage-driver" not in store.argv()


def test_a_removed_store_gets_its_driver_chosen_again(project, monkeypatch):
    """The fix for a store podman refuses under another driver is to remove it: the record of
    the old store's driver must not bring vfs back to the new one."""
    _as_user(monkeypatch)
    (project.build_dir / "storage" / "vfs-images").mkdir(parents=True)
    asked = _probe(monkeypatch, True)
    assert project.store().driver == "vfs"
    shutil.rmtree(project.build_dir / "storage")
    assert (project.store().driver, asked) == ("overlay", ["overlay"])

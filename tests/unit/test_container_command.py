"""``instore container`` argument handling, and a run through the host runtime."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from instore.container import command, hashing, image, podman
from instore.container.project import Project
from instore.container.runtime import Access, Bind
from instore.errors import InstoreError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="instore")
    command.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["container", *argv])


def test_build_hands_base_and_force_to_the_builder_and_prints_its_record(monkeypatch, capsys):
    project = Project(Path("/nowhere"))
    calls = []
    monkeypatch.setattr(command, "find_project", lambda: project)
    monkeypatch.setattr(image, "build", lambda *a, **kw: calls.append((a, kw)) or {"image": "x"})
    args = parse("build", "--force", "--base", "docker.io/library/debian:bookworm")
    assert args.func(args) == 0
    assert calls == [((project,), {"base": "docker.io/library/debian:bookworm", "force": True})]
    assert json.loads(capsys.readouterr().out) == {"image": "x"}


def test_status_says_a_package_edit_needs_a_rebuild(tmp_path, monkeypatch, capsys):
    for name, text in {"containers/Containerfile": "FROM base\n", "envs/requirements.lock": "",
                       "envs/requirements-bootstrap.lock": "",
                       "pyproject.toml": "[project]\n", "workflow/instore/a.py": ""}.items():  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    project = Project(tmp_path)
    project.build_dir.mkdir(parents=True)
    record = {"image": "localhost/instore-payload:x", "content_hash": hashing.current_hash(project)}
    project.record_path.write_text(json.dumps(record))
    monkeypatch.setattr(command, "find_project", lambda: project)
    monkeypatch.setattr(podman, "image_exists", lambda store, ref: True)
    monkeypatch.setattr(command.shutil, "which", lambda name: f"/usr/bin/{name}")

    def status() -> dict:
        args = parse("status", "--runtime", "none")
        assert args.func(args) == 0
        return json.loads(capsys.readouterr().out)

    assert status()["rebuild_needed"] is None
    (tmp_path / "README.md").write_text("an edit outside the image\n")
    assert status()["rebuild_needed"] is None
    (tmp_path / "workflow/instore/a.py").write_text("x = 1\n")
    assert status()["rebuild_needed"] == "recipe, lock or package sources changed"


def test_run_keeps_the_payload_arguments_after_the_separator():
    args = parse(
        "run", "--runtime", "none", "--bind", "/data", "--", "instore", "read", "--bind", "x"
    )
    assert args.payload == ["--", "instore", "read", "--bind", "x"]
    assert args.bind == [Path("/data")]


def test_binds_are_read_only_unless_asked_and_env_is_named(tmp_path):
    args = parse(
        "run",
        "--bind",
        str(tmp_path),
        "--bind-rw",
        "/out",
        "--fuse-dir",
        "/mnt/f",
        "--env",
        "A=1",
        "--",
        "true",
    )
    binds = (
        Bind(tmp_path.resolve()),
        Bind(Path("/out"), writable=True),
        Bind(Path("/mnt/f"), propagate=True),
    )
    assert command.access_from(args, {}) == Access(binds, {"A": "1"}, fuse=True)
    assert command.access_from(parse("run", "--", "true"), {}) == Access((), {}, fuse=False)


def test_env_takes_values_given_or_named_from_the_caller():
    assert command.parse_env(["A=1", "B"], {"B": "2", "C": "3"}) == {"A": "1", "B": "2"}
    with pytest.raises(InstoreError, match="--env MISSING=VALUE"):
        command.parse_env(["MISSING"], {})


def test_run_on_the_host_prints_one_record_with_runtime_and_startup(capsys):
    code = "import json; print(json.dumps({'wall_s': 0.01, 'events': 3}))"
    args = parse("run", "--runtime", "none", "--startup-runs", "2", "--", "python", "-c", code)
    assert args.func(args) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["events"] == 3
    assert record["runtime"] == "none"
    assert record["container_startup_s"] > 0
    assert record["outer_wall_s"] > 0


def test_run_without_payload_is_an_error():
    args = parse("run", "--runtime", "none")
    with pytest.raises(InstoreError, match="no payload command"):
        args.func(args)


def test_failed_payload_gives_nonzero_status(capsys):
    args = parse(
        "run",
        "--runtime",
        "none",
        "--startup-runs",
        "0",
        "--",
        "python",
        "-c",
        "raise SystemExit(4)",
    )
    assert args.func(args) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["exit_status"] == 4
    assert record["container_startup_s"] is None
    assert "without a run record" in record["error"]

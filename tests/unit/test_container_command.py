"""``instore container`` argument handling, and a run through the host runtime."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from instore.container import command
from instore.container.runtime import Access, Bind
from instore.errors import InstoreError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="instore")
    command.register(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(["container", *argv])


def test_each_action_has_its_function():
    for action in ("build", "status", "run"):
        args = parse(action) if action != "run" else parse("run", "--", "true")
        assert callable(args.func)


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

"""The Snakemake --config keys: a misspelt key or a bad value is one line naming key and fix,
never silently ignored; good values arrive typed, with the documented defaults."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import instore
import pytest
from instore.configfile import schema
from instore.container.runtime import SETTINGS
from instore.errors import InstoreError
from instore.run import RUNTIME_ENV, load_run, run_options
from instore.study.config import DEFAULT_STUDY


def error_of(config: dict[str, Any]) -> str:
    with pytest.raises(InstoreError) as info:
        run_options(config, environ={})
    text = str(info.value)
    assert "\n" not in text and text.startswith("--config: field ") and " -- " in text, text
    return text


def test_misspelt_key_is_named_with_the_key_it_meant() -> None:
    text = error_of({"profle": "quick"})
    assert "field profle:" in text and "did you mean profile?" in text


def test_calibrate_typo_is_refused_not_taken_as_false() -> None:
    text = error_of({"calibrate": "ture"})
    assert "field calibrate:" in text and "calibrate=true or calibrate=false" in text


def test_unknown_runtime_lists_the_runtimes() -> None:
    text = error_of({"runtime": "dokker"})
    assert "field runtime:" in text and "use one of auto, podman, apptainer, none" in text


@pytest.mark.parametrize("profile", [1, 1.5, ["quick"], True])
def test_profile_must_be_a_name(profile: object) -> None:
    text = error_of({"profile": profile})
    assert "field profile:" in text and "e.g. profile=quick" in text


def test_site_names_must_be_names() -> None:
    assert "field sites.0:" in error_of({"sites": ["../etc/passwd"]})
    assert "field sites:" in error_of({"sites": 5})


def test_schema_offers_exactly_the_runtimes_the_container_package_knows() -> None:
    assert tuple(schema("config")["properties"]["runtime"]["enum"]) == SETTINGS


def test_defaults_when_nothing_is_given() -> None:
    options = run_options({}, environ={})
    assert options.study == DEFAULT_STUDY and options.profile is None and options.sites is None
    assert options.runtime == "auto" and options.calibrate is True


CALIBRATE_WORDS = [(True, True), (False, False), ("true", True), ("no", False), ("off", False),
                   (0, False), (1, True), (None, True)]  # fmt: skip


@pytest.mark.parametrize(("value", "expected"), CALIBRATE_WORDS)
def test_calibrate_words(value: object, expected: bool) -> None:
    assert run_options({"calibrate": value}, environ={}).calibrate is expected


def test_command_line_shapes_of_sites() -> None:
    """`sites=a,b` arrives as a string, `sites=[a,b]` as a list, `sites=` as None."""
    assert run_options({"sites": "lan-hdd, wan"}, environ={}).sites == ("lan-hdd", "wan")
    assert run_options({"sites": ["lan-hdd"]}, environ={}).sites == ("lan-hdd",)
    assert run_options({"sites": None}, environ={}).sites is None


def test_runtime_falls_back_to_the_environment() -> None:
    assert run_options({}, environ={RUNTIME_ENV: "none"}).runtime == "none"
    assert run_options({"runtime": "podman"}, environ={RUNTIME_ENV: "none"}).runtime == "podman"


def test_load_run_resolves_study_and_sites() -> None:
    run = load_run({"profile": "quick", "sites": "lan-hdd", "calibrate": "false"}, environ={})
    assert run.study.profile == "quick" and run.study.sites == ("lan-hdd",)
    assert list(run.sites) == ["lan-hdd"] and run.sites["lan-hdd"].emulated
    assert run.options.calibrate is False


def test_load_run_names_a_missing_study_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(InstoreError, match=f"{missing}: no such file -- check the path"):
        load_run({"study": str(missing)}, environ={})


def test_configfile_is_the_only_yaml_reader() -> None:
    """Every config file gets the same one-line errors only if one function parses YAML."""
    package = Path(instore.__file__).parent
    callers = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in ("safe_load", "load", "full_load")
        and isinstance(node.value, ast.Name) and node.value.id == "yaml"
    ]  # fmt: skip
    assert [c.split(":")[0] for c in callers] == ["configfile.py"], callers

"""Each vocabulary (layouts, protocols, engines, auth kinds, runtimes, sections) is listed once,
in instore.vocabulary: the schemas are written from it and the code registries are its."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from instore import vocabulary
from instore.container.runtime import SETTINGS, Runtime
from instore.credentials import AUTH_KINDS
from instore.generate import LAYOUTS, RNTUPLE_LAYOUTS, TTREE_LAYOUTS
from instore.generate.spec import RNTUPLE_DEFAULTS
from instore.site.config import PROTOCOLS
from instore.study import SECTIONS


def test_the_schemas_say_what_the_code_says() -> None:
    assert vocabulary.disagreements() == []


def test_the_code_registries_are_the_vocabulary() -> None:
    assert (LAYOUTS, TTREE_LAYOUTS, RNTUPLE_LAYOUTS) == (
        vocabulary.LAYOUTS, vocabulary.TTREE_LAYOUTS, vocabulary.RNTUPLE_LAYOUTS)  # fmt: skip
    assert set(RNTUPLE_DEFAULTS) == set(vocabulary.RNTUPLE_LAYOUTS)
    assert PROTOCOLS == vocabulary.PROTOCOLS
    assert AUTH_KINDS == vocabulary.AUTH_KINDS
    assert tuple(r.value for r in Runtime) == vocabulary.RUNTIMES
    assert Runtime.PODMAN == "podman" and Runtime.NONE.value == "none"
    assert ("auto", *vocabulary.RUNTIMES) == SETTINGS
    assert SECTIONS == vocabulary.SECTIONS
    from instore.payload.runner import ENGINES as PAYLOAD
    from instore.payload.specs import FILE_MODULES, SPECS

    assert tuple(SPECS) == vocabulary.ENGINES
    assert tuple(PAYLOAD) == tuple(FILE_MODULES) == ("root", "uproot")


def test_writing_the_schemas_changes_nothing_when_they_agree() -> None:
    before = {p: p.read_text() for p in vocabulary.SCHEMAS_DIR.glob("*.schema.json")}
    assert vocabulary.write_schemas() == []
    assert {p: p.read_text() for p in before} == before


def test_a_new_word_is_written_into_every_schema_that_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in vocabulary.SCHEMAS_DIR.glob("*.schema.json"):
        shutil.copy(path, tmp_path)
    monkeypatch.setattr(vocabulary, "SCHEMAS_DIR", tmp_path)
    more = (*vocabulary.PROTOCOLS, "s3")
    enums = tuple((s, p, more if v == vocabulary.PROTOCOLS else v) for s, p, v in vocabulary.ENUMS)
    monkeypatch.setattr(vocabulary, "ENUMS", enums)
    monkeypatch.setattr(vocabulary, "SECTIONS", (*vocabulary.SECTIONS, "tape"))
    assert len(vocabulary.disagreements()) == 3  # site, study's grid, study's sections
    assert sorted(p.name for p in vocabulary.write_schemas()) == [
        "site.schema.json", "study.schema.json"]  # fmt: skip
    assert vocabulary.disagreements() == []
    study = json.loads((tmp_path / "study.schema.json").read_text())
    assert list(vocabulary.at(study, vocabulary.SECTIONS_POINTER))[-1] == "tape"


def test_one_section_registry_in_study_order() -> None:
    from instore.summary.figures import FIGURES
    from instore.summary.sections import REGISTRY, title

    assert tuple(REGISTRY) == SECTIONS
    assert title("format") == "File format: TTree and RNTuple" and title("compare") == "compare"
    advising = sorted((s for s in REGISTRY.values() if s.advice), key=lambda s: s.advice_rank or 0)
    assert [s.name for s in advising] == [
        "protocols", "cache", "layout", "readahead", "jobfill", "format", "caching"]  # fmt: skip
    assert len({s.advice_rank for s in advising}) == len(advising)
    pages = {page for page, _ in FIGURES.values()}
    assert pages - set(SECTIONS) == {"compare", "baseline"}  # every other page is a section's
    assert next(iter(REGISTRY["format"].figures)) == "format_wall"


def test_each_part_a_section_plays_names_sections_of_the_vocabulary() -> None:
    """The roles the sweep and the prediction act on (fitted on, ramped, replayed, held out,
    the engines' format grid) are spelt in the vocabulary only, and each names a section."""
    roles = {*vocabulary.PAYLOAD_FIT_SECTIONS, *vocabulary.TRACE_SECTIONS,
             *vocabulary.RAMP_SECTIONS, vocabulary.FORMAT_SECTION, vocabulary.HELD_OUT_SECTION}  # fmt: skip
    assert roles <= set(SECTIONS)
    assert set(vocabulary.RAMP_SECTIONS) <= set(vocabulary.TRACE_SECTIONS)  # a ramp replays
    assert vocabulary.HELD_OUT_SECTION not in vocabulary.PAYLOAD_FIT_SECTIONS  # never fitted on

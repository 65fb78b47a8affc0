"""A section is said in one place: its module (``instore.summary.sections.<name>``) declares its
title, the paragraph its page opens with, its per-point statistics, its figures, the parts its
page draws and its recommendation; the registry, the figure table and the one section notebook
work from it, and no other module addresses a section by spelling its name."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import instore
import pytest
from instore.report.command import NOTEBOOKS
from instore.report.page import PARTS
from instore.summary.figures import FIGURES
from instore.summary.sections import REGISTRY
from instore.vocabulary import SECTIONS

PACKAGE = Path(instore.__file__).parent
SECTION_MODULES = PACKAGE / "summary" / "sections"
# Functions whose argument names a section (the page's and the summary's).
TAKES_A_SECTION = {
    "points", "rows", "has_runs", "page_of", "header", "points_table", "statistics_table",
    "statistics", "title", "ok_points", "read_section", "section_path", "no_runs_note",
    "skipped_here", "substitution_note", "load_curves", "load_saturation", "load_table",
    "ramp_note", "_by_site", "draw",
}  # fmt: skip


@pytest.mark.parametrize("name", SECTIONS)
def test_every_section_declares_its_page_in_its_own_module(name: str) -> None:
    module = importlib.import_module(f"instore.summary.sections.{name}")
    section = module.SECTION
    assert module.NAME == section.name == name and REGISTRY[name] is section
    assert section.title and section.about and section.statistics.columns
    assert section.figures and section.page
    assert all(part in PARTS for part in section.page), "each part is one the report draws"
    assert section.advice is None or callable(section.advice)
    assert {FIGURES[key] for key in section.figures} == {
        (name, anchor) for anchor in section.figures.values()
    }  # the figure table is built from it


def test_the_section_package_holds_one_module_per_section_and_nothing_else() -> None:
    found = {p.stem for p in SECTION_MODULES.glob("*.py")} - {"__init__", "base"}
    assert found == set(SECTIONS)


def test_every_page_part_is_drawn_on_some_section_page() -> None:
    assert set(PARTS) == {part for s in REGISTRY.values() for part in s.page}


def test_one_notebook_draws_every_section_page() -> None:
    assert (NOTEBOOKS / "section.ipynb").is_file()
    assert [s for s in SECTIONS if (NOTEBOOKS / f"{s}.ipynb").exists()] == []
    rules = (PACKAGE.parent / "rules" / "reports.smk").read_text()
    assert 'NOTEBOOKS / "section.ipynb"' in rules and "section={w.name}" in rules


def _named(node: ast.AST) -> set[str]:
    """The section names a constant, or a tuple, list or set of constants, spells."""
    parts = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {p.value for p in parts if isinstance(p, ast.Constant) and p.value in SECTIONS}


def _is_section(node: ast.AST) -> bool:
    """``x["section"]``, ``x.section``, ``section`` or ``x.get("section")``."""
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "section"
    if isinstance(node, ast.Attribute):
        return node.attr == "section"
    if isinstance(node, ast.Name):
        return node.id == "section"
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get" and bool(node.args)
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "section")  # fmt: skip


def section_literals(path: Path, root: Path = PACKAGE) -> list[str]:
    """Where ``path`` addresses a section by spelling its name: an argument of a function that
    takes a section, a comparison with a record's section, a ``*SECTION*`` constant, a
    ``section`` parameter's default."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        spelt: set[str] = set()
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in TAKES_A_SECTION:
                for arg in [*node.args, *(k.value for k in node.keywords)]:
                    spelt |= _named(arg)
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_section(s) for s in sides):
                for side in sides:
                    spelt |= _named(side)
        elif isinstance(node, ast.Assign):
            if any(isinstance(t, ast.Name) and "SECTION" in t.id for t in node.targets):
                spelt |= _named(node.value)
        elif isinstance(node, ast.FunctionDef):
            args = node.args.args[-len(node.args.defaults) :] if node.args.defaults else []
            for arg, default in zip(args, node.args.defaults, strict=True):
                if arg.arg == "section":
                    spelt |= _named(default)
        if spelt:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(sorted(spelt))}")
    return found


def test_no_module_but_the_sections_own_spells_a_section_to_address_it() -> None:
    """A section's name is spelt in the vocabulary and its module; everything else takes it
    from there (a module's ``NAME``, the registry), so renaming or adding a section touches
    those two."""
    outside = [p for p in PACKAGE.rglob("*.py") if SECTION_MODULES not in p.parents
               and p.name != "vocabulary.py"]  # fmt: skip
    assert [hit for p in outside for hit in section_literals(p)] == []


def test_the_check_finds_a_section_spelt_where_it_addresses_one(tmp_path: Path) -> None:
    """The check above can fail: each way of addressing a section by its name is found."""
    module = tmp_path / "m.py"
    module.write_text(
        'SECTION = "layout"\n'
        'def f(view, section="load"):\n'
        '    has_runs(view, "cache")\n'
        '    return stats[stats["section"] == "format"], view.points("jobfill"), row.get("section")'
        ' in ("replay", "scale")\n'
        'ok = stats["layout"] == "ordered"\n'  # a column that shares a section's name: no hit
    )
    hits = sorted(h.rpartition(": ")[2] for h in section_literals(module, tmp_path))
    assert hits == ["cache", "format", "jobfill", "layout", "load", "replay, scale"]

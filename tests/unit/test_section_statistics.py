"""Each section's per-point statistics are said once, in the section registry
(``instore.summary.sections``): the page's table shows those columns, in that order, and
a statistic taken out of the registry is gone from the page."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from instore.report import intervals, jobfill, sections
from instore.summary import sections as registry
from instore.summary.command import summarize, write

from tests.unit.data.records import write_results

SITE = "fixture-cold"
TABLES: dict[str, Callable[[sections.SiteView], None]] = {
    "layout": sections.layout_table,
    "cache": sections.cache_table,
    "protocols": sections.protocol_table,
    "readahead": sections.readahead_table,
    "jobfill": jobfill.jobfill_table,
}


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> sections.SiteView:
    results = write_results(tmp_path_factory.mktemp("results"))
    write(results, SITE, *summarize(results, SITE))
    return sections.SiteView.load(SITE, results)


def shown_table(
    view: sections.SiteView, section: str, monkeypatch: pytest.MonkeyPatch
) -> pd.DataFrame:
    """The per-point table the section's page shows."""
    tables: list[pd.DataFrame] = []
    monkeypatch.setattr(sections.show, "table", lambda table, *a, **k: tables.append(table))
    TABLES[section](view)
    assert len(tables) == 1, section
    return tables[0]


def headed(words: str, headers: list[str]) -> int:
    """Where a statistic stands among the headers: as itself, or as a median with its interval."""
    for name in (words, intervals.header(words)):
        if name in headers:
            return headers.index(name)
    raise AssertionError(f"{words!r} is not among {headers}")


def test_every_section_names_its_statistics_and_their_percentages_among_them() -> None:
    for section in registry.REGISTRY.values():
        stats = section.statistics
        assert stats.columns, f"{section.name} names no per-point statistic"
        assert set(stats.percent) <= set(stats.columns), section.name
        assert set(stats.optional) <= set(stats.columns), section.name


@pytest.mark.parametrize("section", TABLES)
def test_a_sections_table_shows_the_registrys_statistics_in_its_order(
    view: sections.SiteView, section: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = shown_table(view, section, monkeypatch)
    headers = list(table.columns)
    stats = registry.statistics(section)
    points = view.points(section)
    leave_out = ("layout",) if section == "protocols" and points["layout"].nunique() == 1 else ()
    wanted = stats.shown(points.assign(cores=0), leave_out)  # jobfill's cores: the page's sum
    at = [headed(words, headers) for words in wanted.values()]
    assert at == sorted(at), f"{section}: shown out of the registry's order"
    for column in stats.percent:  # shown as percentages: "93% [90%, 95%]"
        if points[column].isna().all():  # a share of a calibration this fixture has not
            continue
        cells = table.iloc[:, headed(wanted[column], headers)].astype(str)
        assert cells.str.contains("%").any(), (section, column, cells.tolist())


@pytest.mark.parametrize("section", TABLES)
def test_a_statistic_taken_out_of_the_registry_is_gone_from_the_page(
    view: sections.SiteView, section: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = registry.REGISTRY[section]
    *kept, (_, dropped) = entry.statistics.columns.items()
    trimmed = dataclasses.replace(entry.statistics, columns=dict(kept))
    monkeypatch.setitem(registry.REGISTRY, section, dataclasses.replace(entry, statistics=trimmed))
    headers = list(shown_table(view, section, monkeypatch).columns)
    assert dropped not in headers and intervals.header(dropped) not in headers


def test_the_study_file_reference_lists_each_sections_statistics() -> None:
    """docs/study-file.md, generated from the registry (test_docs pins that it is current)."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "study-file.md").read_text()
    for section in registry.REGISTRY.values():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{section.name}` | "
                   f"{section.title} |"))  # fmt: skip
        assert all(words in row for words in section.statistics.columns.values()), section.name

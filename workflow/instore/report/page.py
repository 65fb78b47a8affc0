"""A section's page, drawn from what its module declares (``instore.summary.sections``): the
paragraph it opens with, its header (site, conditions, what was not measured), then its parts
in order. The one section notebook (``notebooks/section.ipynb``) calls ``draw`` with the
section's name; ``PARTS`` is the one table of the parts a page can draw, keyed by the names
the sections' modules give them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from instore.errors import InstoreError
from instore.report import analyses, caching, jobfill, load, replay, scale, sections, show
from instore.report import format as file_format
from instore.report.view import SiteView
from instore.summary.sections import REGISTRY

# A part of a page: drawn from the site's view, the section it is drawn for (a part several
# sections share draws under that section's anchors) and the generated files' directory.
Part = Callable[[SiteView, str, str], None]


def _view_only(draw: Callable[[SiteView], None]) -> Part:
    return lambda view, _section, _data: draw(view)


def _per_section(draw: Callable[[SiteView, str], None]) -> Part:
    return lambda view, section, _data: draw(view, section)


PARTS: dict[str, Part] = {
    "access_map": lambda view, _section, data: sections.access_map(view, data),
    "layout_wall": _view_only(sections.layout_wall),
    "layout_table": _view_only(sections.layout_table),
    "cache_reads": _view_only(sections.cache_reads),
    "cache_table": _view_only(sections.cache_table),
    "protocol_table": _view_only(sections.protocol_table),
    "protocol_efficiency": _view_only(sections.protocol_efficiency),
    "readahead": _view_only(sections.readahead),
    "readahead_table": _view_only(sections.readahead_table),
    "jobfill_table": _view_only(jobfill.jobfill_table),
    "jobfill": _view_only(jobfill.jobfill),
    "format_wall": _view_only(file_format.format_wall),
    "format_throughput": _view_only(file_format.format_throughput),
    "format_ratio": _view_only(file_format.format_ratio),
    "format_table": _view_only(file_format.format_table),
    "format_failures": _view_only(file_format.format_failures),
    "caching": _view_only(caching.caching),
    "caching_table": _view_only(caching.caching_table),
    "scale_effects": _view_only(scale.scale_effects),
    "scale_table": _view_only(scale.scale_table),
    "replay_efficiency": _view_only(replay.replay_efficiency),
    "replay_table": _view_only(replay.replay_table),
    "replay_analyses": _view_only(analyses.site_page),
    "load_curves": _per_section(load.load_curves),
    "load_saturation": _per_section(load.load_saturation),
    "load_table": _per_section(load.load_table),
}


def draw(section: str, site: str, results: str | Path, data: str | Path = "") -> None:
    """The section's page for the site: its paragraph, its header, then each of its parts."""
    declared = REGISTRY.get(section)
    if declared is None:
        raise InstoreError(f"{section!r}: no such section", f"name one of {', '.join(REGISTRY)}")
    show.markdown(declared.about)
    view = SiteView.load(site, results)
    sections.header(view, section)
    for part in declared.page:
        PARTS[part](view, section, str(data))

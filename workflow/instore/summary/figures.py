"""Where each figure lives in a site's report, so a recommendation can link to its evidence.

The report package renders each figure under one of these anchors; the summary links to them.
"""

from __future__ import annotations

FIGURES: dict[str, tuple[str, str]] = {
    # key: (section page, anchor id)
    "access_map": ("layout", "fig-layout-access-map"),
    "layout_wall": ("layout", "fig-layout-wall"),
    "cache_reads": ("cache", "fig-cache-reads"),
    "protocol_table": ("protocols", "fig-protocols-table"),
    "protocol_efficiency": ("protocols", "fig-protocols-efficiency"),
    "readahead": ("readahead", "fig-readahead"),
    "jobfill_table": ("jobfill", "fig-jobfill-table"),
    "jobfill": ("jobfill", "fig-jobfill"),
    "format_wall": ("format", "fig-format-wall"),
    "format_throughput": ("format", "fig-format-throughput"),
    "format_ratio": ("format", "fig-format-ratio"),
    "format_table": ("format", "fig-format-table"),
    "format_compare": ("compare", "fig-compare-format"),
    "caching": ("caching", "fig-caching"),
    "scale_effects": ("scale", "fig-scale-effects"),
    "scale_table": ("scale", "fig-scale-table"),
    "scale_points": ("scale", "fig-scale-points"),
    "replay_efficiency": ("replay", "fig-replay-efficiency"),
    "replay_table": ("replay", "fig-replay-table"),
    "replay_analyses_io": ("replay", "fig-replay-analyses-io"),
    "replay_analyses_efficiency": ("replay", "fig-replay-analyses-efficiency"),
    "replay_analyses_efficiency_figure": ("replay", "fig-replay-analyses-efficiency-figure"),
    "load_curves": ("load", "fig-load-curves"),
    "load_saturation": ("load", "fig-load-saturation"),
    "load_capacity": ("load", "fig-load-capacity"),
    "load_table": ("load", "fig-load-table"),
    "scheduler_curves": ("scheduler", "fig-scheduler-curves"),
    "scheduler_saturation": ("scheduler", "fig-scheduler-saturation"),
    "scheduler_capacity": ("scheduler", "fig-scheduler-capacity"),
    "scheduler_table": ("scheduler", "fig-scheduler-table"),
    "filesystem_curves": ("filesystem", "fig-filesystem-curves"),
    "filesystem_saturation": ("filesystem", "fig-filesystem-saturation"),
    "filesystem_capacity": ("filesystem", "fig-filesystem-capacity"),
    "filesystem_table": ("filesystem", "fig-filesystem-table"),
    "compare": ("compare", "fig-compare"),
    "replay_compare": ("compare", "fig-compare-replay"),
    "load_compare": ("compare", "fig-compare-load"),
    "baseline": ("baseline", "fig-baseline"),
    "baseline_table": ("baseline", "fig-baseline-table"),
    "baseline_only": ("baseline", "fig-baseline-only"),
}


def anchor(key: str) -> str:
    return FIGURES[key][1]


def link(key: str) -> str:
    """Relative link from a site's overview page to the figure on its section page."""
    section, anchor_id = FIGURES[key]
    return f"{section}.html#{anchor_id}"

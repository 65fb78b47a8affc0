"""Where each figure lives in a site's report, so a recommendation can link to its evidence:
each section's figures as its module declares them (``instore.summary.sections``), and the
figures of the pages that are no section's (the comparison, the before-and-after page).

The report package renders each figure under one of these anchors; the summary links to them.
"""

from __future__ import annotations

from instore.summary.sections import REGISTRY

# The pages that are no section's: key -> (page, anchor id)
OTHER_PAGES: dict[str, tuple[str, str]] = {
    "format_compare": ("compare", "fig-compare-format"),
    "compare": ("compare", "fig-compare"),
    "replay_compare": ("compare", "fig-compare-replay"),
    "load_compare": ("compare", "fig-compare-load"),
    "baseline": ("baseline", "fig-baseline"),
    "baseline_table": ("baseline", "fig-baseline-table"),
    "baseline_only": ("baseline", "fig-baseline-only"),
}
# key: (section page, anchor id)
FIGURES: dict[str, tuple[str, str]] = {
    **{key: (s.name, anchor) for s in REGISTRY.values() for key, anchor in s.figures.items()},
    **OTHER_PAGES,
}


def anchor(key: str) -> str:
    return FIGURES[key][1]

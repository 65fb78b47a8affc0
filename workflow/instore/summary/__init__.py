"""Per-point statistics, calibrated limits and recommendations from a site's sweep records."""

from instore.summary.advice import Recommendation
from instore.summary.load import read_site, read_study
from instore.summary.sections import recommend
from instore.summary.stats import point_stats

__all__ = ["Recommendation", "point_stats", "read_site", "read_study", "recommend"]

"""Sweeps: a section's grid of points measured on a site, jobs placed on Dask workers."""

from instore.sweep.cluster import ClusterSpec
from instore.sweep.options import SweepOptions, SweepSummary
from instore.sweep.runner import run_site
from instore.sweep.store import RecordStore

__all__ = ["ClusterSpec", "RecordStore", "SweepOptions", "SweepSummary", "run_site"]

"""The measuring payload: one job reads one file and reports a run record."""

from instore.payload.pattern import Pattern
from instore.payload.runner import ReadOptions, run_read

__all__ = ["Pattern", "ReadOptions", "run_read"]

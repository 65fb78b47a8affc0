"""The study definition (config/study.yaml): files, sites and one grid per section."""

from instore.study.config import SECTIONS, Study, load_study
from instore.study.grid import Point, expand

__all__ = ["SECTIONS", "Point", "Study", "expand", "load_study"]

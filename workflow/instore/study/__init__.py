"""The study definition (config/study.yaml): files, sites and one grid per section."""

from instore.study.config import Study, load_study
from instore.study.grid import Point, expand
from instore.vocabulary import SECTIONS

__all__ = ["SECTIONS", "Point", "Study", "expand", "load_study"]

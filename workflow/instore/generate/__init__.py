"""Deterministic ROOT test files: three TTree basket layouts and two RNTuple ones."""

from instore.generate.layouts import DEFAULT_LAYOUTS, generate_file, generate_files
from instore.generate.spec import FileSpec
from instore.vocabulary import LAYOUTS, RNTUPLE_LAYOUTS, TTREE_LAYOUTS

__all__ = [
    "DEFAULT_LAYOUTS",
    "LAYOUTS",
    "RNTUPLE_LAYOUTS",
    "TTREE_LAYOUTS",
    "FileSpec",
    "generate_file",
    "generate_files",
]

"""Deterministic ROOT test files: three TTree basket layouts and two RNTuple ones."""

from instore.generate.layouts import (
    DEFAULT_LAYOUTS,
    LAYOUTS,
    RNTUPLE_LAYOUTS,
    TTREE_LAYOUTS,
    FileSpec,
    generate_file,
    generate_files,
)

__all__ = [
    "DEFAULT_LAYOUTS",
    "LAYOUTS",
    "RNTUPLE_LAYOUTS",
    "TTREE_LAYOUTS",
    "FileSpec",
    "generate_file",
    "generate_files",
]

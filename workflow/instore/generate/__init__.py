"""Deterministic ROOT test files in three basket layouts (see DESIGN.md: layout)."""

from instore.generate.layouts import LAYOUTS, FileSpec, generate_file, generate_files

__all__ = ["LAYOUTS", "FileSpec", "generate_file", "generate_files"]

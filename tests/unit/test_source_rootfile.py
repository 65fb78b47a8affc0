"""The root engine's jobs reach root:// through ROOT's TFile, never the Python XRootD client
(the two clients crash one process together)."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.storage import open_reader, storage_for
from instore.storage.file import FileStorage
from instore.storage.rootfile import RootFileReader, RootFileStorage
from instore.storage.source import source_class
from instore.storage.xrootd import XRootDStorage


def test_root_reader_reads_the_bytes_of_the_file(small_files: dict[str, Path]) -> None:
    path = small_files["ordered"]
    data = path.read_bytes()
    reader = RootFileReader(str(path), 10)
    try:
        assert reader.size == len(data)
        got = reader.read_ranges([(0, 100), (5000, 9000)])
        assert got == [data[:100], data[5000:9000]]
    finally:
        reader.close()


def test_root_reader_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="ROOT could not open"):
        RootFileReader(str(tmp_path / "nope.root"), 10)


def test_via_root_only_changes_root_urls(small_files: dict[str, Path]) -> None:
    local = open_reader(str(small_files["ordered"]), 10, via_root=True)
    assert type(local).__name__ == "FileReader"
    local.close()
    assert type(storage_for("/data/f.root", via_root=True)) is FileStorage
    root = storage_for("root://se//f.root", via_root=True)
    assert type(root) is RootFileStorage and isinstance(root, XRootDStorage)  # only open differs
    assert type(storage_for("root://se//f.root")) is XRootDStorage
    assert source_class(None, 10, via_root=True).via_root  # type: ignore[arg-type]
    assert not source_class(None, 10).via_root  # type: ignore[arg-type]

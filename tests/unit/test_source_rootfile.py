"""The root engine's jobs reach root:// through ROOT's TFile, never the Python XRootD client
(the two clients crash one process together)."""

from __future__ import annotations

from pathlib import Path

import pytest
from instore.payload.source.base import open_backend, source_class
from instore.payload.source.rootfile import RootFileBackend


def test_root_backend_reads_the_bytes_of_the_file(small_files: dict[str, Path]) -> None:
    path = small_files["ordered"]
    data = path.read_bytes()
    backend = RootFileBackend(str(path), 10)
    try:
        assert backend.size == len(data)
        got = backend.read_ranges([(0, 100), (5000, 9000)])
        assert got == [data[:100], data[5000:9000]]
    finally:
        backend.close()


def test_root_backend_refuses_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="ROOT could not open"):
        RootFileBackend(str(tmp_path / "nope.root"), 10)


def test_via_root_only_changes_root_urls(small_files: dict[str, Path]) -> None:
    local = open_backend(str(small_files["ordered"]), 10, via_root=True)
    assert type(local).__name__ == "FileBackend"
    local.close()
    assert source_class(None, 10, via_root=True).via_root  # type: ignore[arg-type]
    assert not source_class(None, 10).via_root  # type: ignore[arg-type]

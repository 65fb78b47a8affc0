"""instore.uproot_xrootd: uproot's fsspec source hands Python ints on (the XRootD binding takes
nothing else), reads the same bytes, and the patch is applied once. Over a real XRootD server:
tests/integration/test_byte_steps.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import uproot
import uproot.source.fsspec
from instore import uproot_xrootd


def test_chunk_passes_python_ints_and_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(bytes(range(256)) * 4)
    uproot_xrootd.apply()
    assert uproot_xrootd.applied() and not uproot_xrootd.apply()  # idempotent
    source = uproot.source.fsspec.FSSpecSource(str(path))
    seen: list[tuple[Any, Any]] = []
    cat_file = source._fs.cat_file

    def spy(p: str, start: Any = None, end: Any = None, **kw: Any) -> bytes:
        seen.append((start, end))
        return cat_file(p, start=start, end=end, **kw)

    source._fs.cat_file = spy
    # what TBranch.basket_key passes: an element of the fBasketSeek array
    seek = np.array([100, 300], dtype=">i8")
    chunk = source.chunk(seek[0], seek[0] + 18)
    assert [type(x) for x in seen[0]] == [int, int]
    assert chunk.raw_data.tobytes() == path.read_bytes()[100:118]
    assert source.num_requested_bytes == 18
    source.close()


def test_uproot_still_reads_a_tree_with_it(tmp_path: Path) -> None:
    """Byte-sized steps on a local file go through the patched source unchanged."""
    uproot_xrootd.apply()
    path = tmp_path / "t.root"
    with uproot.recreate(path) as f:
        f.mktree("Events", {"x": np.float32}).extend({"x": np.arange(5000, dtype=np.float32)})
        f["Events"].extend({"x": np.arange(5000, 10000, dtype=np.float32)})
    steps = list(uproot.iterate(f"{path}:Events", ["x"], step_size="10 kB",
                                handler=uproot.source.fsspec.FSSpecSource))  # fmt: skip
    assert sum(len(s) for s in steps) == 10000 and len(steps) > 1


def test_the_payloads_xrootd_backend_hands_python_ints_to_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """instore's own uproot source (the uproot engine) reads through XRootDReader: NumPy
    offsets from uproot reach the binding as Python ints, as it requires."""
    from instore.storage import xrootd as backend

    calls: list[tuple[str, Any]] = []

    class Status:
        ok, message = True, ""

    class Info:
        size = 1000

    class FakeFile:
        def open(self, url: str, timeout: int) -> tuple[Status, None]:
            return Status(), None

        def stat(self, timeout: int) -> tuple[Status, Info]:
            return Status(), Info()

        def read(self, offset: Any, size: Any, timeout: int) -> tuple[Status, bytes]:
            if type(offset) is not int or type(size) is not int:  # as the binding refuses
                raise TypeError("integer argument expected for offset")
            calls.append(("read", (offset, size)))
            return Status(), b"x" * size

        def vector_read(self, chunks: list, timeout: int) -> tuple[Status, Any]:
            assert all(type(a) is int and type(n) is int for a, n in chunks)
            calls.append(("vector_read", chunks))
            return Status(), type("I", (), {"chunks": [type("C", (), {"buffer": b"y" * n})()
                                                       for _, n in chunks]})()  # fmt: skip

    monkeypatch.setattr(backend, "client", lambda: SimpleNamespace(File=FakeFile))
    source = backend.XRootDReader("root://h//f", 5)
    seek = np.array([100, 300, 600], dtype=">i8")
    assert source.read_ranges([(seek[0], seek[0] + 18)]) == [b"x" * 18]
    assert source.read_ranges([(seek[1], seek[1] + 4), (seek[2], seek[2] + 2)]) == [b"yyyy", b"yy"]
    assert calls == [("read", (100, 18)), ("vector_read", [(300, 4), (600, 2)])]

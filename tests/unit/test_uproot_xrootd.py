"""instore.uproot_xrootd: uproot's fsspec source hands Python ints on (the XRootD binding takes
nothing else), reads the same bytes, and the patch is applied once. Over a real XRootD server:
tests/integration/test_byte_steps.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
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

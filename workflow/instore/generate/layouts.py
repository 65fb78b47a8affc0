"""Write the same events in the three layouts of the study.

- ``unordered``: ``SetAutoFlush(0)`` and per-branch basket sizes that differ, so baskets land
  in the file interleaved as they filled (pre-ROOT-5.26 ATLAS AODs).
- ``by-branch``: the clustered fill fast-cloned with ``SortBasketsByBranch``.
- ``ordered``: the clustered fill (autoflush) fast-cloned with ``SortBasketsByEntry``.

All layouts of one replica come from the same seed, so event values are identical; ordered and
by-branch hold the very same baskets, placed differently.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from instore import __version__
from instore.errors import InstoreError
from instore.rootenv import declare, root_version
from instore.study.files import replica_name

log = logging.getLogger(__name__)

LAYOUTS: tuple[str, ...] = ("unordered", "by-branch", "ordered")
TREE_NAME = "events"
_SORT = {"by-branch": "SortBasketsByBranch", "ordered": "SortBasketsByEntry"}
_PROBE_EVENTS = 2000


@dataclass(frozen=True)
class FileSpec:
    """What to generate: one replica in one layout."""

    layout: str
    seed: int = 1
    replica: int = 0
    n_events: int | None = None
    size_mb: float | None = None
    cluster_mb: float = 8.0
    compression: int = 101  # ROOT's TFile default (ZLIB level 1), as on 2010-era files

    def __post_init__(self) -> None:
        if self.layout not in LAYOUTS:
            raise InstoreError(
                f"unknown layout {self.layout!r}", f"choose one of {', '.join(LAYOUTS)}"
            )
        if (self.n_events is None) == (self.size_mb is None):
            raise InstoreError(
                "give exactly one of a size in MB or a number of events",
                "use --size-mb or --events",
            )
        if (self.n_events is not None and self.n_events <= 0) or (
            self.size_mb is not None and self.size_mb <= 0
        ):
            raise InstoreError(
                "file size must be positive", "give --size-mb or --events greater than 0"
            )
        if self.cluster_mb <= 0:
            raise InstoreError("cluster size must be positive", "give --cluster-mb greater than 0")

    @property
    def replica_seed(self) -> int:
        """Distinct per replica (concurrent jobs read different files), equal across layouts."""
        return self.seed * 1_000_003 + self.replica

    @property
    def filename(self) -> str:
        return replica_name(self.layout, self.replica)


def _fill(path: Path, spec: FileSpec, n_events: int, cluster_bytes: int) -> int:
    meta = json.dumps(
        {**asdict(spec), "n_events": n_events, "instore": __version__, "root": root_version()}
    )
    zip_bytes = declare("generate").fill(
        str(path), TREE_NAME, n_events, spec.replica_seed, cluster_bytes, spec.compression, meta
    )
    if zip_bytes < 0:
        raise InstoreError(
            f"ROOT could not create {path}",
            "check the directory exists and is writable, and the disk is not full",
        )
    return int(zip_bytes)


def events_for_size(spec: FileSpec) -> int:
    """Events needed for ``spec.size_mb``, from the compressed size of a small sample."""
    if spec.n_events is not None:
        return spec.n_events
    with tempfile.TemporaryDirectory(prefix="instore-probe-") as tmp:
        zip_bytes = _fill(Path(tmp) / "probe.root", spec, _PROBE_EVENTS, int(spec.cluster_mb * 1e6))
    assert spec.size_mb is not None
    return max(1, round(spec.size_mb * 1e6 / (zip_bytes / _PROBE_EVENTS)))


def generate_file(spec: FileSpec, out_dir: Path, n_events: int | None = None) -> Path:
    """Write one file; returns its path. ``n_events`` skips the size probe when known."""
    out_dir.mkdir(parents=True, exist_ok=True)
    n = n_events if n_events is not None else events_for_size(spec)
    target = out_dir / spec.filename
    partial = target.with_suffix(".partial.root")
    cluster_bytes = int(spec.cluster_mb * 1e6)
    try:
        if spec.layout == "unordered":
            _fill(partial, spec, n, 0)
        else:
            with tempfile.TemporaryDirectory(prefix="instore-fill-", dir=out_dir) as tmp:
                source = Path(tmp) / "clustered.root"
                _fill(source, spec, n, cluster_bytes)
                cloned = declare("generate").fast_clone(
                    str(source), str(partial), TREE_NAME, _SORT[spec.layout], spec.compression
                )
                if cloned != n:
                    raise InstoreError(
                        f"fast clone of {source} into {partial} failed (code {cloned})",
                        "check free disk space in the output directory",
                    )
        partial.replace(target)  # a file under its final name is always complete
    finally:
        partial.unlink(missing_ok=True)
    return target


def generate_files(
    out_dir: Path,
    layouts: Iterable[str] = LAYOUTS,
    replicas: int = 1,
    seed: int = 1,
    size_mb: float | None = None,
    n_events: int | None = None,
    cluster_mb: float = 8.0,
    compression: int = 101,
) -> dict[tuple[str, int], Path]:
    """Write every layout x replica; the event count is probed once and shared by all."""
    specs = [
        FileSpec(layout, seed, r, n_events, size_mb, cluster_mb, compression)
        for r in range(replicas)
        for layout in layouts
    ]
    if not specs:
        raise InstoreError("nothing to generate", "give at least one layout and one replica")
    n = events_for_size(specs[0])
    written: dict[tuple[str, int], Path] = {}
    for i, spec in enumerate(specs, 1):
        log.info("[%d/%d] writing %s (%d events)", i, len(specs), spec.filename, n)
        written[(spec.layout, spec.replica)] = generate_file(spec, out_dir, n_events=n)
    return written

"""Write the same events in the three layouts of the study.

- ``unordered``: ``SetAutoFlush(0)`` and per-branch basket sizes that differ, so baskets land
  in the file interleaved as they filled (pre-ROOT-5.26 ATLAS AODs).
- ``by-branch``: the clustered fill fast-cloned with ``SortBasketsByBranch``.
- ``ordered``: the clustered fill (autoflush) fast-cloned with ``SortBasketsByEntry``.

The same events as RNTuple (issue 14), written by ``RNTupleWriter`` from the same C++ fill loop,
with the same field names (collections as ``std::vector`` fields, fixed arrays as ``std::array``)
and the same compression setting, so sizes and reads compare:

- ``rntuple``: ROOT's default write options (clusters of ~128 MiB compressed, pages up to 1 MiB).
- ``rntuple-small``: small clusters and pages, the many-small-reads case the unordered TTree
  plays; both knobs are options (``--rntuple-cluster-mb``, ``--rntuple-page-kb``).

All layouts of one replica come from the same seed, so event values are identical; ordered and
by-branch hold the very same baskets, placed differently.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from instore import __version__
from instore.errors import InstoreError
from instore.generate import like as like_files
from instore.generate.template import load_template
from instore.rootenv import declare, root, root_version
from instore.study.files import replica_name

log = logging.getLogger(__name__)

TTREE_LAYOUTS: tuple[str, ...] = ("unordered", "by-branch", "ordered")
RNTUPLE_LAYOUTS: tuple[str, ...] = ("rntuple", "rntuple-small", "rntuple-matched")
LAYOUTS: tuple[str, ...] = TTREE_LAYOUTS + RNTUPLE_LAYOUTS
DEFAULT_LAYOUTS = TTREE_LAYOUTS  # the study's files; RNTuple ones only when asked for
TREE_NAME = "events"  # the RNTuple is named as the tree, so a reader finds it the same way
# Per-layout RNTuple knobs in MB / kB; None = ROOT's default RNTupleWriteOptions.
# rntuple-matched: clusters as large as the TTree's (cluster_mb), for a comparison at equal
# cluster sizes.
RNTUPLE_DEFAULTS: dict[str, tuple[float | None, float | None]] = {
    "rntuple": (None, None),
    "rntuple-small": (1.0, 8.0),
    "rntuple-matched": (None, None),
}
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
    rntuple_cluster_mb: float | None = None  # None: the layout's default (RNTUPLE_DEFAULTS)
    rntuple_page_kb: float | None = None
    like: str | None = None  # a template (name, JSON or ROOT file): its schema, not ours
    fileset: str = ""  # the file set's name, prefixed to file names ("" = the study's own)

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
        for value, flag in (
            (self.rntuple_cluster_mb, "--rntuple-cluster-mb"),
            (self.rntuple_page_kb, "--rntuple-page-kb"),
        ):
            if value is not None and value <= 0:
                raise InstoreError(
                    "RNTuple cluster and page sizes must be positive", f"give {flag} greater than 0"
                )

    @property
    def is_rntuple(self) -> bool:
        return self.layout in RNTUPLE_LAYOUTS

    @property
    def rntuple_sizes(self) -> tuple[int, int]:
        """(approximate compressed cluster bytes, maximum uncompressed page bytes); 0 = ROOT's."""
        cluster_mb, page_kb = RNTUPLE_DEFAULTS.get(self.layout, (None, None))
        if self.layout == "rntuple-matched":
            cluster_mb = self.cluster_mb
        cluster_mb = self.rntuple_cluster_mb if self.rntuple_cluster_mb is not None else cluster_mb
        page_kb = self.rntuple_page_kb if self.rntuple_page_kb is not None else page_kb
        return (int(cluster_mb * 1e6) if cluster_mb else 0, int(page_kb * 1024) if page_kb else 0)

    @property
    def replica_seed(self) -> int:
        """Distinct per replica (concurrent jobs read different files), equal across layouts."""
        return self.seed * 1_000_003 + self.replica

    @property
    def filename(self) -> str:
        return replica_name(self.layout, self.replica, self.fileset)


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


def rntuple_write_options(spec: FileSpec) -> dict[str, int]:
    """The write options the RNTuple gets, ROOT's defaults filled in (recorded in the file)."""
    cluster, page = spec.rntuple_sizes
    defaults = root().ROOT.RNTupleWriteOptions()
    cluster = cluster or int(defaults.GetApproxZippedClusterSize())
    return {
        "compression": spec.compression,
        "approx_zipped_cluster_size": cluster,
        "max_unzipped_cluster_size": (
            10 * cluster if spec.rntuple_sizes[0] else int(defaults.GetMaxUnzippedClusterSize())
        ),
        "initial_unzipped_page_size": min(256, page)
        if page
        else int(defaults.GetInitialUnzippedPageSize()),
        "max_unzipped_page_size": page or int(defaults.GetMaxUnzippedPageSize()),
    }


def _fill_rntuple(path: Path, spec: FileSpec, n_events: int) -> None:
    options = rntuple_write_options(spec)
    meta = json.dumps(
        {
            **asdict(spec),
            "n_events": n_events,
            "format": "rntuple",
            "write_options": options,
            "instore": __version__,
            "root": root_version(),
        }
    )
    cpp = declare("generate")
    cluster, page = spec.rntuple_sizes
    # ?reproducible: fixed UUID, dates and name in the TFile's records, so the same seed writes
    # the same pages at the same offsets wherever the file is written; only the write time
    # stamped in the RNTuple's own keys (RBlob) still differs between runs.
    url = f"{path}?reproducible={spec.filename}"
    written = cpp.fill_rntuple(
        url, TREE_NAME, n_events, spec.replica_seed, cluster, page, spec.compression, meta
    )
    if written != n_events:
        raise InstoreError(
            f"ROOT could not write the RNTuple {path} ({cpp.rntuple_error()})",
            "check the directory exists and is writable, and the disk is not full",
        )


def events_for_size(spec: FileSpec) -> int:
    """Events needed for ``spec.size_mb``, from the compressed size of a small sample."""
    if spec.n_events is not None:
        return spec.n_events
    if spec.like:
        per_event = like_files.bytes_per_event(load_template(spec.like), spec.replica_seed,
                                         spec.compression, int(spec.cluster_mb * 1e6), _PROBE_EVENTS)  # fmt: skip
        assert spec.size_mb is not None
        return max(1, round(spec.size_mb * 1e6 / per_event))
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
        if spec.like:
            like_files.write_like(spec, load_template(spec.like), partial, n, _SORT)
        elif spec.is_rntuple:
            _fill_rntuple(partial, spec, n)
        elif spec.layout == "unordered":
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
    layouts: Iterable[str] = DEFAULT_LAYOUTS,
    replicas: int = 1,
    seed: int = 1,
    size_mb: float | None = None,
    n_events: int | None = None,
    cluster_mb: float = 8.0,
    compression: int | None = None,
    rntuple_cluster_mb: float | None = None,
    rntuple_page_kb: float | None = None,
    like: str | None = None,
    fileset: str = "",
    only_replica: int | None = None,
) -> dict[tuple[str, int], Path]:
    """Write every layout x replica; the event count is probed once and shared by all.

    ``compression`` None: the template's (``like``), else ROOT's TFile default (101).
    ``only_replica``: write that replica only (a workflow writes a set's files in parallel);
    the event count is probed with replica 0's seed, so it is the same either way."""
    if compression is None:
        compression = load_template(like).compression if like else 101
    specs = [
        FileSpec(
            layout,
            seed,
            r,
            n_events,
            size_mb,
            cluster_mb,
            compression,
            rntuple_cluster_mb,
            rntuple_page_kb,
            like,
            fileset,
        )
        for r in (range(replicas) if only_replica is None else [only_replica])
        for layout in layouts
    ]
    if not specs:
        raise InstoreError("nothing to generate", "give at least one layout and one replica")
    n = events_for_size(dataclasses.replace(specs[0], replica=0))
    written: dict[tuple[str, int], Path] = {}
    for i, spec in enumerate(specs, 1):
        log.info("[%d/%d] writing %s (%d events)", i, len(specs), spec.filename, n)
        written[(spec.layout, spec.replica)] = generate_file(spec, out_dir, n_events=n)
    return written

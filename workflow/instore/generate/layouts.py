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
from dataclasses import asdict
from pathlib import Path

from instore import __version__
from instore.errors import InstoreError
from instore.generate import like as like_files
from instore.generate.spec import FileSpec, rntuple_write_options
from instore.generate.template import load_template
from instore.rootenv import declare, root_version
from instore.vocabulary import TTREE_LAYOUTS

log = logging.getLogger(__name__)

DEFAULT_LAYOUTS = TTREE_LAYOUTS  # the study's files; RNTuple ones only when asked for
TREE_NAME = "events"  # the RNTuple is named as the tree, so a reader finds it the same way
_SORT = {"by-branch": "SortBasketsByBranch", "ordered": "SortBasketsByEntry"}
_PROBE_EVENTS = 2000


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

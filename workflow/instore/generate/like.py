"""Write files like a template's: its tree's branches, filled with drawn values, in every layout.

The TTree layouts are made as the study's own files are (``instore.generate.layouts``): the
unordered one filled with ``SetAutoFlush(0)`` and differing basket sizes, the clustered fill
fast-cloned sorted by entry (ordered) or by branch (by-branch). The RNTuple layouts are written
by ``RNTupleWriter`` from the same drawn columns, one field per branch with the branch's name
(collections as ``std::vector`` fields beside their counters, as the study's own RNTuples), so
a pattern naming branches reads the same data in both formats. ROOT's ``RNTupleImporter`` would
instead group a collection's branches into an anonymous ``_collectionN`` record.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict
from pathlib import Path

from instore import __version__
from instore.errors import InstoreError
from instore.generate.spec import FileSpec, rntuple_write_options
from instore.generate.template import Template
from instore.generate.values import chunks, max_values
from instore.rootenv import declare, root_version

DISK_FULL = "check the output directory exists, is writable and has room"


def _meta(
    template: Template, spec_fields: dict[str, object], n_events: int, **extra: object
) -> str:
    return json.dumps(
        {
            **spec_fields,
            "n_events": n_events,
            "like": template.name,
            "template_source": template.source,
            **extra,
            "instore": __version__,
            "root": root_version(),
        }
    )


def fill_tree(
    path: Path,
    template: Template,
    n_events: int,
    seed: int,
    cluster_bytes: int,
    compression: int,
    meta_json: str,
) -> int:
    """Fill ``n_events`` drawn events into a new TTree; returns its compressed bytes.

    cluster_bytes > 0: autoflush clusters; 0: the unordered layout's fill."""
    cpp = declare("generate_like")
    writer = cpp.LikeWriter()
    names = [b.name for b in template.branches]
    index = {n: i for i, n in enumerate(names)}
    limits = max_values(template)
    ok = writer.open(
        str(path),
        template.tree_name,
        compression,
        cluster_bytes,
        names,
        [b.leaflist for b in template.branches],
        [index[b.counter] if b.counter else -1 for b in template.branches],
        [b.width for b in template.branches],
        [b.dtype.itemsize for b in template.branches],
        [limits[b.name] for b in template.branches],
    )
    if not ok:
        raise InstoreError(f"ROOT could not create {path}: {writer.error}", DISK_FULL)
    for n, columns in chunks(template, n_events, seed):
        if not writer.fill(n, [c.ctypes.data for c in columns]):
            raise InstoreError(f"writing {path} failed: {writer.error}", DISK_FULL)
    zip_bytes = int(writer.close(meta_json))
    if zip_bytes < 0:
        raise InstoreError(f"writing {path} failed: {writer.error}", DISK_FULL)
    return zip_bytes


def fill_ntuple(
    path: Path, template: Template, n_events: int, seed: int, spec: FileSpec, meta_json: str
) -> None:
    """The same drawn events as an RNTuple named like the tree."""
    cpp = declare("generate_like")
    writer = cpp.LikeNTupleWriter()
    index = {b.name: i for i, b in enumerate(template.branches)}
    cluster, page = spec.rntuple_sizes
    # ?reproducible: fixed UUID, dates and name in the TFile's records (as the study's own)
    ok = writer.open(
        f"{path}?reproducible={spec.filename}",
        template.tree_name,
        spec.compression,
        cluster,
        page,
        [b.name for b in template.branches],
        "".join(b.leaf for b in template.branches),
        [index[b.counter] if b.counter else -1 for b in template.branches],
        [b.width for b in template.branches],
        [b.dtype.itemsize for b in template.branches],
    )
    if not ok:
        raise InstoreError(f"ROOT could not create the RNTuple {path}: {writer.error}", DISK_FULL)
    for n, columns in chunks(template, n_events, seed):
        if not writer.fill(n, [c.ctypes.data for c in columns]):
            raise InstoreError(f"writing {path} failed: {writer.error}", DISK_FULL)
    if writer.close(meta_json) != n_events:
        raise InstoreError(f"writing {path} failed: {writer.error}", DISK_FULL)


def write_like(
    spec: FileSpec, template: Template, target: Path, n_events: int, sort: dict[str, str]
) -> None:
    """One layout of one replica written to ``target``."""
    fields = asdict(spec)
    compression = spec.compression
    cluster_bytes = int(spec.cluster_mb * 1e6)
    if spec.is_rntuple:
        meta = _meta(
            template, fields, n_events, format="rntuple", write_options=rntuple_write_options(spec)
        )
        fill_ntuple(target, template, n_events, spec.replica_seed, spec, meta)
        return
    if spec.layout == "unordered":
        fill_tree(target, template, n_events, spec.replica_seed, 0, compression,
                  _meta(template, fields, n_events))  # fmt: skip
        return
    with tempfile.TemporaryDirectory(prefix="instore-fill-", dir=target.parent) as tmp:
        source = Path(tmp) / "clustered.root"
        fill_tree(source, template, n_events, spec.replica_seed, cluster_bytes, compression,
                  _meta(template, fields, n_events))  # fmt: skip
        cloned = declare("generate").fast_clone(str(source), str(target), template.tree_name,
                                                sort[spec.layout], compression)  # fmt: skip
        if cloned != n_events:
            raise InstoreError(f"fast clone of {source} into {target} failed (code {cloned})",
                               DISK_FULL)  # fmt: skip


def bytes_per_event(
    template: Template, seed: int, compression: int, cluster_bytes: int, events: int
) -> float:
    """Compressed bytes per event of drawn events, from a probe file of ``events`` events."""
    with tempfile.TemporaryDirectory(prefix="instore-probe-") as tmp:
        zip_bytes = fill_tree(Path(tmp) / "probe.root", template, events, seed, cluster_bytes,
                              compression, "{}")  # fmt: skip
    return zip_bytes / events

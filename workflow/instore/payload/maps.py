"""Where a file's data sits: a TTree's basket map and an RNTuple's page map, one row per basket
(or page) on disk, in one frame shape (``COLUMNS``).

Both engines measure "bytes needed" with these frames and ``instore inspect`` draws its figures
from them. This module imports neither ``instore.payload``'s other modules nor
``instore.inspect``, so either can import it without a cycle.

An RNTuple's page map has the basket map's columns, so the disorder figures and the access map
read it unchanged: ``branch`` is the top-level field a page belongs to (the name a reader
selects), ``basket`` the page's index within its column over the whole file, ``offset`` and
``compressed_bytes`` its bytes on storage (the locator's, plus the page checksum a reader reads
with it). ``entry_start``/``entry_stop`` are its cluster's entries: an RNTuple reader loads a
cluster's pages of the selected columns together (the cluster is the unit of reading, as
TTreeCache's cluster is), and a page of a collection's values has no entry range of its own
without reading the offsets. Extra columns say which cluster, column and elements a page holds;
``shared`` marks a page whose bytes an earlier row already lists (ROOT's same-page merging
stores identical pages once, e.g. the offsets of one collection's fields; a projected field's
alias column reads the pages of another field's column).

A TTree basket that was never written as a key of its own (ROOT writes a branch's unfinished
basket inside the TTree's record, ``TBranch::fBaskets``, when the tree is written before the
basket is full: most baskets of a small CMS NanoAOD file are such "embedded" baskets) has
``embedded`` True. Its ``offset`` and ``compressed_bytes`` are those of the TTree's key: the only
way to get its bytes from storage is to read that key (compressed as a whole), so that key is
what a reader needs for it. Every embedded basket of a tree lists the same byte range, which
a reader fetches once, and which ``bytes_needed`` and the access map count once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

COLUMNS = [
    "branch",
    "branch_index",
    "basket",
    "entry_start",
    "entry_stop",
    "offset",
    "compressed_bytes",
    "embedded",
]
PAGE_COLUMNS = [
    *COLUMNS,
    "cluster",
    "page",
    "column",
    "column_index",
    "column_type",
    "element_start",
    "elements",
    "shared",
    "format",
]
RNTUPLE_CLASS = "ROOT::RNTuple"
CHECKSUM_BYTES = 8  # a checksummed page is stored with its xxhash3 checksum behind it


def basket_frame(
    names: Sequence[str],
    index: Iterable[int],
    basket: Iterable[int],
    entry_start: Iterable[int],
    entry_stop: Iterable[int],
    offset: Iterable[int],
    compressed_bytes: Iterable[int],
    embedded: Iterable[bool] | None = None,
) -> pd.DataFrame:
    """The ``COLUMNS`` frame from per-row sequences (ROOT's row vectors): ``index`` indexes
    ``names`` (the branch, or an RNTuple's top-level field), ``basket`` numbers the basket (page);
    ``embedded`` marks baskets stored in the TTree's own record (None: none is)."""
    indices = list(index)
    offsets = list(offset)
    flags = [False] * len(offsets) if embedded is None else [bool(e) for e in embedded]
    values = ([names[i] for i in indices], indices, basket, entry_start, entry_stop, offsets,
              compressed_bytes, flags)  # fmt: skip
    return pd.DataFrame({c: list(v) for c, v in zip(COLUMNS, values, strict=True)})


# --- TTree (uproot) ---------------------------------------------------------------------------


def tree_key(tree: Any) -> tuple[int, int]:
    """(offset, bytes on storage) of the key uproot read the TTree from: where its embedded
    baskets are fetched from."""
    key = tree.parent  # uproot keeps a TTree attached to its key
    return int(key.fSeekKey), int(key.fNbytes)


def _branch_rows(name: str, index: int, branch: Any, key: tuple[int, int]) -> list[tuple[Any, ...]]:
    """The branch's baskets in its own keys (fBasketSeek/fBasketBytes), then those embedded in
    the TTree's record (``branch.embedded_baskets``: ``num_baskets`` counts both), as rows of
    the top-level branch ``name`` (number ``index``)."""
    embedded = branch.embedded_baskets
    n = branch.num_baskets - len(embedded)
    entries = [int(e) for e in np.asarray(branch.member("fBasketEntry"))[: n + 1]] if n else [0]
    for basket in embedded:  # they follow the normal baskets, in entry order
        entries.append(entries[-1] + int(basket.num_entries))
    seeks = np.asarray(branch.member("fBasketSeek"))[:n] if n else []
    sizes = np.asarray(branch.member("fBasketBytes"))[:n] if n else []
    where = [(int(s), int(b), False) for s, b in zip(seeks, sizes, strict=True)]
    where += [(*key, True)] * len(embedded)
    return [(name, index, i, entries[i], entries[i + 1], *stored) for i, stored in enumerate(where)]


def basket_map(tree: Any) -> pd.DataFrame:
    """One row per basket, written to disk in its own key or embedded in the TTree's record
    (see the module's docstring for what an embedded basket's row holds). A split branch's
    sub-branches' baskets are rows of their top-level branch: selecting it reads them.

    Given an RNTuple, its page map (``page_map``).
    """
    if is_rntuple(tree):
        return page_map(tree)
    key = tree_key(tree)
    rows: list[tuple[Any, ...]] = []
    for index, top in enumerate(tree.branches):
        for branch in [top, *top.itervalues(recursive=True)]:
            rows.extend(_branch_rows(top.name, index, branch, key))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["format"] = "ttree"
    frame.attrs["format"] = "ttree"
    return frame


# --- RNTuple (uproot) -------------------------------------------------------------------------


def is_rntuple(obj: Any) -> bool:
    """True for uproot's RNTuple model (a TTree has branches instead)."""
    return getattr(obj, "classname", "") == RNTUPLE_CLASS


def _column_type_names() -> dict[int, str]:
    import uproot

    return {v: k for k, v in uproot.const.rntuple_col_type_to_num_dict.items()}


def _field_paths(ntuple: Any) -> tuple[list[str], list[int]]:
    """Each field's dotted path and the index of its top-level field (a top field is its own
    parent)."""
    records = ntuple.field_records
    paths: list[str] = []
    tops: list[int] = []
    for i, rec in enumerate(records):
        parent = rec.parent_field_id
        if parent == i:
            paths.append(rec.field_name)
            tops.append(i)
        else:  # parents precede their children in the header
            paths.append(f"{paths[parent]}.{rec.field_name}")
            tops.append(tops[parent])
    return paths, tops


def _columns(ntuple: Any) -> list[tuple[str, str, int, str]]:
    """Per physical column: (column path, top-level field, top-level index, column type)."""
    paths, tops = _field_paths(ntuple)
    names = _column_type_names()
    top_order = {top: k for k, top in enumerate(dict.fromkeys(tops))}
    out = []
    for col in ntuple.column_records:
        fid = col.field_id
        top = tops[fid]
        suffix = f"#{col.repr_idx}" if col.repr_idx else ""
        out.append(
            (
                paths[fid] + suffix,
                paths[top],
                top_order[top],
                names.get(col.type, str(col.type)),
            )
        )
    return out


def _page_rows(ntuple: Any) -> Iterator[tuple[Any, ...]]:
    columns = _columns(ntuple)
    next_page = [0] * len(columns)
    for cluster, (summary, links) in enumerate(
        zip(ntuple.cluster_summaries, ntuple.page_link_list, strict=True)
    ):
        first = int(summary.num_first_entry)
        stop = first + int(summary.num_entries)
        for ci, pages in enumerate(links):
            if ci >= len(columns) or pages.suppressed:
                continue
            path, field, field_index, ctype = columns[ci]
            element = int(pages.element_offset)
            for page, desc in enumerate(pages.pages):
                n = abs(int(desc.num_elements))
                loc = desc.locator
                yield (
                    field,
                    field_index,
                    next_page[ci],
                    first,
                    stop,
                    int(loc.offset),
                    int(loc.num_bytes) + (CHECKSUM_BYTES if desc.has_checksum else 0),
                    False,  # a page is never embedded
                    cluster,
                    page,
                    path,
                    ci,
                    ctype,
                    element,
                    n,
                    False,
                    "rntuple",
                )
                next_page[ci] += 1
                element += n


def _projected_rows(ntuple: Any, frame: pd.DataFrame) -> pd.DataFrame:
    """The pages a projected field reads, as its own rows: an alias column (e.g. the
    RNTupleImporter's ``nJet``, the cardinality of ``_collection0``) has no pages of its own, it
    reads those of the physical column it names (as ROOT's descriptor lists them for it)."""
    paths, tops = _field_paths(ntuple)
    top_order = {top: k for k, top in enumerate(dict.fromkeys(tops))}
    parts = []
    for alias in ntuple.alias_column_records:
        pages = frame[frame["column_index"] == alias.physical_id]
        if len(pages):
            top = tops[alias.field_id]
            parts.append(
                pages.assign(
                    branch=paths[top], branch_index=top_order[top], column=paths[alias.field_id]
                )
            )
    return pd.concat(parts, ignore_index=True) if parts else frame.iloc[:0]


def page_map(ntuple: Any) -> pd.DataFrame:
    """One row per page written to disk, in cluster then column order; then the pages projected
    fields read, again (``shared``: the bytes are listed already)."""
    frame = pd.DataFrame(list(_page_rows(ntuple)), columns=PAGE_COLUMNS)
    projected = _projected_rows(ntuple, frame)
    if len(projected):
        frame = pd.concat([frame, projected], ignore_index=True)
    frame["shared"] = frame.duplicated(["offset", "compressed_bytes"])
    frame.attrs["format"] = "rntuple"
    return frame


def rntuple_clusters(ntuple: Any) -> int:
    """Number of clusters listed in the footer's page lists."""
    return max(1, len(ntuple.cluster_summaries))
